"""GBNF: every construct, the example grammars, the language against oracles, and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cfg_oracle import accepts, inline

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.gbnf import parse_gbnf
from tokensieve.grammar.ir import CharClass, Literal, Repeat, RuleRef
from tokensieve.limits import Limits

DATA = Path(__file__).parent / "data"


def lang(text: str, root: str = "root"):
    """A membership test for the grammar: a DFA when it is regular, the chart oracle otherwise."""
    g = parse_gbnf(text, root=root)
    try:
        dfa = ir_to_dfa(inline(g))
    except ValueError:
        return lambda s: accepts(g, s)
    return lambda s: dfa.accepts(s.encode("utf-8"))


# ------------------------------------------------------------ regular cases
# (grammar, an equivalent Python regex, sample strings)
REGULAR = [
    ('root ::= "abc"', r"abc", ["abc", "ab", "abcd", ""]),
    ('root ::= "a" | "b" "c"', r"a|bc", ["a", "bc", "b", "abc"]),
    ('root ::= "ab"*', r"(?:ab)*", ["", "ab", "abab", "aba", "b"]),
    ('root ::= "ab"+ "c"?', r"(?:ab)+c?", ["ab", "abc", "ababc", "c", ""]),
    ("root ::= [a-c]{2}", r"[a-c]{2}", ["ab", "a", "abc", "cc"]),
    ("root ::= [a-c]{2,}", r"[a-c]{2,}", ["ab", "a", "abcabc"]),
    ("root ::= [a-c]{1,3}", r"[a-c]{1,3}", ["", "a", "abc", "abca"]),
    ('root ::= "x"{,2}', r"x{0,2}", ["", "x", "xx", "xxx"]),
    ('root ::= "x" { 2 , 3 } "y"', r"x{2,3}y", ["xxy", "xxxy", "xy", "xxxxy"]),
    ('root ::= [^"\\\\]+', r'[^"\\]+', ["abc", 'a"', "a\\", "é\n"]),
    ("root ::= [a-z0-9_-]+", r"[a-z0-9_-]+", ["a-b_9", "A", "-"]),
    ("root ::= [-a]", r"[-a]", ["-", "a", "b"]),
    ("root ::= [a-]", r"[a-]", ["-", "a", "b"]),
    ("root ::= [\\-\\]\\[]+", r"[-\]\[]+", ["-][", "a"]),
    ("root ::= .", r"(?s:.)", ["a", "\n", "é", "😀", "", "ab"]),
    ('root ::= "\\x41\\u00e9\\U0001F600\\t\\r\\n\\\\\\""', 'A\u00e9\U0001f600\t\r\n\\\\"', ['Aé😀\t\r\n\\"']),
    ("root ::= [\\x30-\\x39\\u0100-\\u017F]", r"[0-9\u0100-\u017f]", ["5", "ā", "a", "ƀ"]),
    ('root ::= ("a" | "b")* "c"', r"[ab]*c", ["c", "abbac", "abd", "ab"]),
    ('root ::= ("a" "b"?)+', r"(?:ab?)+", ["a", "abab", "aab", "b"]),
    ('root ::= "a"**', r"a*", ["", "aaa", "b"]),  # stacked quantifiers, as llama.cpp allows
    ('root ::= "a"?+', r"a*", ["", "a", "aa"]),
    ('root ::= "a" ()', r"a", ["a", ""]),
    ('root ::= "a" |', r"a?", ["", "a", "aa"]),
    ('root ::= "日本" [ぁ-ゖ]', r"日本[ぁ-ゖ]", ["日本ご", "日本x"]),
]


@pytest.mark.parametrize(("grammar", "pattern", "samples"), REGULAR)
def test_regular_constructs_match_python_re(grammar: str, pattern: str, samples: list[str]) -> None:
    member = lang(grammar)
    for s in samples:
        assert member(s) == (re.fullmatch(pattern, s) is not None), (grammar, s)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab()+x ", max_size=10))
def test_random_strings_against_re(s: str) -> None:
    grammar = 'root ::= ( "(" [ab]+ ")" | "x"{1,2} )* ws\nws ::= " "?\n'
    member = _cached_member(grammar)
    assert member(s) == (re.fullmatch(r"(?:\([ab]+\)|x{1,2})* ?", s) is not None)


_MEMBERS: dict[str, object] = {}


def _cached_member(grammar: str):
    if grammar not in _MEMBERS:
        _MEMBERS[grammar] = lang(grammar)
    return _MEMBERS[grammar]  # type: ignore[return-value]


# --------------------------------------------------------- layout of rules
def test_rules_continue_after_bar_inside_parens_and_after_assign() -> None:
    text = (
        "root ::=\n"
        '  "a" |\n'
        '  "b" (\n'
        '    "c"\n'
        '    | "d" # comment inside\n'
        "  )\n"
        "\n"
        "# a comment between rules\n"
        'other ::= "z"\n'
    )
    g = parse_gbnf(text)
    assert set(g.rules) == {"root", "other"}
    member = lang(text)
    assert [member(s) for s in ["a", "bc", "bd", "b", "z"]] == [True, True, True, False, False]


def test_continuation_lines_starting_with_bar_and_indented_items() -> None:
    # llama.cpp rejects these two layouts; they read unambiguously as continuations
    member = lang('root ::= "a"\n     | "b"\n        "c"\nx ::= "q"')
    assert [member(s) for s in ["a", "bc", "b", "q"]] == [True, True, False, False]


def test_crlf_line_endings_and_no_final_newline() -> None:
    text = 'root ::= a "b" |\r\n  "c"\r\na ::= "a"\r\n\r\n# end'
    assert set(parse_gbnf(text).rules) == {"root", "a"}
    member = lang(text)
    assert member("ab") and member("c") and not member("a")
    assert parse_gbnf('root ::= "x"').rules["root"] == Literal(b"x")


def test_rule_names() -> None:
    g = parse_gbnf('root ::= my-rule_2 9lives\nmy-rule_2 ::= "a"\n9lives ::= "b"')
    assert g.rules["root"].items == (RuleRef("my-rule_2"), RuleRef("9lives"))  # type: ignore[union-attr]


def test_quantifier_applies_to_the_whole_string() -> None:
    g = parse_gbnf('root ::= "x" "abc"*')
    assert g.rules["root"].items[1] == Repeat(Literal(b"abc"), 0, None)  # type: ignore[union-attr]


def test_negated_class_and_dot_cover_all_characters() -> None:
    g = parse_gbnf("root ::= [^a]")
    assert isinstance(g.rules["root"], CharClass)
    member = lang("root ::= [^a]")
    assert member("\n") and member("\U0010ffff") and not member("a")


def test_custom_root_and_from_gbnf() -> None:
    g = Grammar.from_gbnf('start ::= "s"\nroot ::= "r"', root="start")
    assert g.root == "start"
    assert Grammar.from_gbnf('root ::= "r"').root == "root"


# ---------------------------------------------------------- the examples
def test_example_files_parse() -> None:
    names = sorted(p.name for p in DATA.glob("*.gbnf"))  # written for these tests
    assert names == ["arithmetic.gbnf", "c.gbnf", "chess.gbnf", "json.gbnf", "list.gbnf"]
    for path in DATA.glob("*.gbnf"):
        g = parse_gbnf(path.read_text(encoding="utf-8"))
        assert g.root == "root" and g.rules


EXAMPLES = {
    "json.gbnf": (
        [
            '{"a": 1}',
            ' [1, -2.5e+3, true, false, null, "x\\n\\u00e9"] ',
            '{"k": {"z": [[], {}]}, "w": "é"}',
            "0",
            '"\\/"',
            "[\n  1]",
        ],
        ['{"a": 1,}', "[1 2]", '"\\q"', "01", '{"a"}', '"a\nb"', "tru", "{a: 1}", "1.e5"],
    ),
    "arithmetic.gbnf": (
        ["1+2", "x = (a*b) % 7\ny=-x\n", "-(-3)", "a1 = 2  *  3"],
        ["1+", "x =\n", "(1+2", "1 +   2", "X = 1", "1\n\n2"],
    ),
    "list.gbnf": (["[x] buy milk\n", "[ ] a\n[x] b\n"], ["", "[x] \n", "[y] a\n", "[x] a", "[x]a\n"]),
    "chess.gbnf": (
        ["1. e4 e5 2. Nf3 Nc6 3. Bb5", "1.d4 d5 2. O-O-O+ exd8=Q# 1-0", "12. Raxd1"],
        ["1. e9", "1. Zf3", "e4", "1. e4 e5 2-0", "1. O-O-O-O"],
    ),
    "c.gbnf": (
        [
            "int f(int a, bool b) {\n  return a * 2;\n}\n",
            "void g() { x = h(1, y); while (x < 3) { x = x + 1; } }",
            "bool t() { /* a ** comment */ if (!ok) { return 0; } else { return 1; } }",
            "",
        ],
        ["int f(int a) { return a*2; }", "int () {}", "f() {}", "int f() { /* open }"],
    ),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_languages(name: str) -> None:
    g = parse_gbnf((DATA / name).read_text(encoding="utf-8"))
    good, bad = EXAMPLES[name]
    for s in good:
        assert accepts(g, s), s
    for s in bad:
        assert not accepts(g, s), s


def test_recursive_grammar_balanced_parentheses() -> None:
    g = parse_gbnf('root ::= ("(" root ")")* \n')
    for s in ["", "()", "(())()", "((()))"]:
        assert accepts(g, s)
    for s in ["(", ")(", "(()", "())"]:
        assert not accepts(g, s)


def test_left_recursion() -> None:
    g = parse_gbnf('root ::= root "+" num | num\nnum ::= [0-9]+')
    assert accepts(g, "1+22+3") and not accepts(g, "1++2") and not accepts(g, "+1")


# ------------------------------------------------------------------ errors
# (grammar, line, column, words in the message)
ERRORS = [
    ("", 1, 1, "defines no rules"),
    ("# only a comment\n", 2, 1, "defines no rules"),
    ('root ::= "abc', 1, 10, "unterminated string"),
    ('root ::= "a"\nx ::= "abc\n', 2, 7, "unterminated string"),
    ("root ::= [abc", 1, 10, "unterminated character class"),
    ("root ::= []", 1, 10, "empty character class"),
    ('root ::= "\\q"', 1, 11, "unknown escape \\q"),
    ("root ::= [\\d]", 1, 11, "unknown escape \\d"),
    ('root ::= "\\x4"', 1, 11, "2 hex digits"),
    ('root ::= "\\uD800"', 1, 11, "lone surrogate"),
    ('root ::= "\\U00110000"', 1, 11, "beyond U+10FFFF"),
    ("root ::= [z-a]", 1, 11, "out of order"),
    ('root ::= "a"{3,2}', 1, 13, "bad repetition bounds"),
    ('root ::= "a"{}', 1, 14, "expected a number"),
    ('root ::= "a"{,}', 1, 13, "at least one bound"),
    ('root ::= "a"{2', 1, 15, "expected '}'"),
    ("root ::= x\n", 1, 10, "undefined rule 'x'"),
    ('root ::= "a" | b-c\n', 1, 16, "undefined rule 'b-c'"),
    ('root ::= "a"\nroot ::= "b"', 2, 1, "more than once"),
    ('start ::= "a"', 1, 1, "no rule named 'root'"),
    ('root ::= ("a"', 1, 10, "missing ')'"),
    ('root ::= ("a"\nx ::= "b"', 1, 10, "missing ')'"),
    ('root ::= "a")', 1, 13, "')' without"),
    ("root ::= *", 1, 10, "nothing to repeat"),
    ('root ::= "a" | +', 1, 16, "nothing to repeat"),
    ('root ::= "a" x ::= "b"\nx ::= "c"', 1, 14, "must start on a new line"),
    ('root "a"', 1, 6, "expected '::='"),
    ('::= "a"', 1, 1, "expected a rule name"),
    ('root ::= "a" <[12]>', 1, 14, "token references"),
    ('root ::= !<think> "a"', 1, 10, "token references"),
    ("root ::= 'a'", 1, 10, "unexpected character"),
    ('root ::= "a" \\\n', 1, 14, "unexpected character"),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), ERRORS)
def test_errors_have_line_and_column(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_gbnf(text)
    err = info.value
    assert words in err.message
    assert (err.line, err.column) == (line, column), err
    assert err.excerpt.endswith("^") and "^" in str(err)


def test_limits() -> None:
    with pytest.raises(LimitExceeded) as info:
        parse_gbnf("root ::= " + "(" * 10_000 + '"a"' + ")" * 10_000)
    assert info.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded) as info:
        parse_gbnf('root ::= "a"{1000000}')
    assert info.value.limit == "max_repetition"
    with pytest.raises(LimitExceeded) as info:
        parse_gbnf('root ::= "' + "a" * 100 + '"', limits=Limits(max_pattern_length=50))
    assert info.value.limit == "max_pattern_length"
    deep = "root ::= " + "(" * 150 + '"a"' + ")" * 150
    assert parse_gbnf(deep).rules["root"] == Literal(b"a")
    with pytest.raises(TypeError):
        parse_gbnf(b'root ::= "a"')  # type: ignore[arg-type]
