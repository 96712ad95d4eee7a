"""What the JSON Schema stages share: JSON value kinds, keyword sets, keyword value checks.

Also :class:`Lowering`, what the merged-conjunction and checking modules
(:mod:`._norm`, :mod:`._check`) may ask of the lowering that drives them
(:class:`._lower.Lowerer` has all of it), so that neither imports the other.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import SchemaError
from ...ir.grammar import Unordered
from ...ir.nodes import Node, RuleRef
from ...limits import Limits

if TYPE_CHECKING:
    from ._lexical import Layout
    from ._load import Loc, Registry

__all__ = [
    "ALL_TYPES",
    "ANNOTATIONS",
    "TYPES",
    "UNSUPPORTED",
    "Lowering",
    "ckey",
]

TYPES = ("null", "boolean", "object", "array", "number", "string", "integer")
ALL_TYPES = frozenset(TYPES)

#: keywords that never constrain a value
ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$comment",
        "$defs",
        "definitions",
        "$vocabulary",
        "title",
        "description",
        "examples",
        "example",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
        "then",
        "else",
        "minContains",
        "maxContains",
        "additionalItems",
        "strict",
        "name",
    }
)
#: validation keywords this compiler knows but does not enforce
UNSUPPORTED = {
    "$dynamicRef": "is not supported (dynamic scopes)",
    "$recursiveRef": "is not supported (dynamic scopes)",
    "uniqueItems": "is not enforced",
}



class _Undecided(Exception):
    """The value checker met a keyword it cannot evaluate."""


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def ckey(v: Any) -> Any:
    """A key under which JSON values are equal iff JSON Schema calls them equal."""
    if v is None or isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return ("f", repr(v))
        return ("n", Fraction(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(ckey(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, ckey(x)) for k, x in v.items()))
    return ("?", repr(v))


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _has_type(v: Any, types: frozenset[str]) -> bool:
    t = _type_of(v)
    return t in types or (t == "integer" and "number" in types)


def _parse_types(v: Any, pointer: str) -> frozenset[str]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items and not isinstance(v, list):
        raise SchemaError("type must be a type name or an array of them", pointer)
    out = set()
    for t in items:
        if t not in ALL_TYPES:
            raise SchemaError(f"unknown type {t!r} (use one of {', '.join(TYPES)})", pointer)
        out.add(t)
    return frozenset(out)


def _nonneg_int(v: Any, pointer: str, keyword: str) -> int:
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or v < 0
        or (isinstance(v, float) and not v.is_integer())
    ):
        raise SchemaError(f"{keyword} must be a non-negative integer, not {v!r}", pointer)
    return int(v)


def _number(v: Any, pointer: str, keyword: str) -> int | float:
    if not _is_num(v) or (isinstance(v, float) and not math.isfinite(v)):
        raise SchemaError(f"{keyword} must be a number, not {v!r}", pointer)
    return v


class Lowering(Protocol):
    """The lowering of one schema document, as the conjunction and checking modules use it."""

    reg: Registry
    limits: Limits
    property_order: str
    closed_objects: bool
    relax_bounds: int | None
    unordered: dict[str, Unordered]

    def add_rule(self, body: Node) -> RuleRef:
        """A new rule of ``body``, as a reference."""
        ...

    def lower(self, locs: list[Loc], layout: Layout, depth: int) -> Node:
        """IR for the values that satisfy every schema in ``locs``."""
        ...

    def expand(self, locs: list[Loc]) -> tuple[list[Loc], bool, bool]:
        """``$ref`` and ``allOf`` expanded."""
        ...

    def negate(self, loc: Loc, level: int = 0) -> list[list[Loc]] | None:
        """The negation of ``loc`` as a disjunction of conjunctions."""
        ...

    def evaluated(
        self, loc: Loc, what: str, names: dict[str, None], patterns: dict[str, None], level: int
    ) -> bool:
        """What ``loc`` evaluates, for the ``unevaluated*`` keywords."""
        ...

    def summary(self, locs: list[Loc]) -> Any:
        """The merged constraints of ``locs`` without lowering them (None: not mergeable)."""
        ...

    def check(self, value: Any, locs: list[Loc], level: int = 0) -> bool:
        """Whether ``value`` satisfies every schema in ``locs``."""
        ...

    def dfa_accepts(self, node: Node, data: bytes) -> bool:
        """Whether the regular ``node`` matches ``data``."""
        ...

    def pattern_node(self, pattern: str, pointer: str) -> Node | None:
        """The string contents ``pattern`` matches (None: not enforced)."""
        ...

    def pattern_matches(self, pattern: str, text: str, pointer: str) -> bool:
        """Whether ``text`` contains a match of ``pattern``."""
        ...

    def unsupported(self, pointer: str, keyword: str, why: str) -> None:
        """Raise (strict) or report a keyword that is not enforced exactly."""
        ...

    def note(self, text: str) -> None:
        """Report ``text`` in ``unenforced``."""
        ...
