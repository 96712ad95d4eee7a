"""Invalid instances made from valid ones by small mutations, for every corpus schema.

A mutation drops a key of an object, adds an unknown key to one, gives a value
another type, or replaces a string with one no schema lists. A mutated instance
is kept only when ``jsonschema`` rejects it and every error it reports is one a
token-level engine can see while writing the text (:data:`STRUCTURAL`: types,
required and unknown keys, enums and consts, and ``anyOf``/``oneOf`` when no
branch fits for such reasons), so that an engine that enforces the schema's
structure must refuse it somewhere before the end of its text.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

#: error keywords that any engine enforcing the schema's structure detects while the text is written
STRUCTURAL = frozenset(
    {"type", "required", "additionalProperties", "unevaluatedProperties", "enum", "const", "false"}
)

Path = tuple[Any, ...]


def _nodes(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def _set(root: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return root


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return "12"
    if isinstance(value, str):
        return 12345
    if value is None:
        return 0
    return "text"


def _drop(root: Any, rng: random.Random) -> Any:
    objects = [(p, v) for p, v in _nodes(root) if isinstance(v, dict) and v]
    if not objects:
        return None
    path, obj = rng.choice(objects)
    key = rng.choice(list(obj))
    return _set(root, path, {k: v for k, v in obj.items() if k != key})


def _add(root: Any, rng: random.Random) -> Any:
    objects = [(p, v) for p, v in _nodes(root) if isinstance(v, dict)]
    if not objects:
        return None
    path, obj = rng.choice(objects)
    return _set(root, path, {**obj, "unexpected_property_zq": "x"})


def _retype(root: Any, rng: random.Random) -> Any:
    path, value = rng.choice(_nodes(root))
    return _set(root, path, _retyped(value))


def _unlisted(root: Any, rng: random.Random) -> Any:
    strings = [(p, v) for p, v in _nodes(root) if isinstance(v, str)]
    if not strings:
        return None
    path, _ = rng.choice(strings)
    return _set(root, path, "unlisted_value_zq")


_KINDS: tuple[Callable[[Any, random.Random], Any], ...] = (_drop, _add, _retype, _unlisted)


def structural(error: Any) -> bool:
    """Whether a ``jsonschema`` error (and, for ``anyOf``/``oneOf``, every branch's) is in :data:`STRUCTURAL`."""
    if error.validator in ("anyOf", "oneOf"):
        return bool(error.context) and all(structural(e) for e in error.context)
    if error.validator == "$ref":
        return False
    return error.validator in STRUCTURAL


def invalid_instances(validator: Any, examples: list[Any], count: int, seed: int, attempts: int = 80) -> list[Any]:
    """Up to ``count`` distinct structurally invalid mutations of ``examples``, deterministic for ``seed``."""
    rng = random.Random(seed)
    found: list[Any] = []
    seen: set[str] = set()
    for attempt in range(attempts):
        kind = _KINDS[(attempt + seed) % len(_KINDS)]
        base = examples[attempt % len(examples)]
        mutated = kind(copy.deepcopy(base), rng)
        if mutated is None:
            continue
        key = json.dumps(mutated, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        errors = list(validator.iter_errors(mutated))
        if errors and all(structural(e) for e in errors):
            found.append(mutated)
            if len(found) == count:
                break
    return found
