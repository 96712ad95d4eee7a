"""Reading schemas: JSON text, pydantic models, OpenAI wrappers; ``$id``, ``$anchor`` and ``$ref``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from ...errors import SchemaError

__all__ = ["Loc", "Registry", "load_schema", "escape_pointer"]

DEFAULT_BASE = "urn:tokensieve:schema"

#: keywords whose value is one subschema
SCHEMA_KEYWORDS = (
    "additionalProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
)
#: keywords whose value is a list of subschemas
LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
#: keywords whose value maps names to subschemas
MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")


def join_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (also for non-hierarchical bases such as ``urn:``)."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:
        return ref
    return urljoin(base, ref)


def escape_pointer(token: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def load_schema(schema: Any) -> Any:
    """The schema as a JSON value (dict or bool).

    Accepts a dict, a bool, JSON text, a pydantic ``BaseModel`` subclass, and
    the OpenAI ``response_format`` wrappers ``{"type": "json_schema",
    "json_schema": {"name", "schema", "strict"}}`` and ``{"name", "schema", "strict"}``.

    Raises
    ------
    SchemaError
        For text that is not JSON (the message gives line and column) or a value
        that is not a schema.
    """
    if isinstance(schema, (bytes, bytearray)):
        schema = bytes(schema).decode("utf-8", "replace")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(
                f"schema text is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}, offset {exc.pos})"
            ) from None
        except RecursionError:
            raise SchemaError("schema text nests too deeply to parse") from None
        except ValueError as exc:  # an integer past the interpreter's digit limit (4,300 by default)
            raise SchemaError(f"schema text holds a value Python cannot read: {exc}") from None
    elif isinstance(schema, type):
        fn = getattr(schema, "model_json_schema", None)
        if fn is None:
            raise SchemaError(f"{schema.__name__} is not a pydantic model (no model_json_schema)")
        schema = fn()
    if isinstance(schema, dict):
        # OpenAI wrappers
        if schema.get("type") == "json_schema" and isinstance(schema.get("json_schema"), dict):
            schema = schema["json_schema"]
        if (
            "schema" in schema
            and isinstance(schema.get("schema"), (dict, bool))
            and "name" in schema
            and not any(k in schema for k in ("type", "properties", "$schema", "$defs"))
        ):
            schema = schema["schema"]
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema is an object or a boolean, not {type(schema).__name__}")
    return schema


@dataclass(frozen=True)
class Loc:
    """A schema in the document: its JSON pointer, value and base URI.

    ``omit`` names keywords already taken apart (an applicator distributed
    over its branches); ``extra`` holds internal keywords of synthetic schemas.
    """

    ptr: str
    node: Any
    base: str
    omit: frozenset[str] = frozenset()
    extra: tuple[tuple[str, Any], ...] = ()
    key: tuple[Any, ...] = field(default=(), compare=False)

    def ident(self) -> tuple[Any, ...]:
        """What identifies this schema for memoisation."""
        return (self.ptr, tuple(sorted(self.omit)), self.key)

    def child(self, *tokens: str | int) -> Loc:
        """The subschema at ``tokens`` below this one."""
        node = self.node
        ptr = self.ptr
        for t in tokens:
            node = node[t]
            ptr += "/" + escape_pointer(str(t))
        base = self.base
        if isinstance(node, dict) and isinstance(node.get("$id"), str):
            base = urldefrag(join_uri(base, node["$id"]))[0]
        return Loc(ptr, node, base)

    def without(self, keyword: str) -> Loc:
        """This schema with ``keyword`` ignored."""
        return Loc(self.ptr, self.node, self.base, self.omit | {keyword}, self.extra, self.key)

    def has(self, keyword: str) -> bool:
        return isinstance(self.node, dict) and keyword in self.node and keyword not in self.omit


def synthetic(ptr: str, base: str, key: tuple[Any, ...], **extra: Any) -> Loc:
    """A schema made of internal keywords (negations, forbidden keys...)."""
    return Loc(ptr, {}, base, frozenset(), tuple(sorted(extra.items())), key)


class Registry:
    """Resolves ``$ref`` within one document (``$id`` resources, ``$anchor``, JSON pointers)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.resources: dict[str, Loc] = {}
        self.anchors: dict[str, Loc] = {}
        base = DEFAULT_BASE
        if isinstance(root, dict) and isinstance(root.get("$id"), str):
            base = urldefrag(join_uri(DEFAULT_BASE, root["$id"]))[0]
        self.root_loc = Loc("", root, base)
        self.resources[DEFAULT_BASE] = self.root_loc
        self._walk(self.root_loc)

    def _walk(self, start: Loc) -> None:
        stack = [start]
        seen = 0
        while stack:
            loc = stack.pop()
            seen += 1
            node = loc.node
            if not isinstance(node, dict):
                continue
            if isinstance(node.get("$id"), str) or loc.ptr == "":
                self.resources.setdefault(loc.base, loc)
            for key in ("$anchor", "$dynamicAnchor"):
                anchor = node.get(key)
                if isinstance(anchor, str):
                    self.anchors.setdefault(loc.base + "#" + anchor, loc)
            for kw in SCHEMA_KEYWORDS:
                if isinstance(node.get(kw), (dict, bool)):
                    stack.append(loc.child(kw))
            for kw in LIST_KEYWORDS:
                if isinstance(node.get(kw), list):
                    for i in range(len(node[kw])):
                        if isinstance(node[kw][i], (dict, bool)):
                            stack.append(loc.child(kw, i))
            for kw in MAP_KEYWORDS:
                if isinstance(node.get(kw), dict):
                    for name, sub in node[kw].items():
                        if isinstance(sub, (dict, bool)):
                            stack.append(loc.child(kw, name))

    def resolve(self, ref: str, loc: Loc, pointer: str) -> Loc:
        """The schema ``ref`` names, seen from ``loc``.

        Raises
        ------
        SchemaError
            For references outside the document or to nothing.
        """
        full = join_uri(loc.base, ref)
        uri, frag = urldefrag(full)
        if frag and not frag.startswith("/"):
            hit = self.anchors.get(uri + "#" + frag)
            if hit is None:
                raise SchemaError(f"$ref {ref!r}: no $anchor {frag!r} in this document", pointer)
            return hit
        resource = self.resources.get(uri)
        if resource is None:
            raise _RemoteRef(
                f"$ref {ref!r} points outside this document (remote references are not fetched)", pointer
            )
        if not frag:
            return resource
        target = resource
        for raw in frag.split("/")[1:]:
            token = unquote(raw).replace("~1", "/").replace("~0", "~")
            node = target.node
            if isinstance(node, dict) and token in node:
                target = target.child(token)
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                target = target.child(int(token))
            else:
                raise SchemaError(f"$ref {ref!r} points to nothing in this document", pointer)
        if not isinstance(target.node, (dict, bool)):
            raise SchemaError(f"$ref {ref!r} does not point to a schema", pointer)
        return target


class _RemoteRef(SchemaError):
    """A reference to a schema outside the document."""
