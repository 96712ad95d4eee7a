"""``str(grammar)``: what a schema or grammar was lowered to, in a grammar notation.

The expected texts are written by hand from the schemas' meaning (JSON Schema
calls ``1`` and ``1.0`` equal, so an integer also takes a zero fraction); a
change in the lowering that changes a language shows here as a diff a reader
can follow.
"""

from __future__ import annotations

import pytest

from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.json_schema import schema_to_grammar
from tokensieve.ir import (
    EMPTY,
    NOTHING,
    Alt,
    ByteClass,
    alt,
    byte_class,
    char_class,
    concat,
    literal,
    optional,
    plus,
    repeat,
    star,
)
from tokensieve.ir.text import node_text

LOWERED = [
    (
        {"enum": ["a", 1, None]},
        'root ::= "\\"a\\""\n       | "1" ("." "0"+)?\n       | "null"',
    ),
    (
        {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
        'root ::= "[" ("true" | "false") ("," ("true" | "false"))? "]"',
    ),
    (
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 12}},
            "required": ["n"],
            "additionalProperties": False,
        },
        'root ::= "{\\"n\\":" ([1-9] | "1" [0-2]) ("." "0"+)? "}"',
    ),
    (
        {"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"},
        'root ::= s0\ns0 ::= "[" s0 ("," s0)* "]"\n     | "[]"',
    ),
    ({"type": "string", "pattern": "^[a-c]{2}$"}, 'root ::= "\\"" [a-c]{2} "\\""'),
]


@pytest.mark.parametrize(("schema", "expected"), LOWERED)
def test_lowered_schemas_read_as_expected(schema, expected) -> None:
    grammar, _ = schema_to_grammar(schema, whitespace="compact")
    assert str(grammar) == expected


def test_grammar_text_lists_rules_root_first_in_reference_order() -> None:
    grammar = Grammar.from_gbnf('term ::= [0-9]+ | "(" expr ")"\nroot ::= expr\nexpr ::= term ("+" term)*')
    assert str(grammar) == 'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= [0-9]+\n       | "(" expr ")"'


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (EMPTY, '""'),
        (NOTHING, "[]"),
        (literal('a"b\\c\n'), '"a\\"b\\\\c\\n"'),
        (literal("é€"), '"é€"'),
        (literal(b"\xff\x00"), '"\\xff\\x00"'),
        (char_class([(0x61, 0x7A), (0x30, 0x30)]), "[0a-z]"),
        (char_class([(0x61, 0x62)]), "[ab]"),
        (char_class([(0x22, 0x22), (0x5C, 0x5C)], negate=True), '[^"\\\\]'),
        (char_class([(0x2D, 0x2D), (0x5D, 0x5D)]), "[\\-\\]]"),
        (byte_class([(0x30, 0x39), (0x80, 0xBF)]), "b[0-9\\x80-\\xbf]"),
        (ByteClass(((0x00, 0xFE),)), "b[^\\xff]"),
        (concat(literal("a"), alt(literal("b"), literal("cd"))), '"a" ("b" | "cd")'),
        (star(concat(literal("a"), char_class([(0x30, 0x39)]))), '("a" [0-9])*'),
        (optional(literal("ab")), '"ab"?'),
        (plus(char_class([(0x30, 0x39)])), "[0-9]+"),
        (repeat(literal("x"), 2, 2), '"x"{2}'),
        (repeat(literal("x"), 2, 5), '"x"{2,5}'),
        (repeat(literal("x"), 3, None), '"x"{3,}'),
        (Alt((concat(literal("a"), star(literal("b"))), literal("c"))), '"a" "b"* | "c"'),
    ],
)
def test_node_text(node, expected) -> None:
    assert node_text(node) == expected
