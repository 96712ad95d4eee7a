"""The regex IR: values, normalising constructors, and what the parser produces."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

import pytest

from tokensieve.grammar import ir, parse_regex
from tokensieve.grammar.ir import (
    EMPTY,
    NOTHING,
    Alt,
    ByteClass,
    CharClass,
    Concat,
    Literal,
    Repeat,
    RuleRef,
)


def test_nodes_are_frozen_hashable_values() -> None:
    a = ir.concat(ir.literal("ab"), ir.star(ir.char_class([(0x30, 0x39)])), RuleRef("x"))
    b = ir.concat(ir.literal("ab"), ir.star(ir.char_class([(0x30, 0x39)])), RuleRef("x"))
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.items = ()  # type: ignore[misc]
    clone = pickle.loads(pickle.dumps(a))
    assert clone == a and hash(clone) == hash(a)


def test_validation() -> None:
    with pytest.raises(ValueError):
        CharClass(((5, 3),))
    with pytest.raises(ValueError):
        CharClass(((0, 5), (6, 9)))  # adjacent: must be merged
    with pytest.raises(ValueError):
        CharClass(((0, 0x110000),))
    with pytest.raises(ValueError):
        ByteClass(((0, 256),))
    with pytest.raises(ValueError):
        Repeat(EMPTY, 3, 2)
    with pytest.raises(TypeError):
        Literal("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ir.repeat(ir.literal("a"), -1, None)


def test_concat_flattens_and_merges_literals() -> None:
    x = ir.char_class([(0x61, 0x7A)])
    node = ir.concat(ir.literal("a"), ir.concat(ir.literal("b"), EMPTY, ir.literal(b"c")), x, ir.literal("d"))
    assert node == Concat((Literal(b"abc"), x, Literal(b"d")))
    assert ir.concat() == EMPTY
    assert ir.concat(ir.literal("a"), NOTHING, x) == NOTHING
    assert ir.concat(ir.literal("ab")) == Literal(b"ab")


def test_alt_merges_characters_and_drops_nothing() -> None:
    node = ir.alt(ir.literal("a"), ir.literal("é"), ir.char_class([(0x30, 0x39)]), NOTHING)
    assert node == CharClass(((0x30, 0x39), (0x61, 0x61), (0xE9, 0xE9)))
    assert ir.alt(ir.literal("ab"), ir.literal("ab")) == Literal(b"ab")
    assert ir.alt(ir.literal("ab"), EMPTY) == Repeat(Literal(b"ab"), 0, 1)
    assert ir.alt() == NOTHING
    assert ir.alt(EMPTY) == EMPTY
    words = ir.alt(ir.literal("ab"), ir.literal("cd"))
    assert isinstance(words, Alt) and words.items == (Literal(b"ab"), Literal(b"cd"))


def test_classes_normalise() -> None:
    assert ir.char_class([(5, 9), (0, 4), (20, 30), (25, 40)]) == CharClass(((0, 9), (20, 40)))
    assert ir.char_class([(0x61, 0x61)]) == Literal(b"a")
    assert ir.char_class([(0xD000, 0xE000)]) == CharClass(((0xD000, 0xD7FF), (0xE000, 0xE000)))
    assert ir.char_class([(0xD800, 0xDFFF)]) == NOTHING
    everything_else = ir.char_class([(0x61, 0x61)], negate=True)
    assert everything_else == CharClass(((0, 0x60), (0x62, 0xD7FF), (0xE000, 0x10FFFF)))
    assert ir.byte_class([(0x80, 0xFF)], negate=True) == ByteClass(((0, 0x7F),))
    assert ir.byte_class([(7, 7)]) == Literal(b"\x07")
    assert ir.is_nothing(ir.byte_class([]))


def test_repeat_simplifies_only_when_the_language_is_kept() -> None:
    a = ir.literal("a")
    assert ir.repeat(a, 1, 1) == a
    assert ir.repeat(a, 0, 0) == EMPTY
    assert ir.repeat(NOTHING, 0, 3) == EMPTY
    assert ir.repeat(NOTHING, 1, 3) == NOTHING
    assert ir.star(ir.star(a)) == ir.star(a)
    assert ir.repeat(ir.repeat(a, 2, 2), 1, 3) == Repeat(Repeat(a, 2, 2), 1, 3)  # counts 2, 4, 6: not a{2,6}
    # nested counts against brute force: every simplification keeps the set of totals
    bounds = [(0, 1), (0, 2), (1, 2), (2, 3), (2, 2), (0, None), (1, None), (2, None), (3, 5)]
    for (lo1, hi1), (lo2, hi2) in itertools.product(bounds, repeat=2):
        node = ir.repeat(ir.repeat(a, lo1, hi1), lo2, hi2)
        assert _counts(node) == _nested_counts(lo1, hi1, lo2, hi2), (lo1, hi1, lo2, hi2, node)


CAP = 14


def _range(lo: int, hi: int | None) -> range:
    return range(lo, (CAP if hi is None else hi) + 1)


def _nested_counts(lo1: int, hi1: int | None, lo2: int, hi2: int | None) -> set[int]:
    totals = {0}
    out: set[int] = set()
    for k in range(0, CAP + 1):
        if k >= lo2 and (hi2 is None or k <= hi2):
            out |= totals
        totals = {t + c for t in totals for c in _range(lo1, hi1) if t + c <= CAP}
    return {t for t in out if t <= CAP}


def _counts(node: ir.Node) -> set[int]:
    """Totals of ``a`` a node of nested repeats of ``a`` matches, up to CAP."""
    if node == EMPTY:
        return {0}
    if isinstance(node, Literal):
        return {len(node.value)}
    assert isinstance(node, Repeat)
    inner = _counts(node.item)
    totals = {0}
    out: set[int] = set()
    for k in range(0, CAP + 1):
        if k >= node.min and (node.max is None or k <= node.max):
            out |= totals
        totals = {t + c for t in totals for c in inner if t + c <= CAP}
    return {t for t in out if t <= CAP}


PARSED = [
    ("abc", Literal(b"abc")),
    ("^abc$", Literal(b"abc")),
    ("a|b", CharClass(((0x61, 0x62),))),
    ("\\d", CharClass(((0x30, 0x39),))),
    ("[\\d]", CharClass(((0x30, 0x39),))),
    ("\\uD83D\\uDE00", Literal("😀".encode())),
    ("\\u{1F600}", Literal("😀".encode())),
    ("😀", Literal("😀".encode())),
    ("a{2,}", Repeat(Literal(b"a"), 2, None)),
    ("a{2,}?", Repeat(Literal(b"a"), 2, None)),
    ("(?<n>ab)+", Repeat(Literal(b"ab"), 1, None)),
    ("(?:ab)*", Repeat(Literal(b"ab"), 0, None)),
    ("(ab)?", Repeat(Literal(b"ab"), 0, 1)),
    ("()", EMPTY),
    ("", EMPTY),
    ("[]", NOTHING),
    ("a[]", NOTHING),
    ("\\cA\\t\\n\\v\\f\\r\\0", Literal(b"\x01\t\n\x0b\x0c\r\x00")),
    ('\\/\\\\\\.\\-\\"', Literal(b'/\\.-"')),
    ("[^\\s\\S]", NOTHING),
]


@pytest.mark.parametrize(("pattern", "expected"), PARSED)
def test_parse_results(pattern: str, expected: ir.Node) -> None:
    assert parse_regex(pattern) == expected


def test_dot_and_negation_exclude_surrogates() -> None:
    dot = parse_regex(".")
    assert isinstance(dot, CharClass)
    assert dot.ranges == ((0, 9), (11, 12), (14, 0x2027), (0x202A, 0xD7FF), (0xE000, 0x10FFFF))
    neg = parse_regex("[^\\n]")
    assert isinstance(neg, CharClass)
    assert all(not (lo <= 0xD800 <= hi) for lo, hi in neg.ranges)
