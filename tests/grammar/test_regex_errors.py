"""Every rejected construct: the error type, its position and what it says."""

from __future__ import annotations

import time

import pytest

from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar import parse_regex
from tokensieve.limits import Limits

# (pattern, position of the offending construct, words the message must contain)
GRAMMAR_ERRORS = [
    ("(a(?=b))", 2, "lookahead"),
    ("a(?!b)|c", 6, "lookahead"),
    ("a(?=b)*", 6, "quantified lookahead"),
    ("(?<!a)b(?=c)", 0, "lookbehind"),
    ("(?<=a)b", 0, "lookbehind"),
    ("(?<!a)b", 0, "lookbehind"),
    ("(a)\\1", 3, "backreference"),
    ("(a)\\9", 3, "backreference"),
    ("(?<n>a)\\k<n>", 7, "backreference"),
    ("\\bfoo", 0, "word boundary"),
    ("foo\\B", 3, "word boundary"),
    ("\\p{Script=Latin}", 0, "Unicode property"),
    ("x\\P{Emoji}", 1, "Unicode property"),
    ("[\\p{Lx}]", 1, "Unicode property"),
    ("(a", 0, "missing ')'"),
    ("((a)", 0, "missing ')'"),
    ("a(b(c)", 1, "missing ')'"),
    ("a)", 1, "')' without"),
    ("(a))", 3, "')' without"),
    ("[z-a]", 1, "out of order"),
    ("x[\\u0100-\\u00ff]", 2, "out of order"),
    ("*a", 0, "nothing to repeat"),
    ("a|*", 2, "nothing to repeat"),
    ("(+)", 1, "nothing to repeat"),
    ("a**", 2, "nothing to repeat"),
    ("a{2}{3}", 4, "nothing to repeat"),
    ("a+??", 3, "nothing to repeat"),
    ("{2}", 0, "nothing to repeat"),
    ("^*", 1, "nothing to repeat"),
    ("\\a", 0, "unknown escape"),
    ("x\\z", 1, "unknown escape"),
    ("\\A", 0, "unknown escape"),
    ("[\\e]", 1, "unknown escape"),
    ("a{3,2}", 1, "out of order"),
    ("\\x4", 0, "two hex digits"),
    ("\\xg0", 0, "two hex digits"),
    ("\\u12", 0, "four hex digits"),
    ("\\u{}", 0, "hex digits"),
    ("\\u{110000}", 0, "beyond U+10FFFF"),
    ("\\c1", 0, "letter"),
    ("ab\\", 2, "lone backslash"),
    ("\\01", 0, "octal"),
    ("[\\B]", 1, "\\B"),
    ("a^", 1, "'^'"),
    ("a|b^c", 3, "'^'"),
    ("(a)^", 3, "'^'"),
    ("$a", 0, "'$'"),
    ("a$b", 1, "'$'"),
    ("(a$)b", 2, "'$'"),
    ("(a|b$)c", 4, "'$'"),
    ("a$(b)", 1, "'$'"),
    ("(^a)*", 1, "anchor inside a repeated group"),
    ("(a$){2}", 2, "anchor inside a repeated group"),
    ("(?i)a", 0, "unsupported group"),
    ("(?P<n>a)", 0, "unsupported group"),
    ("(?<1x>a)", 3, "group name"),
    ("(?<n>a)(?<n>b)", 10, "duplicate group name"),
    ("[abc", 0, "unterminated character class"),
    ("x[^", 1, "unterminated character class"),
    ("\\uD83D", 0, "lone surrogate"),
    ("a\\uDE00", 1, "lone surrogate"),
]


@pytest.mark.parametrize(("pattern", "position", "words"), GRAMMAR_ERRORS)
def test_grammar_errors(pattern: str, position: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    err = info.value
    assert err.position == position, err
    assert words in err.message
    assert err.source == pattern
    assert err.line == 1 and err.column == position + 1
    assert err.excerpt.endswith("^")


#: valid ECMA-262 that is not supported: GrammarError.unsupported (strict=False reports such a JSON Schema pattern)
UNSUPPORTED = [
    "(a(?=b))",
    "a(?!b)*",
    "a(?=b)|c",
    "(?<=a)b",
    "(?<!a)b",
    "(a)\\1",
    "(?<n>a)\\k<n>",
    "\\bfoo",
    "foo\\B",
    "\\p{Script=Latin}",
    "x\\P{Emoji}",
    "a^",
    "a$b",
    "(^a)*",
]
#: malformed patterns: errors in every mode
MALFORMED = [
    "(?=a",
    "((?=a)",
    "(?<=a))",
    "a(?!b))c",
    "(a",
    "a)",
    "[z-a]",
    "*a",
    "\\a",
    "\\x4",
    "\\u{}",
    "\\01",
    "[\\p{Lx}]",
    "\\pL",
    "(?i)a",
    "[abc",
    "\\uD83D",
]


@pytest.mark.parametrize(
    ("pattern", "unsupported"), [(p, True) for p in UNSUPPORTED] + [(p, False) for p in MALFORMED]
)
def test_unsupported_is_told_apart_from_malformed(pattern: str, unsupported: bool) -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    assert info.value.unsupported is unsupported, info.value


def test_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_regex("(")


def test_repetition_limit() -> None:
    limits = Limits(max_repetition=1000)
    parse_regex("a{1000}", limits)
    for pattern in ["a{1001}", "a{0,1001}", "a{1001,}", "a{99999999999999999999999999}"]:
        with pytest.raises(LimitExceeded) as info:
            parse_regex(pattern, limits)
        assert info.value.limit == "max_repetition" and info.value.value == 1000


def test_pattern_length_limit() -> None:
    with pytest.raises(LimitExceeded) as info:
        parse_regex("a" * 101, Limits(max_pattern_length=100))
    assert info.value.limit == "max_pattern_length"
    parse_regex("a" * 100, Limits(max_pattern_length=100))


def test_nesting_limit_is_quick_and_not_recursive() -> None:
    pattern = "(" * 10_000 + "a" + ")" * 10_000
    t0 = time.perf_counter()
    with pytest.raises(LimitExceeded) as info:
        parse_regex(pattern)
    assert time.perf_counter() - t0 < 1.0
    assert info.value.limit == "max_nesting_depth"
    limits = Limits(max_nesting_depth=5)
    parse_regex("((((( a )))))", limits)
    with pytest.raises(LimitExceeded):
        parse_regex("(((((( a ))))))", limits)
    # unbalanced and deep: still an error, never a RecursionError
    with pytest.raises(GrammarError):
        parse_regex("(" * 10_000, Limits(max_nesting_depth=20_000))


def test_not_a_string() -> None:
    with pytest.raises(TypeError):
        parse_regex(b"abc")  # type: ignore[arg-type]
