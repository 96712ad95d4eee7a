"""Writes the corpus files (``<group>.jsonl``) from the hand-written schemas in ``authoring/``.

Usage::

    python benchmarks/data/json_schemas/build.py          # rewrite the .jsonl files
    python benchmarks/data/json_schemas/build.py --check  # only check that they are up to date

Each line of ``<group>.jsonl`` is one schema::

    {"name": ..., "group": ..., "description": ..., "schema": {...}, "examples": [{...}, ...],
     "invalid_examples": [{...}, ...]}

and the records of the ``realworld`` group also have ``"source"`` (the package and
file each schema comes from). The hand-written groups' examples are drawn by a seeded
generator (``authoring/values.py``); the ``realworld`` group's schemas and examples are
read from ``authoring/realworld/*.json`` (written by ``import_realworld.py``), with the
keys of every object put in schema order (``authoring/order.py``), as in the hand-written
groups. Every
example must pass ``jsonschema.Draft202012Validator`` with format checking (``uri`` is
checked here with a small pattern, since jsonschema needs an extra package for it).
``invalid_examples`` are the upstream invalid instances (``realworld``) followed by
seeded mutations of the valid ones (``authoring/invalid.py``), 2 per schema in all,
each rejected by the same validator for structural reasons only.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from authoring import GROUPS  # noqa: E402
from authoring.invalid import invalid_instances  # noqa: E402
from authoring.order import Orderer  # noqa: E402
from authoring.values import Generator  # noqa: E402

#: the imported public schemas, in file order
REALWORLD_SOURCES = ("kubernetes", "ci_config", "pyproject", "github_webhooks")
#: invalid instances per schema
INVALID_PER_SCHEMA = 2

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


def validator(schema: dict[str, Any]) -> Any:
    """A draft 2020-12 validator that checks the corpus's formats (``uri`` included)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker()
    checker.checks("uri")(lambda value: not isinstance(value, str) or _URI.match(value) is not None)
    return Draft202012Validator(schema, format_checker=checker)


def check_refs(schema: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless every ``$ref`` of ``schema`` is a JSON pointer into it that resolves."""

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if not ref.startswith("#"):
                    raise ValueError(f"$ref {ref!r} is not local")
                target: Any = schema
                for part in ref[1:].split("/")[1:]:
                    part = part.replace("~1", "/").replace("~0", "~")
                    if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                        target = target[int(part)]
                    elif isinstance(target, dict) and part in target:
                        target = target[part]
                    else:
                        raise ValueError(f"$ref {ref!r} points to nothing")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def examples_for(schema: dict[str, Any], count: int, seed: int) -> list[Any]:
    """``count`` distinct valid instances (raises if they cannot be drawn)."""
    v = validator(schema)
    found: list[Any] = []
    seen: set[str] = set()
    for attempt in range(400):
        rng = random.Random(seed * 1000 + attempt)
        instance = Generator(schema, rng).value(schema)
        key = json.dumps(instance, sort_keys=True)
        if key in seen or not v.is_valid(instance):
            continue
        seen.add(key)
        found.append(instance)
        if len(found) == count:
            return found
    errors = [e.message for e in v.iter_errors(Generator(schema, random.Random(seed)).value(schema))]
    raise ValueError(f"could not draw {count} valid instances; last errors: {errors[:3]}")


def build() -> dict[str, str]:
    """The text of every ``<group>.jsonl`` file."""
    from jsonschema import Draft202012Validator

    files: dict[str, str] = {}
    names: set[str] = set()
    for index, corpus in enumerate(GROUPS):
        lines = []
        for i, entry in enumerate(corpus.entries):
            if entry.name in names:
                raise ValueError(f"duplicate schema name {entry.name!r}")
            names.add(entry.name)
            Draft202012Validator.check_schema(entry.schema)
            try:
                examples = examples_for(entry.schema, entry.examples, seed=index * 10_000 + i)
            except ValueError as exc:
                raise ValueError(f"{corpus.group}/{entry.name}: {exc}") from None
            record = {
                "name": entry.name,
                "group": entry.group,
                "description": entry.description,
                "schema": entry.schema,
                "examples": examples,
                "invalid_examples": invalid_instances(
                    validator(entry.schema), examples, INVALID_PER_SCHEMA, seed=index * 10_000 + i
                ),
            }
            lines.append(json.dumps(record, ensure_ascii=False))
        files[f"{corpus.group}.jsonl"] = "\n".join(lines) + "\n"
    files["realworld.jsonl"] = "\n".join(realworld_lines(names)) + "\n"
    return files


def realworld_lines(names: set[str]) -> list[str]:
    """The records of the ``realworld`` group, from ``authoring/realworld/<source>.json``."""
    from jsonschema import Draft202012Validator

    lines = []
    for source in REALWORLD_SOURCES:
        entries = json.loads((HERE / "authoring" / "realworld" / f"{source}.json").read_text(encoding="utf-8"))
        for entry in entries:
            name = entry["name"]
            if name in names:
                raise ValueError(f"duplicate schema name {name!r}")
            names.add(name)
            schema = entry["schema"]
            Draft202012Validator.check_schema(schema)
            check_refs(schema)
            v = validator(schema)
            orderer = Orderer(v)
            examples = [orderer.order(e) for e in entry["examples"]]
            for example in examples:
                if not v.is_valid(example):
                    raise ValueError(f"realworld/{name}: an example is not valid")
            upstream = [orderer.order(e) for e in entry["invalid_examples"] if not v.is_valid(e)][:INVALID_PER_SCHEMA]
            mutated = invalid_instances(
                v, examples, INVALID_PER_SCHEMA - len(upstream), seed=len(lines) + 70_000
            ) if len(upstream) < INVALID_PER_SCHEMA else []
            record = {
                "name": name,
                "group": "realworld",
                "description": entry["description"],
                "source": f"{entry['source']} ({entry['licence']})",
                "schema": schema,
                "examples": examples,
                "invalid_examples": upstream + mutated,
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args()
    files = build()
    stale = []
    for name, text in files.items():
        path = HERE / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    total = sum(text.count("\n") for text in files.values())
    if stale:
        print(f"out of date: {', '.join(stale)}", file=sys.stderr)
        return 1
    print(f"{total} schemas in {len(files)} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
