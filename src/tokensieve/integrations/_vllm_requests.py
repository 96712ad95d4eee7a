"""The constraint a vLLM request carries, read from ``SamplingParams.extra_args``.

Nothing here imports vLLM: the same reading serves the logits processor in
vLLM's engine, its parameter check in vLLM's front end, and plain unit tests.

A request names its constraint under ``extra_args["structured_outputs"]``
with the field names of vLLM's own ``StructuredOutputsParams``: exactly one of
``json`` (a JSON Schema as a dict, a bool or JSON text), ``regex``,
``choice`` (a list of strings), ``grammar`` (EBNF/GBNF text as vLLM's
default backend takes it, or Lark) and ``json_object`` (any JSON object).
Options beside it: ``disable_any_whitespace`` (JSON without blanks between
tokens), ``grammar_syntax`` (``"ebnf"``, ``"gbnf"`` or ``"lark"``; by default
a grammar with ``::=`` is EBNF, any other Lark, as vLLM decides) and
``strict`` (default true: a schema keyword that cannot be enforced exactly
is an error; false leaves it out). vLLM's OpenAI server passes
``vllm_xargs`` into ``extra_args`` and takes only flat values there, so the
whole object may also come as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import TokensieveError

__all__ = [
    "EXTRA_ARGS_KEY",
    "Constraint",
    "ConstraintError",
    "check_constraint",
    "compile_constraint",
    "constraint_from_extra_args",
]

#: The key of ``SamplingParams.extra_args`` that holds a request's constraint.
EXTRA_ARGS_KEY = "structured_outputs"

Kind = Literal["json", "regex", "choice", "grammar", "json_object"]
_KINDS: tuple[Kind, ...] = ("json", "regex", "choice", "grammar", "json_object")
_OPTIONS = ("disable_any_whitespace", "grammar_syntax", "strict")
#: vLLM's own fields that tokensieve does not take (named in the error, not silently ignored)
_REFUSED = ("structural_tag", "whitespace_pattern", "disable_additional_properties")


class ConstraintError(TokensieveError, ValueError):
    """A request's ``structured_outputs`` that cannot be read (vLLM answers it with a 400)."""


@dataclass(frozen=True)
class Constraint:
    """One request's constraint, normalised and hashable.

    Attributes
    ----------
    kind
        ``"json"``, ``"regex"``, ``"choice"``, ``"grammar"`` or ``"json_object"``.
    source
        The schema as canonical JSON text, the pattern, the choices (a tuple)
        or the grammar text; ``""`` for ``json_object``.
    compact
        JSON without blanks between tokens (``disable_any_whitespace``).
    syntax
        The grammar's syntax (``"ebnf"``, ``"gbnf"`` or ``"lark"``); ``""`` for other kinds.
    strict
        Whether a schema keyword that cannot be enforced exactly is an error.
    """

    kind: Kind
    source: str | tuple[str, ...]
    compact: bool = False
    syntax: str = ""
    strict: bool = True


def constraint_from_extra_args(extra_args: Mapping[str, Any] | None) -> Constraint | None:
    """Read the constraint of a request from its ``SamplingParams.extra_args``.

    Parameters
    ----------
    extra_args
        The request's ``extra_args`` (``None`` or without the key: no constraint).

    Returns
    -------
    Constraint or None

    Raises
    ------
    ConstraintError
        When the value is not an object (or JSON text of one), names no
        constraint or more than one, or holds a value of the wrong type; the
        message says which field.
    """
    if not extra_args or extra_args.get(EXTRA_ARGS_KEY) is None:
        return None
    spec = extra_args[EXTRA_ARGS_KEY]
    where = f"extra_args[{EXTRA_ARGS_KEY!r}]"
    if isinstance(spec, (str, bytes)):
        spec = _json_text(spec, where)
    if not isinstance(spec, Mapping):
        raise ConstraintError(f"{where} must be an object (or JSON text of one), not {type(spec).__name__}")
    unknown = sorted(str(k) for k in spec if k not in _KINDS + _OPTIONS + _REFUSED)
    if unknown:
        raise ConstraintError(f"{where} has unknown fields {unknown}; expected one of {list(_KINDS)}")
    refused = [k for k in _REFUSED if spec.get(k) not in (None, False)]
    if refused:
        raise ConstraintError(f"{where}.{refused[0]} is not supported by tokensieve")
    named = [k for k in _KINDS if spec.get(k) not in (None, False)]
    if len(named) != 1:
        what = "none" if not named else ", ".join(named)
        raise ConstraintError(f"{where} must name exactly one of {list(_KINDS)}; it names {what}")
    kind = named[0]
    value = spec[kind]
    compact = _flag(spec, "disable_any_whitespace", False, where)
    strict = _flag(spec, "strict", True, where)
    at = f"{where}.{kind}"
    if kind == "json":
        if isinstance(value, (str, bytes)):
            value = _json_text(value, at)
        if not isinstance(value, (Mapping, bool)):
            raise ConstraintError(
                f"{at} must be a JSON Schema (an object or a bool), not {type(value).__name__}"
            )
        source = json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # key order is property order
        return Constraint("json", source, compact=compact, strict=strict)
    if kind == "json_object":
        if value is not True:
            raise ConstraintError(f"{at} must be true")
        return Constraint("json_object", "", compact=compact, strict=strict)
    if kind == "regex":
        return Constraint("regex", _text(value, at))
    if kind == "choice":
        if isinstance(value, (str, bytes)):
            value = _json_text(value, at)
        if not isinstance(value, (list, tuple)) or not value:
            raise ConstraintError(f"{at} must be a non-empty list of strings")
        items = tuple(_text(item, f"{at}[{i}]") for i, item in enumerate(value))
        return Constraint("choice", items)
    grammar = _text(value, at)
    syntax = spec.get("grammar_syntax")
    if syntax is None:
        syntax = "ebnf" if "::=" in grammar else "lark"
    if syntax not in ("ebnf", "gbnf", "lark"):
        raise ConstraintError(f"{where}.grammar_syntax must be 'ebnf', 'gbnf' or 'lark', not {syntax!r}")
    return Constraint("grammar", grammar, syntax=str(syntax))


def compile_constraint(compiler: Any, constraint: Constraint) -> Any:
    """Compile ``constraint`` with a :class:`~tokensieve.GrammarCompiler`.

    Parameters
    ----------
    compiler
        The compiler of the model's vocabulary.
    constraint
        What to compile.

    Returns
    -------
    CompiledGrammar or CompiledPushdownGrammar

    Raises
    ------
    TokensieveError
        ``GrammarError``, ``SchemaError`` or ``LimitExceeded`` from the compiler.
    """
    whitespace: Literal["flexible", "compact"] = "compact" if constraint.compact else "flexible"
    if constraint.kind == "json":
        return compiler.compile_json_schema(
            constraint.source, whitespace=whitespace, strict=constraint.strict
        )
    if constraint.kind == "json_object":
        return compiler.compile_json_schema({"type": "object"}, whitespace=whitespace, strict=False)
    if constraint.kind == "regex":
        return compiler.compile_regex(constraint.source)
    if constraint.kind == "choice":
        return compiler.compile_choices(list(constraint.source))
    return compiler.compile_grammar(constraint.source, syntax=constraint.syntax)


def check_constraint(constraint: Constraint) -> None:
    """Run the front end of ``constraint`` (no vocabulary needed), so bad input fails early.

    A schema is lowered (which checks it, ``strict`` included), a pattern or
    grammar parsed. What only the automaton or the vocabulary can tell
    (size limits) is found later, when the engine compiles it.

    Raises
    ------
    TokensieveError
        ``GrammarError`` or ``SchemaError``, saying where.
    """
    from ..grammar.cfg import Grammar

    if constraint.kind == "json":
        from ..grammar.json_schema import schema_to_grammar

        whitespace: Literal["flexible", "compact"] = "compact" if constraint.compact else "flexible"
        schema_to_grammar(constraint.source, whitespace=whitespace, strict=constraint.strict)
    elif constraint.kind == "regex":
        from ..grammar.regex import parse_regex

        parse_regex(str(constraint.source))
    elif constraint.kind == "grammar":
        text = str(constraint.source)
        if constraint.syntax == "lark":
            Grammar.from_lark(text)
        elif constraint.syntax == "gbnf":
            Grammar.from_gbnf(text)
        else:
            Grammar.from_ebnf(text)


def _json_text(value: str | bytes, where: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ConstraintError(f"{where} is text but not JSON: {exc}") from None


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConstraintError(f"{where} must be a string, not {type(value).__name__}")
    return value


def _flag(spec: Mapping[str, Any], name: str, default: bool, where: str) -> bool:
    value = spec.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConstraintError(f"{where}.{name} must be true or false, not {value!r}")
    return value
