"""Lark grammars: constructs, %ignore and %import, Python regex terminals, errors, and Lark as an oracle.

Lark itself (when installed) is the oracle for the language: its Earley parser
with ``lexer="dynamic_complete"`` considers every tokenisation, which is exactly
the scannerless reading tokensieve gives a Lark grammar.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cfg_oracle import accepts, inline

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar._pyregex import _case_table, case_variants, parse_python_regex
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import EMPTY, RuleRef
from tokensieve.grammar.lark import COMMON, IGNORE_RULE, parse_lark
from tokensieve.limits import Limits

DATA = Path(__file__).parent / "data"


def lark_accepts(text: str, s: str) -> bool:
    lark = pytest.importorskip("lark")
    parser = _LARK_CACHE.get(text)
    if parser is None:
        parser = _LARK_CACHE[text] = lark.Lark(text, parser="earley", lexer="dynamic_complete")
    try:
        parser.parse(s)
    except lark.exceptions.LarkError:
        return False
    return True


_LARK_CACHE: dict[str, object] = {}


# ---------------------------------------------------------- the oracle test
CASES = {
    "expr": (
        (DATA / "expr.lark").read_text(encoding="utf-8"),
        ["1+2", " x := 3 * (4 - y) ", "-1.5e3/2^x", "f(1, g())", "a b", "1+", "(1", "x :=", "f(,)", "2*-3"],
    ),
    "config": (
        (DATA / "config.lark").read_text(encoding="utf-8"),
        [
            '# settings\n[server.http]\nport = 8080 # comment\nname = "a\\"b"\n',
            'flags = [true, 1, ["x"]]\n\n',
            "[a]\nkey = \n",
            "k = 1",
            "[a.]\n",
            "",
        ],
    ),
    "adjacent": ('start: A B\nA: "a"+\nB: "a"\n', ["aa", "aaa", "a", ""]),
    "names": ("start: NAME NAME\nNAME: /[a-z]+/\n", ["ab", "abc", "a", "a b"]),
    "ignore_edges": (
        'start: "x"*\n%ignore " "\n%ignore /#[^\\n]*\\n/\n',
        ["", "   ", " x x ", "x#c\nx", "#c\n"],
    ),
    "ignore_repeat": (
        'start: WORD ("," WORD)*\nWORD: /\\w+/\n%ignore /[ \\t]+/\n',
        ["a , b,c", "a b", " a ", "a,"],
    ),
    "escapes": ('start: "\\d" "\\\\" "\\x41" "\\"" \n', ['\\d\\A"', 'd\\A"']),
    "regex_escapes": ("start: /\\d+/ /\\\\/ /a\\x2eb/ /[\\]x]/\n", ["12\\a.b]", "12\\axbx", "١٢\\a-b]"]),
    "backslash_quote": ('start: /a\\\\"/ /[\\/]+/ "\\\\n"\n', ['a"//\\n', 'a\\"//\\n', 'a"/']),
    "tilde_ignore": ('start: "a"~2..3 "b"\n%ignore " "\n', ["aa b", "a a a b", "a b", "aaaab", " a a b "]),
    "unicode_escapes": ('start: /\\u00e9\\x41/i "\\u00e9"i\n', ["ÉAÉ", "éaé", "eAé"]),
    "insensitive": ('start: "Hello"i /wor?ld/i\n', ["hELLoWOLD", "helloworld", "HELLOWORD"]),
    "flags": ("start: /a.b/s /c.d/ /e f # c\n g/x\n", ["a\nbcxdefg", "axbc\ndefg", "axbcxde fg"]),
    "ranges": ('start: "a".."c"~2..3 [ "x" ] "y"? "z"~2\n', ["abzz", "abcxzz", "abxyzz", "azz", "abcdzz"]),
    "modifiers": ('?start: _a | b -> bee\n_a.2: "a"\n!b: "b"\n', ["a", "b", "ab"]),
    "continuation": (
        'start: "a"\n  // comment\n  | "b" \\\n    "c"\n\n  | "d"\n',
        ["a", "bc", "d", "b", "ad"],
    ),
    "recursive": ('start: "(" start ")" start |\n%ignore " "\n', ["", "()", "( () ) ()", "(()", ")("]),
    "common": (
        "start: (ESCAPED_STRING | SIGNED_NUMBER | CNAME | C_COMMENT | HEXDIGIT | WORD)+\n"
        "%import common (ESCAPED_STRING, SIGNED_NUMBER, CNAME, C_COMMENT, HEXDIGIT, WORD)\n"
        "%import common.WS\n%ignore WS\n",
        ['"a\\"b" -1.5e3 _x9 /* c */', '"a"b"', "/* a */ */", "+.5", "1e", 'x2 "\\\\"'],
    ),
    "extend_override": (
        'start: A\nA: "a"\n%extend A: "b"\n%override start: A "!"\n',
        ["a!", "b!", "a"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_agrees_with_lark(name: str) -> None:
    text, samples = CASES[name]
    ours = parse_lark(text)
    for s in samples:
        assert accepts(ours, s) == lark_accepts(text, s), (name, s)


def test_scannerless_accepts_what_a_greedy_lexer_rejects() -> None:
    text = CASES["adjacent"][0]
    assert accepts(parse_lark(text), "aa")
    lark = pytest.importorskip("lark")
    with pytest.raises(lark.exceptions.LarkError):
        lark.Lark(text, parser="lalr").parse("aa")  # the lexer makes one A of both letters


@pytest.mark.parametrize("name", sorted(COMMON))
def test_common_terminals_match_lark(name: str) -> None:
    if name.startswith("_"):
        text = f"start: X\nX: {name}\n%import common.{name}\n"
    else:
        text = f"start: {name}\n%import common.{name}\n"
    ours = parse_lark(text)
    samples = [
        "", "0", "7", "a", "Z", "_", "-", "+1", "12", "1.5", ".5", "1.", "1e5", "1.5E-3", "-.5e+2", "e5",
        "abc", "a_1", "_9", "9a", " ", " \t", "\t\n\r\f ", "\r", "\n", "\r\n\n", "\n\r",
        '"x"', '"a\\"b"', '"\\\\"', '"a"b"', '""', '"a\nb"', "# c", "#", "// c", "/* c */", "/* * / */",
        "/* a */ */", "-- c", "--", "ff", "fg",
    ]  # fmt: skip
    for s in samples:
        assert accepts(ours, s) == lark_accepts(text, s), (name, s)


# ------------------------------------------------------------- structure
def test_ignore_is_inserted_between_symbols_only() -> None:
    g = parse_lark('start: A "b"\nA: "a" "a"\n%ignore " "')
    w = RuleRef(IGNORE_RULE)
    assert g.rules["A"] == parse_lark('start: A\nA: "aa"').rules["A"]  # nothing inside a terminal
    assert w in g.rules["start"].items  # type: ignore[union-attr]
    assert accepts(g, " aa b ") and not accepts(g, "a a b")


def test_importing_twice_is_harmless() -> None:
    g = parse_lark("start: WS\n%import common.WS\n%import common (WS)\n")
    assert accepts(g, " \n") and not accepts(g, "")


def test_without_ignore_there_is_no_ignore_rule() -> None:
    g = parse_lark('start: "a" "b"')
    assert IGNORE_RULE not in g.rules
    assert g.rules["start"] == parse_lark('start: "ab"').rules["start"]


def test_priorities_and_modifiers_do_not_change_the_grammar() -> None:
    plain = parse_lark('start: a B\na: "x"\nB: "y"')
    decorated = parse_lark('?start.5: _a B -> s\n_a: "x"\nB.-2: "y"'.replace("_a", "a"))
    assert plain.rules == decorated.rules


def test_default_and_custom_root() -> None:
    assert Grammar.from_lark('start: "a"').root == "start"
    with pytest.raises(GrammarError, match="must be a rule"):
        parse_lark('START: "a"', root="START")
    g = Grammar.from_lark('expr: "a"\nstart: "b"', root="expr")
    assert g.root == "expr"


def test_example_files() -> None:
    g = parse_lark((DATA / "config.lark").read_text(encoding="utf-8"))
    assert accepts(g, "[s]\nk = [1, -2.5]\n") and not accepts(g, "[s]\nk = [1, -2.5\n")
    g = parse_lark((DATA / "expr.lark").read_text(encoding="utf-8"))
    assert set(g.rules) >= {"start", "expr", "call", "VAR", "NUMBER", "WS_INLINE", IGNORE_RULE}


# --------------------------------------------------- Python regex terminals
# (pattern, flags, samples); the oracle is Python's re
PY_REGEXES = [
    (r"\d+", "", ["12", "١٢", "a", ""]),
    (r"\w+", "", ["ab_c", "é", "-", "x1", "ß"]),
    (r"\s", "", [" ", "\u00a0", "\u2028", "\x1c", "x"]),
    (r"[^\W\d]+", "", ["abc", "a1", "é"]),
    (r"a.b", "", ["a\nb", "axb", "a\rb"]),
    (r"a.b", "s", ["a\nb", "axb"]),
    (r"[]a]+", "", ["]a", "a", "b"]),
    (r"[^]a]", "", ["]", "b"]),
    (r"a{,3}", "", ["", "aaa", "aaaa"]),
    (r"a{,}b{}", "", ["b{}", "aab{}", "ab"]),
    (r"a{2", "", ["a{2", "aa"]),
    (r"hello", "i", ["HeLLo", "hellO", "hell0"]),
    (r"[a-c]+", "i", ["ABC", "abd"]),
    (r"[^a-c]", "i", ["A", "d", "D"]),
    (r"k+", "i", ["K", "\u212a", "kK"]),
    (r"stra\u00dfe", "i", ["STRASSE", "STRAẞE", "straße"]),
    (r"(?i)ab(?-i:c)", "", ["ABc", "ABC"]),
    (r"(?i:a)b", "", ["Ab", "AB"]),
    (r" a b # comment", "x", ["ab", " a b"]),
    (r"[ ]a\ b", "x", [" a b", "a b"]),
    (r"\x41\u0042\U00000043\N{LATIN SMALL LETTER D}", "", ["ABCd"]),
    (r"\0\101\1010[\1]", "", ["\0A\x410\x01"]),
    (r"[\d-]+", "", ["1-", "a"]),
    (r"(?P<x>a)|b(?:c)", "", ["a", "bc"]),
    (r"a(?#comment)b", "", ["ab"]),
    (r"\.\*\[\a\f\v", "", [".*[\x07\x0c\x0b"]),
    (r"\w", "a", ["é", "a"]),
    (r"[\w\-.]+@x", "", ["a.b-c@x"]),
    (r"a*?b+?c??d{1,2}?", "", ["bcd", "abdd", "aabbc"]),
    (r"\d", "a", ["١", "1"]),
    (r"[é]", "ai", ["É", "é"]),
]


@pytest.mark.parametrize(("pattern", "flags", "samples"), PY_REGEXES)
def test_python_regex_semantics(pattern: str, flags: str, samples: list[str]) -> None:
    dfa = ir_to_dfa(parse_python_regex(pattern, flags))
    bits = 0
    for f in flags:
        bits |= {"i": re.I, "s": re.S, "x": re.X, "m": re.M, "u": re.U, "a": re.A}[f]
    for s in samples:
        assert dfa.accepts(s.encode("utf-8")) == (re.fullmatch(pattern, s, bits) is not None), (pattern, s)


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="aAbB1_ .\n-", max_size=8))
def test_random_strings_against_python_re(s: str) -> None:
    for pattern, flags, bits in _RANDOM:
        dfa = _RANDOM_DFAS.get((pattern, flags))
        if dfa is None:
            dfa = _RANDOM_DFAS[pattern, flags] = ir_to_dfa(parse_python_regex(pattern, flags))
        assert dfa.accepts(s.encode("utf-8")) == (re.fullmatch(pattern, s, bits) is not None), (pattern, s)


_RANDOM = [
    (r"(?:[ab]+|\d)*\.?", "", 0),
    (r"[^\s_]*", "", 0),
    (r"(a|b{1,2})+[\w.-]?", "i", re.I),
    (r"\S+\s?.?", "s", re.S),
]
_RANDOM_DFAS: dict[tuple[str, str], object] = {}


def test_case_folding_matches_python_on_every_cased_character() -> None:
    keys, _ = _case_table()
    chars = "".join(map(chr, keys)) + "\u0345"
    for cp in keys:  # every character ``re`` equates with this one, and no other
        found = {ord(chars[m.start()]) for m in re.finditer(re.escape(chr(cp)), chars, re.I)}
        assert found == set(case_variants(cp)), hex(cp)
    for pattern in [r"[K-L]", r"[\w]", r"[^\W]", r"[a\W]", r"[^a-z\d]", r"[\u0370-\u03ff]"]:
        dfa = ir_to_dfa(parse_python_regex(pattern, "i"))
        for c in chars:
            assert dfa.accepts(c.encode()) == (re.fullmatch(pattern, c, re.I) is not None), (
                pattern,
                hex(ord(c)),
            )


def test_regular_lark_grammar_against_python_re() -> None:
    g = parse_lark('start: "x" NUM ("," NUM)*\nNUM: /[0-9]+/\n')
    dfa = ir_to_dfa(inline(g))
    for s in ["x1", "x1,22", "x", "x1,", "y1"]:
        assert dfa.accepts(s.encode()) == (re.fullmatch(r"x[0-9]+(?:,[0-9]+)*", s) is not None)


# ------------------------------------------------------------------ errors
ERRORS = [
    ("", 1, 1, "defines nothing"),
    ("// only a comment\n", 2, 1, "defines nothing"),
    ("start: a{x}\na{t}: t", 1, 8, "templates are not supported"),
    ("start: x\nx{t}: t", 2, 2, "templates are not supported"),
    ('start: "a"\n%declare FOO', 2, 1, "%declare is not supported"),
    ('start: "a"\n%import .other.X', 2, 9, "relative imports"),
    ('start: "a"\n%import python.NAME', 2, 9, "only Lark's common library"),
    ('start: "a"\n%import common.NOPE', 2, 9, "no terminal 'NOPE'"),
    ('start: "a"\n%import common.WS -> ws', 2, 9, "terminal name"),
    ('start: "a"\n%foo', 2, 1, "unknown statement %foo"),
    ('start: "x" ~ 3..2', 1, 12, "bad repetition bounds"),
    ('start: "x"**', 1, 12, "only one operator"),
    ("start: *", 1, 8, "nothing to repeat"),
    ("A: B\nB: A\nstart: A", 2, 4, "recursive"),
    ("start: x", 1, 8, "undefined rule 'x'"),
    ("start: X", 1, 8, "undefined terminal 'X'"),
    ('start: A\nA: b\nb: "x"', 2, 4, "rules cannot be used inside terminals"),
    ('start: "a"\nstart: "b"', 2, 1, "defined more than once"),
    ('start: A\nA: "a"\n%import common.DIGIT -> A', 3, 9, "defined more than once"),
    ('main: "a"', 1, 1, "no rule named 'start'"),
    ('start: "abc', 1, 8, "unterminated string"),
    ("start: /abc", 1, 8, "unterminated regular expression"),
    ("start: /a\nb/", 1, 8, "x (verbose) flag"),
    ("start: /a$/", 1, 10, "anchor"),
    ("start: /^a/", 1, 9, "anchor"),
    ("start: /\\bfoo/", 1, 9, "\\b"),
    ("start: /(?=a)a/", 1, 9, "lookaround"),
    ("start: /(a)\\1/", 1, 12, "backreferences"),
    ("start: /a*+/", 1, 11, "possessive"),
    ("start: /\\q/", 1, 9, "bad escape \\q"),
    ("start: /[z-a]/", 1, 10, "out of order"),
    ("start: /(a/", 1, 9, "missing ')'"),
    ("start: /a/il", 1, 12, "locale"),
    ('start: "\\x4g"', 1, 9, "2 hex digits"),
    ('start: "ab".."c"', 1, 8, "single-character"),
    ('start: "c".."a"', 1, 8, "out of order"),
    ('start: ("a"', 1, 8, "unclosed '('"),
    ('start: ["a")', 1, 12, "unbalanced ')'"),
    ('start: "a" ]', 1, 12, "unbalanced ']'"),
    ('start: ?a\na: "x"', 1, 8, "prefixes are only allowed"),
    ('start: "a" %ignore " "', 1, 12, "must start its own line"),
    ('start: "a" "b" {', 1, 16, "'{' is not Lark syntax"),
    ('Start: "a"', 1, 1, "lowercase"),
    ('!A: "a"\nstart: A', 1, 1, "applies to rules"),
    ('start "a"', 1, 7, "expected ':'"),
    ('start: "a"\n%override missing: "b"', 2, 11, "not defined"),
    ('start.x: "a"', 1, 6, "expected a number"),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), ERRORS)
def test_errors_have_line_and_column(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_lark(text)
    err = info.value
    assert words in err.message
    assert (err.line, err.column) == (line, column), err


def test_limits() -> None:
    with pytest.raises(LimitExceeded) as info:
        parse_lark("start: " + "(" * 10_000 + '"a"' + ")" * 10_000)
    assert info.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded):
        parse_lark("start: " + "[" * 10_000 + '"a"' + "]" * 10_000)
    with pytest.raises(LimitExceeded):
        parse_lark("start: /" + "(" * 10_000 + "a" + ")" * 10_000 + "/")
    with pytest.raises(LimitExceeded):
        parse_lark('start: "a"~100000000')
    with pytest.raises(LimitExceeded) as info:  # Unicode classes must not expand without bound
        parse_python_regex("\\w" * 2000, limits=Limits(max_pattern_length=4000))
    assert info.value.limit == "max_pattern_length"


def test_empty_ignore_rule_when_only_mentioned() -> None:
    g = parse_lark("start: /a\n%ignore b/x\n")  # a line that merely looks like %ignore
    assert g.rules.get(IGNORE_RULE, EMPTY) == EMPTY
