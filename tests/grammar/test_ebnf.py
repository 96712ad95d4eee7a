"""xgrammar-style EBNF: constructs, lookahead assertions, errors, and xgrammar itself as an oracle."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.cfg_oracle import accepts, inline

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ebnf import parse_ebnf
from tokensieve.grammar.ir import NOTHING, RuleRef

DATA = Path(__file__).parent / "data"


def member(text: str):
    g = parse_ebnf(text)
    try:
        dfa = ir_to_dfa(inline(g))
    except ValueError:
        return lambda s: accepts(g, s)
    return lambda s: dfa.accepts(s.encode("utf-8"))


REGULAR = [
    ("root ::= \"abc\" | 'd'", r"abc|d", ["abc", "d", "'d'", ""]),
    ('root ::= [a-c]+ ("," [a-c]+)*', r"[a-c]+(?:,[a-c]+)*", ["a,bc", "a,", ",a", "abc"]),
    ('root ::= "x"{2} "y"{1,} "z"{0,1}', r"xxy+z?", ["xxy", "xxyyz", "xy", "xxz"]),
    ('root ::= "\\x41B"', "\u041b", ["\u041b", "AB"]),  # xgrammar's \x takes every hex digit
    ('root ::= "\\x41" "B"', r"AB", ["AB"]),
    (
        'root ::= "\\a\\b\\f\\v\\0\\e\\?\\\'"',
        re.escape("\x07\x08\x0c\x0b\x00\x1b?'"),
        ["\x07\x08\x0c\x0b\x00\x1b?'"],
    ),
    (
        "root ::= [\\^\\$\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\-]+",
        r"[\^$.*+?()\[\]{}|/\-]+",
        ["^$.*+?()[]{}|/-", "a"],
    ),
    ("root ::= [\\d\\s]+ [\\W]", r"[0-9\s]+[^A-Za-z0-9_]", ["1 2!", "12a"]),
    ('root ::= "a" ()', r"a", ["a", ""]),
    ("root ::= [^]", r"(?s:.)", ["\n", "x", ""]),
    ("root ::= .", r"(?s:.)", ["\n", "x", ""]),
    ('root ::= "a" /* block */ "b" (* iso *) "c" # line', r"abc", ["abc"]),
    ('root ::= "a"\n  "b"\n  | "c"', r"ab|c", ["ab", "c", "a"]),
    ('root ::= a.b\na.b ::= "x" | -c\n-c ::= "y"', r"[xy]", ["x", "y"]),
]


@pytest.mark.parametrize(("grammar", "pattern", "samples"), REGULAR)
def test_regular_constructs_match_python_re(grammar: str, pattern: str, samples: list[str]) -> None:
    m = member(grammar)
    for s in samples:
        assert m(s) == (re.fullmatch(pattern, s) is not None), (grammar, s)


def test_empty_class_matches_nothing() -> None:
    g = parse_ebnf('root ::= "a" | []')
    assert parse_ebnf("root ::= []").rules["root"] == NOTHING
    assert accepts(g, "a") and not accepts(g, "")


def test_lookahead_is_parsed_and_ignored() -> None:
    g = parse_ebnf('root ::= a "y"\na ::= "a" a | "a" (= "x")\n')
    assert accepts(g, "aay")  # the (wrong) assertion does not change the language
    assert g.rules == parse_ebnf('root ::= a "y"\na ::= "a" a | "a"\n').rules
    g = parse_ebnf('root ::= str ":"\nstr ::= "\\"" [a-z]* "\\"" (= ws ":")\nws ::= " "*')
    assert accepts(g, '"ab":')


def test_json_example() -> None:
    g = Grammar.from_ebnf((DATA / "json.ebnf").read_text(encoding="utf-8"))
    for s in ['{"a": [1, -2.5e3, true, null, "x\\u00e9"]}', "[]", '{ "k" : { } }']:
        assert accepts(g, s), s
    for s in ['{"a": 1,}', "[1 2]", "01", '"\\x"']:
        assert not accepts(g, s), s


ERRORS = [
    ("", 1, 1, "defines no rules"),
    ('root ::= "abc\n"', 1, 10, "cannot span lines"),
    ("root ::= [a\nb]", 1, 10, "cannot span lines"),
    ('root ::= "\\q"', 1, 11, "unknown escape \\q"),
    ('root ::= "\\x"', 1, 11, "hex digits"),
    ('root ::= "\\-"', 1, 11, "unknown escape"),
    ("root ::= [\\d-z]", 1, 11, "cannot be the end of a range"),
    ('root ::= "a"{5,1}', 1, 13, "bad repetition bounds"),
    ("root ::= b", 1, 10, "undefined rule 'b'"),
    ('root ::= "a"\n\nroot ::= "b"', 3, 1, "more than once"),
    ('main ::= "a"', 1, 1, "no rule named 'root'"),
    ('root ::= "a" (= "b") "c"', 1, 22, "must be the last part"),
    ('root ::= ("a" (= "b"))', 1, 15, "only allowed at the end"),
    ('root ::= "a" (= "b") (= "c")', 1, 22, "must be the last part"),
    ('root ::= "a" (= undefined-rule)', 1, 17, "undefined rule"),
    ('root ::= "a" /* open', 1, 14, "unterminated comment"),
    ('root ::= TagDispatch(("<a>", x))\nx ::= "y"', 1, 10, "TagDispatch(...) macro"),
    ('root ::= Regex("[a-z]+")', 1, 10, "Regex(...) macro"),
    ('root ::= "a" b ::= "c"', 1, 14, "must start on a new line"),
    ('1x ::= "a"', 1, 1, "expected a rule name"),
    ('root[max_tokens=5] ::= "a"', 1, 5, "rule attributes"),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), ERRORS)
def test_errors_have_line_and_column(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_ebnf(text)
    err = info.value
    assert words in err.message
    assert (err.line, err.column) == (line, column), err


def test_limits() -> None:
    with pytest.raises(LimitExceeded):
        parse_ebnf("root ::= " + "(" * 10_000 + '"a"' + ")" * 10_000)
    with pytest.raises(LimitExceeded):
        parse_ebnf('root ::= "a"{0,99999999999999999999}')


def test_names_and_references() -> None:
    g = parse_ebnf('root ::= _x\n_x ::= "q"')
    assert g.rules["root"] == RuleRef("_x")


# ------------------------------------------------------- xgrammar as oracle
XG_GRAMMARS = {
    "json": (
        (DATA / "json.ebnf").read_text(encoding="utf-8"),
        ['{"a": [1, 2]}', '{"a": [1, 2],}', "[ ]", '"\\u00e9"', "-0.5e+2", "1.", '{"x":}'],
    ),
    "nested": ('root ::= "(" root ")" root | ""\n', ["", "()", "(()())", "(()", ")("]),
    "lookahead": ('root ::= a "y"\na ::= "a" a | "a" (= "x")\n', ["ay", "aay", "ax", "y"]),
    "classes": ("root ::= [^a-c\\]]+ [\\-x]\n", ["de-", "dex", "da-", "]x", "d]"]),
    "counts": ('root ::= ("ab" | "c"){2,3} "d"{1,}\n', ["abcd", "ccd", "cccdd", "cd", "abababd"]),
    "escapes": ('root ::= "\\t\\x41\\u00e9\\U0001F600\\"" [\\x30-\\x39]\n', ['\tAé😀"5', '\tAé😀"a']),
}


@pytest.mark.parametrize("name", sorted(XG_GRAMMARS))
def test_agrees_with_xgrammar(name: str) -> None:
    testing = pytest.importorskip("xgrammar.testing")
    check = getattr(testing, "_is_grammar_accept_string", None)
    if check is None:
        pytest.skip("this xgrammar cannot check single strings")
    text, samples = XG_GRAMMARS[name]
    g = parse_ebnf(text)
    for s in samples:
        assert accepts(g, s) == check(text, s), (name, s)
