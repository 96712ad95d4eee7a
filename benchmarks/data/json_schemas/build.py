"""Writes the corpus files (``<group>.jsonl``) from the hand-written schemas in ``authoring/``.

Usage::

    python benchmarks/data/json_schemas/build.py          # rewrite the .jsonl files
    python benchmarks/data/json_schemas/build.py --check  # only check that they are up to date

Each line of ``<group>.jsonl`` is one schema::

    {"name": ..., "group": ..., "description": ..., "schema": {...}, "examples": [{...}, ...]}

The examples are drawn by a seeded generator (``authoring/values.py``) and must
pass ``jsonschema.Draft202012Validator`` with format checking (``uri`` is checked
here with a small pattern, since jsonschema needs an extra package for it).
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
from authoring.values import Generator  # noqa: E402

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


def validator(schema: dict[str, Any]) -> Any:
    """A draft 2020-12 validator that checks the corpus's formats (``uri`` included)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker()
    checker.checks("uri")(lambda value: not isinstance(value, str) or _URI.match(value) is not None)
    return Draft202012Validator(schema, format_checker=checker)


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
            }
            lines.append(json.dumps(record, ensure_ascii=False))
        files[f"{corpus.group}.jsonl"] = "\n".join(lines) + "\n"
    return files


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
