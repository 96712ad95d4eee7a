"""A compact notation for writing the corpus schemas by hand.

Every helper returns a plain JSON Schema (draft 2020-12) dictionary:

- ``S``, ``I``, ``N``, ``B``: string, integer, number, boolean, with the usual
  keywords as short arguments (``lo``/``hi`` for bounds, ``fmt`` for ``format``,
  ``ex`` for ``examples``, which the instance generator uses for patterns);
- ``E(*values)``: an enum (typed as string when every value is one); ``C(v)``: a const;
- ``A(items, lo, hi, unique)``: an array;
- ``O(props)``: an object; a property whose name ends with ``?`` is optional,
  every other one is required; ``extra=False`` (the default) closes the object
  (``additionalProperties: false``), ``extra=None`` leaves it open, and a schema
  there constrains the additional values (maps);
- ``null(s)``: ``type: [t, "null"]``; ``maybe(s)``: ``anyOf: [s, {"type": "null"}]``;
- ``ref(name)``: ``{"$ref": "#/$defs/<name>"}``.

``Corpus`` collects ``(name, schema, description, number of examples)`` per group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Schema = dict[str, Any]

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _put(d: Schema, **kw: Any) -> Schema:
    for k, v in kw.items():
        if v is not None:
            d[k] = v
    return d


def S(
    lo: int | None = None,
    hi: int | None = None,
    pattern: str | None = None,
    fmt: str | None = None,
    ex: list[str] | None = None,
    desc: str | None = None,
) -> Schema:
    """A string schema."""
    return _put(
        {"type": "string"},
        description=desc,
        minLength=lo,
        maxLength=hi,
        pattern=pattern,
        format=fmt,
        examples=ex,
    )


def I(  # noqa: E743 - short on purpose
    lo: int | None = None,
    hi: int | None = None,
    xlo: int | None = None,
    xhi: int | None = None,
    mult: int | None = None,
    desc: str | None = None,
) -> Schema:
    """An integer schema."""
    return _put(
        {"type": "integer"},
        description=desc,
        minimum=lo,
        maximum=hi,
        exclusiveMinimum=xlo,
        exclusiveMaximum=xhi,
        multipleOf=mult,
    )


def N(
    lo: float | None = None,
    hi: float | None = None,
    xlo: float | None = None,
    xhi: float | None = None,
    desc: str | None = None,
) -> Schema:
    """A number schema."""
    return _put(
        {"type": "number"},
        description=desc,
        minimum=lo,
        maximum=hi,
        exclusiveMinimum=xlo,
        exclusiveMaximum=xhi,
    )


def B(desc: str | None = None) -> Schema:
    """A boolean schema."""
    return _put({"type": "boolean"}, description=desc)


def E(*values: Any, desc: str | None = None) -> Schema:
    """An enum; typed ``string``/``integer`` when every value is of that type."""
    d: Schema = {}
    if all(isinstance(v, str) for v in values):
        d["type"] = "string"
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        d["type"] = "integer"
    _put(d, description=desc)
    d["enum"] = list(values)
    return d


def C(value: Any) -> Schema:
    """A const."""
    return {"const": value}


def A(
    items: Schema,
    lo: int | None = None,
    hi: int | None = None,
    unique: bool | None = None,
    desc: str | None = None,
) -> Schema:
    """An array schema."""
    return _put(
        {"type": "array"}, description=desc, items=items, minItems=lo, maxItems=hi, uniqueItems=unique
    )


def O(  # noqa: E741, E743 - short on purpose
    props: dict[str, Schema],
    extra: bool | Schema | None = False,
    desc: str | None = None,
    title: str | None = None,
    min_props: int | None = None,
    max_props: int | None = None,
) -> Schema:
    """An object; names ending with ``?`` are optional, the others required."""
    d: Schema = {"type": "object"}
    _put(d, title=title, description=desc)
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for name, sub in props.items():
        if name.endswith("?"):
            properties[name[:-1]] = sub
        else:
            properties[name] = sub
            required.append(name)
    if properties:
        d["properties"] = properties
    if required:
        d["required"] = required
    if extra is not None:
        d["additionalProperties"] = extra
    _put(d, minProperties=min_props, maxProperties=max_props)
    return d


def null(s: Schema) -> Schema:
    """``s`` with ``null`` added to its single ``type``."""
    t = s["type"]
    out = dict(s)
    out["type"] = [t, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def maybe(s: Schema) -> Schema:
    """``anyOf: [s, null]`` (the OpenAI style for optional fields)."""
    return {"anyOf": [s, {"type": "null"}]}


def ref(name: str) -> Schema:
    """A reference to ``#/$defs/<name>``."""
    return {"$ref": f"#/$defs/{name}"}


def root(s: Schema, defs: dict[str, Schema] | None = None, title: str | None = None) -> Schema:
    """A top-level schema: ``$schema`` first, then ``title``, the body and ``$defs``."""
    out: Schema = {"$schema": DRAFT}
    if title:
        out["title"] = title
    out.update(s)
    if defs:
        out["$defs"] = defs
    return out


@dataclass
class Entry:
    """One schema of the corpus before its examples are generated."""

    name: str
    group: str
    description: str
    schema: Schema
    examples: int


@dataclass
class Corpus:
    """The schemas of one group, in the order they were written."""

    group: str
    entries: list[Entry] = field(default_factory=list)

    def add(
        self,
        name: str,
        description: str,
        schema: Schema,
        defs: dict[str, Schema] | None = None,
        examples: int = 2,
        title: str | None = None,
    ) -> None:
        """Register a schema (wrapped by :func:`root`)."""
        if any(e.name == name for e in self.entries):
            raise ValueError(f"duplicate schema name {name!r} in {self.group}")
        self.entries.append(Entry(name, self.group, description, root(schema, defs, title), examples))
