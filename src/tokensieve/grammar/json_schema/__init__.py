"""JSON Schema (draft 2020-12) to the grammar IR.

:func:`schema_to_grammar` lowers a schema to a :class:`~tokensieve.ir.grammar.Grammar`
whose language is the JSON texts of the valid instances, written in a chosen
whitespace layout. Non-recursive schemas give grammars without recursive rules,
which the automaton stage compiles to one DFA; recursive ``$ref`` and values of
unconstrained type (``{}``, open objects) give recursive rules.

Every keyword is either enforced exactly or reported: with ``strict=True`` a
keyword that cannot be enforced raises :class:`~tokensieve.errors.SchemaError`
with the JSON pointer of the keyword; with ``strict=False`` it is listed in the
returned ``unenforced`` tuple as ``"<pointer>: <keyword> <why>"``. See
``docs/json-schema.md`` for the keyword coverage.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ...automata.gc_pause import gc_paused
from ...errors import GrammarError, LimitExceeded, SchemaError
from ...ir.grammar import Grammar
from ...limits import Limits
from ._lexical import Layout
from ._load import load_schema
from ._lower import Lowerer

__all__ = ["schema_to_grammar", "builtin_json_grammar", "load_schema", "canonical_key"]


def _layout(whitespace: str, indent: int | None, max_whitespace: int, later: bool) -> Layout:
    if whitespace not in ("flexible", "compact"):
        raise ValueError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
    if indent is not None:
        if isinstance(indent, bool) or not isinstance(indent, int) or indent < 0:
            raise ValueError(f"indent must be a non-negative integer or None, not {indent!r}")
        return Layout("indent", indent, max_whitespace, later)
    if isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int) or max_whitespace < 0:
        raise ValueError(f"max_whitespace must be a non-negative integer, not {max_whitespace!r}")
    return Layout(whitespace, 0, max_whitespace, later)


@gc_paused()
def schema_to_grammar(
    schema: Any,
    *,
    whitespace: Literal["flexible", "compact"] = "flexible",
    indent: int | None = None,
    max_whitespace: int = 32,
    property_order: Literal["schema", "any"] = "schema",
    strict: bool = True,
    limits: Limits | None = None,
    relax_bounds: int | None = None,
    blank_runs: Literal["grammar", "automaton"] = "grammar",
    closed_objects: bool = False,
) -> tuple[Grammar, tuple[str, ...]]:
    """Lower a JSON Schema to a grammar.

    Parameters
    ----------
    schema
        A dict or bool, JSON text, a pydantic ``BaseModel`` subclass, or an
        OpenAI ``response_format`` wrapper (``{"type": "json_schema",
        "json_schema": {...}}`` or ``{"name", "schema", "strict"}``).
    whitespace
        ``"flexible"``: runs of up to ``max_whitespace`` JSON blanks between
        tokens (none before or after the value); ``"compact"``: none at all,
        as ``json.dumps(separators=(",", ":"))`` writes.
    indent
        Exactly the layout of ``json.dumps(indent=indent)``; overrides
        ``whitespace``. Inside recursive references and values of
        unconstrained type the layout falls back to flexible (reported).
    max_whitespace
        Longest whitespace run in flexible mode.
    property_order
        ``"schema"``: properties in the order the schema lists them (extra
        properties anywhere); ``"any"``: any order, each at most once (spelled
        out for objects of up to 5 properties; larger ones keep schema order).
    strict
        Raise on keywords that are not enforced exactly, instead of reporting them.
    limits
        Resource bounds (nesting depth, rules, enum size, automaton sizes).
    relax_bounds
        When set, ``maxLength``/``minLength`` and ``maxItems`` bounds above this
        value are left out and reported (for schemas whose exact automaton
        exceeds ``limits``; :meth:`~tokensieve.GrammarCompiler.compile_json_schema`
        retries with it when ``strict=False``).
    blank_runs
        Where the ``max_whitespace`` bound of the flexible layout is written:
        ``"grammar"``, as ``[ \t\n\r]{0,max_whitespace}``; ``"automaton"``, as
        ``[ \t\n\r]*`` for the automaton stage to count (``blank_runs=`` of
        :func:`~tokensieve.automata.pushdown.compile_grammar_automaton`: the
        same language, built several times faster).
    closed_objects
        ``False`` (JSON Schema's own rule): an object schema that says nothing
        about extra keys allows any. ``True``: where the schemas an object must
        satisfy (merged over ``allOf`` and ``$ref``) have no
        ``additionalProperties``, ``patternProperties`` or
        ``unevaluatedProperties``, its only keys are the ones they name (in
        ``properties``, ``required`` or ``dependentRequired``), as OpenAI's
        strict structured outputs read schemas. Values of unconstrained type
        (``{}``) stay any JSON value.

    Returns
    -------
    (Grammar, tuple of str)
        The grammar (root rule ``"root"``) and the unenforced keywords.

    Raises
    ------
    SchemaError
        Invalid, unsupported (strict) or unsatisfiable schemas, with the JSON
        pointer of the keyword.
    LimitExceeded
        When a limit is exceeded.
    """
    limits = limits or Limits()
    if blank_runs not in ("grammar", "automaton"):
        raise ValueError(f"blank_runs must be 'grammar' or 'automaton', not {blank_runs!r}")
    layout = _layout(whitespace, indent, max_whitespace, blank_runs == "automaton")
    if property_order not in ("schema", "any"):
        raise ValueError(f"property_order must be 'schema' or 'any', not {property_order!r}")
    root = load_schema(schema)
    low = Lowerer(
        root,
        layout=layout,
        property_order=property_order,
        strict=strict,
        limits=limits,
        relax_bounds=relax_bounds,
        closed_objects=closed_objects,
    )
    try:
        body = low.lower_root()
    except RecursionError:
        raise LimitExceeded(
            "max_nesting_depth", limits.max_nesting_depth, "the schema nests too deeply to lower"
        ) from None
    except (ValueError, GrammarError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(str(exc), "") from None
    rules = dict(low.rules)
    rules["root"] = body
    return Grammar(rules, "root", low.unordered).reachable(), low.unenforced


def builtin_json_grammar(
    *,
    whitespace: Literal["flexible", "compact"] = "flexible",
    indent: int | None = None,
    max_whitespace: int = 32,
) -> Grammar:
    """Any JSON value (the grammar of ``{}``)."""
    grammar, _ = schema_to_grammar(
        {}, whitespace=whitespace, indent=indent, max_whitespace=max_whitespace, strict=False
    )
    return grammar


def canonical_key(schema: Any, options: dict[str, Any]) -> str:
    """A text that identifies (schema, options) for caching (property order kept)."""
    root = load_schema(schema)
    try:
        return json.dumps(
            [root, sorted(options.items())], separators=(",", ":"), ensure_ascii=False, default=repr
        )
    except RecursionError:
        raise LimitExceeded(
            "max_nesting_depth", Limits().max_nesting_depth, "the schema nests too deeply"
        ) from None
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"the schema is not JSON: {exc}") from None
