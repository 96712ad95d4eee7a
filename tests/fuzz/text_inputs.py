"""The text targets of the fuzz runs: their seed inputs and how one input is run.

Shared by the coverage-guided harness (``atheris_main.py``) and the plain-process
memory replay (``scripts/memory_replay.py``).
"""

from __future__ import annotations

from typing import Any

from tokensieve import GrammarMatcher

TEXT_TARGETS = ("regex", "gbnf", "ebnf", "lark", "schema")
#: starting inputs of the text targets, written into an empty corpus folder
SEEDS = {
    "regex": ["[a-z]+@[0-9]{3}", "(?:ab|c)*d?", "\\d{2,4}-\\w+", "(?=a)[a-c]{1,5}", "\\p{Lu}\\u00e9."],
    "gbnf": ['root ::= "a" root | "b"', 'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"'],
    "ebnf": ['root ::= "a" root | "b"', 'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"'],
    "lark": ['start: item ("," item)*\nitem: WORD | "(" start ")"\nWORD: /[a-z]+/', 'start: "a" start | "b"'],
    "schema": [
        '{"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}, "required": ["a"]}',
        '{"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"}',
        '{"anyOf": [{"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}, {"enum": [1, "x", null]}]}',
    ],
}


def run_text(compiler: Any, target: str, text: str) -> None:
    """Compile ``text`` as ``target`` asks and take the first mask; a bad input raises a ``TokensieveError``."""
    if target == "regex":
        compiled = compiler.compile_regex(text)
    elif target == "schema":
        compiled = compiler.compile_json_schema(text)
    else:
        compiled = compiler.compile_grammar(text, syntax=target)
    GrammarMatcher(compiled).next_token_mask()
