"""Compiled regexes against Python's ``re`` and brute force.

Random patterns are built from a small grammar where ECMA-262 and Python agree
once a few escapes are spelled out (``.``, ``\\d``, ``\\w``, ``\\s`` and their
complements become explicit classes on the Python side). Each pattern comes
with a sampler of strings it matches, written from the pattern's structure (it
does not look at the automaton), so every check has an independent oracle.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve.automata import ByteDFA, ir_to_dfa
from tokensieve.errors import GrammarError
from tokensieve.grammar import ir, parse_regex
from tokensieve.grammar.regex import regex_to_dfa

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# characters the random strings are made of: ASCII, 2-, 3- and 4-byte UTF-8,
# line terminators and the non-ASCII white space ECMA-262 knows
POOL = list("ab-._ Z09\t\n\r") + [
    "é",
    "ß",
    "€",
    "\u2028",
    "\u00a0",
    "\u3000",
    "\ufeff",
    "😀",
    "\U0010ffff",
    "\x1c",
    "\x85",
]

SPACE_RANGES = [
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
]  # fmt: skip
DIGIT_RANGES = [(0x30, 0x39)]
WORD_RANGES = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
LINE_TERMINATORS = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]


def py_ranges(ranges: list[tuple[int, int]]) -> str:
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def in_ranges(cp: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


@dataclass
class Piece:
    """A pattern fragment in both dialects, with a sampler of its strings."""

    ecma: str
    py: str
    sample: Callable[[random.Random], str]
    small: bool  # matches only strings over ENUM_ALPHABET
    bounded: bool  # no unbounded quantifier
    max_len: int  # longest match in characters (bounded pieces)


ECMA_META = set("\\^$.|?*+()[]{}/")


def ecma_char(c: str, rnd: random.Random) -> str:
    cp = ord(c)
    style = rnd.randrange(4)
    if style == 0 and cp < 0x100:
        return f"\\x{cp:02x}"
    if style == 1 and cp < 0x10000:
        return f"\\u{cp:04X}"
    if style == 2 and cp >= 0x10000:
        hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        return f"\\u{hi:04x}\\u{lo:04x}"
    if style == 3:
        return f"\\u{{{cp:x}}}"
    if c in ECMA_META:
        return "\\" + c
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if c == "\r":
        return "\\r"
    return c


def literal_piece(c: str, rnd: random.Random) -> Piece:
    return Piece(ecma_char(c, rnd), re.escape(c), lambda r: c, c in ENUM_ALPHABET, True, 1)


def class_piece(rnd: random.Random) -> Piece:
    members = rnd.sample(POOL, rnd.randint(1, 4))
    ranges = [(ord(c), ord(c)) for c in members]
    parts = [ecma_char(c, rnd) if c not in "-]^" else "\\" + c for c in members]
    if rnd.random() < 0.5:
        lo, hi = rnd.choice(
            [("a", "c"), ("0", "5"), ("à", "ÿ"), ("😀", "🙏"), ("\u2000", "\u200f"), ("A", "z")]
        )
        ranges.append((ord(lo), ord(hi)))
        parts.append(f"{ecma_char(lo, rnd)}-{ecma_char(hi, rnd)}")
    if rnd.random() < 0.3:
        name, rs = rnd.choice([("d", DIGIT_RANGES), ("w", WORD_RANGES), ("s", SPACE_RANGES)])
        ranges += rs
        parts.append("\\" + name)
    negate = rnd.random() < 0.3
    rnd.shuffle(parts)
    ecma = "[" + ("^" if negate else "") + "".join(parts) + "]"
    py = "[" + ("^" if negate else "") + py_ranges(sorted(ranges)) + "]"

    def member(cp: int) -> bool:
        return in_ranges(cp, ranges) != negate and not 0xD800 <= cp <= 0xDFFF

    return Piece(ecma, py, chooser(member), False, True, 1)


def chooser(member: Callable[[int], bool]) -> Callable[[random.Random], str]:
    def sample(r: random.Random) -> str:
        candidates = [c for c in POOL if member(ord(c))]
        for _ in range(20):
            cp = r.choice(
                [r.randrange(0x80), r.randrange(0x800), r.randrange(0x10000), r.randrange(0x110000)]
            )
            if member(cp):
                candidates.append(chr(cp))
        if not candidates:
            raise LookupError("no member found")
        return r.choice(candidates)

    return sample


def escape_piece(rnd: random.Random) -> Piece:
    name = rnd.choice(["d", "w", "s", "D", "W", "S", "."])
    rs = {"d": DIGIT_RANGES, "w": WORD_RANGES, "s": SPACE_RANGES, ".": LINE_TERMINATORS}[name.lower()]
    negate = name.isupper() or name == "."
    py = "[" + ("^" if negate else "") + py_ranges(rs) + "]"

    def member(cp: int) -> bool:
        return in_ranges(cp, rs) != negate and not 0xD800 <= cp <= 0xDFFF

    return Piece(name if name == "." else "\\" + name, py, chooser(member), False, True, 1)


def concat_piece(parts: list[Piece]) -> Piece:
    return Piece(
        "".join(p.ecma for p in parts),
        "".join(p.py for p in parts),
        lambda r: "".join(p.sample(r) for p in parts),
        all(p.small for p in parts),
        all(p.bounded for p in parts),
        sum(p.max_len for p in parts),
    )


def alt_piece(parts: list[Piece]) -> Piece:
    return Piece(
        "|".join(p.ecma for p in parts),
        "|".join(p.py for p in parts),
        lambda r: r.choice(parts).sample(r),
        all(p.small for p in parts),
        all(p.bounded for p in parts),
        max(p.max_len for p in parts),
    )


def group_piece(p: Piece, rnd: random.Random, counter: itertools.count) -> Piece:
    kind = rnd.randrange(3)
    if kind == 0:
        return Piece(f"({p.ecma})", f"({p.py})", p.sample, p.small, p.bounded, p.max_len)
    if kind == 1:
        return Piece(f"(?:{p.ecma})", f"(?:{p.py})", p.sample, p.small, p.bounded, p.max_len)
    name = f"g{next(counter)}"
    return Piece(f"(?<{name}>{p.ecma})", f"(?P<{name}>{p.py})", p.sample, p.small, p.bounded, p.max_len)


def repeat_piece(p: Piece, rnd: random.Random, counter: itertools.count, allow_unbounded: bool) -> Piece:
    forms = [("?", 0, 1), ("{2}", 2, 2), ("{0,2}", 0, 2), ("{1,3}", 1, 3)]
    if allow_unbounded:
        forms += [("*", 0, None), ("+", 1, None), ("{2,}", 2, None)]
    text, lo, hi = rnd.choice(forms)
    lazy = "?" if rnd.random() < 0.2 else ""
    inner = group_piece(p, rnd, counter)

    def sample(r: random.Random) -> str:
        top = hi if hi is not None else lo + 3
        return "".join(inner.sample(r) for _ in range(r.randint(lo, top)))

    bounded = p.bounded and hi is not None
    return Piece(
        inner.ecma + text + lazy, inner.py + text + lazy, sample, p.small, bounded, p.max_len * (hi or 0)
    )


ENUM_ALPHABET = ["a", "b", "é", "😀"]


def build_piece(
    rnd: random.Random, depth: int, small: bool, unbounded: bool, counter: itertools.count
) -> Piece:
    choice = rnd.random()
    if depth <= 0 or choice < 0.35:
        if small:
            if rnd.random() < 0.7:
                return literal_piece(rnd.choice(ENUM_ALPHABET), rnd)
            members = rnd.sample(ENUM_ALPHABET, rnd.randint(1, 3))
            ecma = "[" + "".join(ecma_char(c, rnd) for c in members) + "]"
            py = "[" + "".join(re.escape(c) for c in members) + "]"
            return Piece(ecma, py, lambda r: r.choice(members), True, True, 1)
        kind = rnd.random()
        if kind < 0.45:
            return literal_piece(rnd.choice(POOL), rnd)
        if kind < 0.75:
            return class_piece(rnd)
        return escape_piece(rnd)
    sub = [build_piece(rnd, depth - 1, small, unbounded, counter) for _ in range(rnd.randint(2, 3))]
    if choice < 0.6:
        return concat_piece(sub)
    if choice < 0.8:
        return group_piece(alt_piece(sub), rnd, counter)
    return repeat_piece(concat_piece(sub[:1]), rnd, counter, unbounded)


def make_pattern(seed: int, *, small: bool = False, unbounded: bool = True, depth: int = 3) -> Piece:
    rnd = random.Random(seed)
    piece = build_piece(rnd, depth, small, unbounded, itertools.count())
    if rnd.random() < 0.2:
        piece = Piece(
            "^" + piece.ecma + "$", piece.py, piece.sample, piece.small, piece.bounded, piece.max_len
        )
    return piece


def noise(rnd: random.Random, n: int) -> list[str]:
    return ["".join(rnd.choice(POOL) for _ in range(rnd.randint(0, 6))) for _ in range(n)]


def mutate(rnd: random.Random, s: str) -> str:
    chars = list(s)
    op = rnd.randrange(3)
    i = rnd.randint(0, len(chars))
    if op == 0 or not chars:
        chars.insert(i, rnd.choice(POOL))
    elif op == 1:
        del chars[min(i, len(chars) - 1)]
    else:
        chars[min(i, len(chars) - 1)] = rnd.choice(POOL)
    return "".join(chars)


def compile_or_none(ecma: str) -> ByteDFA | None:
    try:
        return regex_to_dfa(ecma)
    except GrammarError as exc:
        assert "matches no string" in str(exc)
        return None


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 4))
def test_matches_like_python_re(seed: int, depth: int, checks) -> None:
    piece = make_pattern(seed, depth=depth)
    rnd = random.Random(seed ^ 0x5EED)
    compiled = re.compile(piece.py)
    dfa = compile_or_none(piece.ecma)
    positives = []
    for _ in range(12):
        try:
            positives.append(piece.sample(rnd))
        except LookupError:
            break
    for s in positives:
        assert compiled.fullmatch(s), (piece.ecma, piece.py, s)  # the test's own translation
    if dfa is None:
        assert not positives
        return
    checks.assert_trimmed(dfa)
    if dfa.num_states <= 60:
        checks.assert_minimal(dfa)
    positives = [s for s in positives if len(s) <= 16]  # keeps Python's backtracking cheap
    strings = positives + [mutate(rnd, s) for s in positives] + noise(rnd, 30)
    for s in strings:
        expected = compiled.fullmatch(s) is not None
        assert dfa.accepts(s.encode()) == expected, (piece.ecma, s)
    # every byte prefix of a member is viable, including those splitting a character
    for s in positives:
        data = s.encode()
        for k in range(len(data) + 1):
            assert dfa.is_prefix(data[:k]), (piece.ecma, data[:k])
    # whatever the automaton calls viable really extends to a match
    tails = checks.completions(dfa)
    for s in strings:
        data = s.encode()
        for k in range(len(data) + 1):
            state = dfa.step(dfa.start, data[:k])
            if state < 0:
                continue
            text = (data[:k] + tails[state]).decode("utf-8")
            assert compiled.fullmatch(text), (piece.ecma, data[:k], tails[state])


def enumerate_strings(max_len: int) -> list[str]:
    out = [""]
    for n in range(1, max_len + 1):
        out += ["".join(t) for t in itertools.product(ENUM_ALPHABET, repeat=n)]
    return out


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_viable_prefixes_are_exact(seed: int) -> None:
    """Over a 4-letter alphabet and bounded patterns, viable prefixes by exhaustive enumeration."""
    for attempt in range(20):
        piece = make_pattern(seed + attempt, small=True, unbounded=False, depth=3)
        if piece.max_len <= 5:
            break
    else:
        piece = make_pattern(seed, small=True, unbounded=False, depth=1)
    assert piece.small and piece.bounded
    compiled = re.compile(piece.py)
    universe = enumerate_strings(min(piece.max_len, 5))
    members = [s for s in universe if compiled.fullmatch(s)]
    dfa = compile_or_none(piece.ecma)
    if dfa is None:
        assert not members
        return
    viable = {m.encode()[:k] for m in members for k in range(len(m.encode()) + 1)}
    candidates = {s.encode()[:k] for s in universe for k in range(len(s.encode()) + 1)}
    candidates |= {v + b"\xff" for v in viable} | {v + b"\x80" for v in viable}
    for data in candidates:
        assert dfa.is_prefix(data) == (data in viable), (piece.ecma, data)
    accepted = {m.encode() for m in members}
    for data in candidates:
        assert dfa.accepts(data) == (data in accepted), (piece.ecma, data)


SAME_LANGUAGE = [
    ("a|b", "[ab]"),
    ("(ab)*a", "a(ba)*"),
    ("x{2,3}", "xx|xxx"),
    ("(a|b)*", "[ab]*"),
    (r"\d", "[0-9]"),
    ("(a*)*", "a*"),
    ("a+?b", "aa*b"),
    ("(?:)a", "a"),
    ("[\\s\\S]", "[^]"),
    (".", "[^\\n\\r\\u2028\\u2029]"),
    ("é|€", "\\u00e9|\\u20ac"),
    ("\\uD83D\\uDE00", "\\u{1F600}"),
    ("(a|ab)(c|bcd)", "abcd|ac|abc|abbcd"),
    ("(a{1,2}){2}", "a{2,4}"),
    ("(a{2}){1,2}", "aa|aaaa"),
]


@pytest.mark.parametrize(("left", "right"), SAME_LANGUAGE)
def test_equal_languages_give_identical_tables(left: str, right: str, checks) -> None:
    a, b = regex_to_dfa(left), regex_to_dfa(right)
    assert checks.isomorphic(a, b)
    assert a.same_as(b)  # breadth-first numbering makes the minimal automaton canonical


KNOWN = [
    (r"\d{4}-\d{2}-\d{2}", ["2024-01-31"], ["2024-1-31", "2024-01-31 ", "٢٠٢٤-01-31"]),
    (
        r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
        ["0.0.0.0", "255.255.255.255", "192.168.1.10"],
        ["256.0.0.0", "01.1.1.1", "1.1.1", "1.1.1.1."],
    ),
    (r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$", ["a.b@c.de"], ["a@b", "a@b.c", "@b.cd"]),
    (r"[a-z]+( [a-z]+)*", ["hello world"], ["hello  world", " hello", "hello "]),
    (
        r"\s",
        [" ", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u202f", "\u205f", "\u3000", "\ufeff", "\v"],
        ["\x1c", "\x85", "\u200b", "a"],
    ),
    (r"\S", ["a", "\x1c", "\x85", "😀"], [" ", "\ufeff"]),
    (r"\w+", ["abc_09"], ["é", "a-b"]),
    (r"\W", ["é", "-", "😀"], ["a", "_"]),
    (r".", ["a", "\t", "😀", "\u2027", "\u202a"], ["\n", "\r", "\u2028", "\u2029", ""]),
    (r"[^a]", ["b", "\n", "😀", "\U0010ffff"], ["a", ""]),
    (r"\cJ\cm", ["\n\r"], []),
    (r"\0\x41\u0042\u{43}", ["\x00ABC"], []),
    (r"a{", ["a{"], []),
    (r"x{,5}", ["x{,5}"], ["xxxxx"]),
    (r"a}]", ["a}]"], []),
    (r"[\w-.]+", ["a-b.c"], ["a b"]),
    (r"[\d-z]", ["5", "-", "z"], ["a"]),
    (r"[a\-z]", ["a", "-", "z"], ["b"]),
    (r"[\b]", ["\x08"], ["b"]),
    (r"\/\\\.\*", ["/\\.*"], []),
    (r"(?<year>\d{4})-(?:\d\d)", ["2024-01"], []),
    (r"a|^b$|c", ["a", "b", "c"], [""]),
    (r"(^a)?b", ["ab", "b"], ["a"]),
    (r"^$", [""], ["a"]),
    (r"(a|)", ["a", ""], ["aa"]),
    (r"[]a|b", ["b"], ["a", ""]),
    (r"[^]", ["\n", "x"], [""]),
    (r"a*?b+?c??", ["b", "aabbc"], ["c"]),
]


@pytest.mark.parametrize(("pattern", "good", "bad"), KNOWN)
def test_known_patterns(pattern: str, good: list[str], bad: list[str], checks) -> None:
    dfa = regex_to_dfa(pattern)
    checks.assert_trimmed(dfa)
    checks.assert_minimal(dfa)
    for s in good:
        assert dfa.accepts(s.encode()), s
    for s in bad:
        assert not dfa.accepts(s.encode()), s


def test_empty_language_is_an_error() -> None:
    for pattern in ["[]", "a[]", "[^\\s\\S]", "([]|[])+", "[\\uD800-\\uDFFF]"]:
        with pytest.raises(GrammarError, match="matches no string"):
            regex_to_dfa(pattern)
    with pytest.raises(GrammarError, match="matches no string"):
        ir_to_dfa(ir.NOTHING)


def test_ir_with_dead_branches_is_trimmed(checks) -> None:
    # built without the simplifying constructors, so the dead parts reach the automaton
    node = ir.Alt(
        (
            ir.Concat((ir.Literal(b"ab"), ir.CharClass(()))),
            ir.Literal(b"ac"),
            ir.Repeat(ir.ByteClass(()), 0, 3),
        )
    )
    dfa = ir_to_dfa(node)
    checks.assert_trimmed(dfa)
    checks.assert_minimal(dfa)
    assert dfa.accepts(b"ac") and dfa.accepts(b"") and not dfa.accepts(b"ab")
    assert not dfa.is_prefix(b"ab")


def test_surrogate_only_class_matches_nothing() -> None:
    with pytest.raises(GrammarError, match="matches no string"):
        ir_to_dfa(ir.CharClass(((0xD800, 0xDFFF),)))
    dfa = ir_to_dfa(ir.Alt((ir.CharClass(((0xD900, 0xDA00),)), ir.Literal(b"x"))))
    assert dfa.num_states == 2 and dfa.accepts(b"x") and not dfa.accepts(b"")


def test_raw_byte_classes(checks) -> None:
    node = ir.concat(ir.byte_class([(0x80, 0xFF)]), ir.literal(b"\x00"))
    dfa = ir_to_dfa(node)
    checks.assert_minimal(dfa)
    assert dfa.accepts(b"\xff\x00") and not dfa.accepts(b"\x7f\x00")


def test_rule_reference_is_rejected() -> None:
    with pytest.raises(GrammarError, match="unresolved rule reference"):
        ir_to_dfa(ir.concat(ir.literal("a"), ir.RuleRef("value")))


def test_dfa_helpers() -> None:
    dfa = regex_to_dfa("[ab]*c")
    assert dfa.start == 0 and dfa.num_states == 2
    assert dfa.step(0, b"abab") == 0 and dfa.step(0, b"abx") == -1
    assert sorted(dfa.self_loop_bytes(0).tolist()) == [ord("a"), ord("b")]
    assert not dfa.transitions.flags.writeable and not dfa.accepting.flags.writeable
    assert dfa.is_prefix(b"") and dfa.is_prefix(b"ab") and not dfa.is_prefix(b"cc")
    with pytest.raises(ValueError):
        ByteDFA(dfa.transitions[:, :10], dfa.accepting, 0)


def test_deep_nesting_without_recursion(checks) -> None:
    from tokensieve.limits import Limits

    limits = Limits(max_nesting_depth=20_000)
    deep = "(a|b" * 3000 + ")" * 3000
    dfa = regex_to_dfa(deep, limits)
    checks.assert_trimmed(dfa)
    assert dfa.accepts(b"b" * 2999 + b"a") and dfa.accepts(b"a") and not dfa.accepts(b"b" * 3001)
    assert parse_regex("(" * 10_000 + "x" + ")" * 10_000, limits) == ir.Literal(b"x")
