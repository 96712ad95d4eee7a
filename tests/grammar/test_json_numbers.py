"""JSON numbers and integers within bounds, against exact Decimal/Fraction arithmetic.

Candidate texts come from enumeration and hypothesis (values near the bounds,
huge magnitudes, many spellings of the same value: ``-0``, ``1.0``, ``2.500``);
the oracle parses each text as an exact decimal and compares.
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import LimitExceeded
from tokensieve.grammar.ir import NOTHING, Node, is_nothing
from tokensieve.grammar.json_numbers import (
    JSON_NUMBER,
    fixed_width_range,
    integer_range_is_empty,
    json_integer,
    json_number,
    number_range_is_empty,
)
from tokensieve.limits import Limits

PLAIN = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
EXPONENT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][+-]?[0-9]+")


class Accepts:
    def __init__(self, node: Node) -> None:
        self.dfa = None if is_nothing(node) else ir_to_dfa(node)

    def __call__(self, text: str) -> bool:
        return self.dfa is not None and self.dfa.accepts(text.encode())


def exact(bound: object) -> Fraction:
    if isinstance(bound, float):
        return Fraction(Decimal(repr(bound)))
    return Fraction(bound)  # type: ignore[arg-type]


def satisfies(value: Fraction, bounds: dict[str, object]) -> bool:
    checks = {
        "minimum": lambda b: value >= b,
        "maximum": lambda b: value <= b,
        "exclusive_minimum": lambda b: value > b,
        "exclusive_maximum": lambda b: value < b,
    }
    return all(bounds.get(k) is None or f(exact(bounds[k])) for k, f in checks.items())


def spellings_of(value: Fraction, rng: random.Random) -> set[str]:
    """Plain JSON texts for a decimal value (with extra zeros, -0 for zero)."""
    d = (
        Decimal(value.numerator) / Decimal(value.denominator)
        if value.denominator != 1
        else Decimal(value.numerator)
    )
    text = format(d, "f")
    out = {text}
    if "." not in text:
        out.add(text + ".0")
        out.add(text + ".000")
    else:
        out.add(text + "0")
    if value == 0:
        out |= {"-0", "-0.0", "0.00"}
    return out


def candidates(bound_values: list[Fraction], rng: random.Random) -> set[str]:
    texts: set[str] = set()
    for b in bound_values:
        for delta in (
            Fraction(0),
            Fraction(1),
            Fraction(-1),
            Fraction(1, 10),
            Fraction(-1, 10),
            Fraction(1, 1000),
        ):
            for v in (b + delta, b - delta / 7 if delta else b, -b + delta):
                if (v * 10**6).denominator == 1:
                    texts |= spellings_of(v, rng)
        fl = Fraction(int(b) if b >= 0 else -int(-b))
        texts |= spellings_of(fl, rng) | spellings_of(fl + 1, rng) | spellings_of(fl - 1, rng)
    for i in range(-25, 26):
        texts.add(str(i))
    for _ in range(300):
        sign = rng.choice(["", "-"])
        whole = str(rng.choice([0, rng.randint(1, 99), rng.randint(100, 10**6)]))
        frac = (
            ""
            if rng.random() < 0.4
            else "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 4)))
        )
        texts.add(sign + whole + frac)
    texts |= {"", "-", "01", "1.", ".5", "-.5", "+1", "1e2", "1E-2", "0x10", "--1", "1.2.3", " 1", "00.5"}
    return texts


def check(bounds: dict[str, object], texts: set[str]) -> None:
    ints = Accepts(json_integer(**bounds))  # type: ignore[arg-type]
    nums = Accepts(json_number(**bounds))  # type: ignore[arg-type]
    for t in texts:
        ok = PLAIN.fullmatch(t) is not None and satisfies(Fraction(Decimal(t)), bounds)
        is_int = ok and Fraction(Decimal(t)).denominator == 1
        assert ints(t) == is_int, (bounds, t)
        if not bounds and EXPONENT.fullmatch(t):
            ok = True  # without bounds the whole grammar, exponents included
        assert nums(t) == ok, (bounds, t)


BOUNDS = [
    {},
    {"minimum": 0},
    {"minimum": -5, "maximum": 17},
    {"exclusive_minimum": 1.5, "exclusive_maximum": 99.5},
    {"minimum": -100, "maximum": -3},
    {"maximum": 10},
    {"minimum": 7, "maximum": 7},
    {"exclusive_minimum": -2, "exclusive_maximum": 2},
    {"minimum": Decimal("-0.5"), "maximum": Decimal("0.5")},
    {"exclusive_minimum": 0, "exclusive_maximum": 0.0001},
    {"minimum": 1.25, "maximum": 1.75},
    {"minimum": 1.25, "exclusive_maximum": 1.75},
    {"exclusive_minimum": 1.05, "maximum": 12.05},
    {"minimum": -1.5, "exclusive_maximum": -1.25},
    {"minimum": 0, "maximum": 0},
    {"minimum": -0.0, "maximum": 0.0},
    {"exclusive_minimum": 0.1},
    {"maximum": -0.1},
    {"minimum": 10**30, "maximum": 10**30 + 5},
    {"minimum": -(10**30)},
    {"exclusive_maximum": 1e30},
    {"minimum": Decimal("123456789012345678901234567890.5")},
    {"minimum": 2, "maximum": 1},
    {"minimum": 3, "exclusive_maximum": 3},
    {"minimum": 3, "exclusive_minimum": 2, "maximum": 5, "exclusive_maximum": 5},
    {"minimum": 1.1, "maximum": 1.9},
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=[str(b) for b in BOUNDS])
def test_bounds_brute_force(bounds: dict[str, object]) -> None:
    rng = random.Random(str(bounds))
    values = [exact(v) for v in bounds.values() if v is not None] or [Fraction(0)]
    check(bounds, candidates(values, rng))


bound_value = st.one_of(
    st.integers(-(10**40), 10**40),
    st.integers(-300, 300),
    st.integers(-(10**9), 10**9).map(lambda n: Decimal(n).scaleb(-3)),
    st.integers(-(10**8), 10**8).map(lambda n: n / 100),
)


@settings(max_examples=60, deadline=None)
@given(
    st.none() | bound_value,
    st.none() | bound_value,
    st.none() | bound_value,
    st.none() | bound_value,
    st.integers(0, 2**32),
)
def test_bounds_hypothesis(a: object, b: object, c: object, d: object, seed: int) -> None:
    names = ("minimum", "maximum", "exclusive_minimum", "exclusive_maximum")
    bounds = {k: v for k, v in zip(names, (a, b, c, d), strict=True) if v is not None}
    rng = random.Random(seed)
    values = [exact(v) for v in bounds.values()] or [Fraction(0)]
    texts = candidates(values, rng)
    check(bounds, set(rng.sample(sorted(texts), min(len(texts), 150))))
    # emptiness helpers agree with the oracle on the integer and rational lines
    lo = max((exact(v) for k, v in bounds.items() if "min" in k), default=None)
    hi = min((exact(v) for k, v in bounds.items() if "max" in k), default=None)
    if lo is not None and hi is not None:
        strict = any(k.startswith("exclusive") and exact(v) in (lo, hi) for k, v in bounds.items())
        assert number_range_is_empty(**bounds) == (lo > hi or (lo == hi and strict))  # type: ignore[arg-type]
    some_int = (
        any(satisfies(Fraction(n), bounds) for n in range(int(lo or 0) - 2, int(hi or 0) + 3))
        or lo is None
        or hi is None
    )
    if lo is not None and hi is not None and hi - lo < 10**4:
        assert integer_range_is_empty(**bounds) == (not some_int)  # type: ignore[arg-type]
        assert is_nothing(json_integer(**bounds)) == (not some_int)  # type: ignore[arg-type]


def test_unbounded_number_is_the_json_grammar() -> None:
    node = json_number()
    assert node is JSON_NUMBER
    dfa = ir_to_dfa(node)
    rng = random.Random(7)
    pieces = ["-", "0", "1", "9", ".", "e", "E", "+", "-", "5", "00"]
    texts = {"".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    texts |= {"0", "-0", "1e5", "1E+5", "1.5e-3", "-0.0E0", "01", "1.", ".1", "1e", "1e+", "--1"}
    for t in texts:
        try:
            value = json.loads(t)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        except ValueError:
            ok = False
        assert dfa.accepts(t.encode()) == ok, t


def test_integer_without_fractions() -> None:
    acc = Accepts(json_integer(-3, 3, integral_fractions=False))
    assert acc("-3") and acc("-0") and acc("3") and not acc("1.0") and not acc("4")


def test_bounded_numbers_leave_out_exponents() -> None:
    acc = Accepts(json_number(0, 1000))
    assert acc("100") and not acc("1e2")


# ---------------------------------------------------------------- multipleOf
MULTIPLES = [
    ({}, 3),
    ({}, 7),
    ({"minimum": -50, "maximum": 120}, 7),
    ({"minimum": 0}, 12),
    ({}, 10),
    ({}, 1000),
    ({}, 64),
    ({"minimum": 10**20}, 9),
    ({}, Decimal("0.5")),
    ({}, Decimal("1.5")),
    ({}, Decimal("0.25")),
    ({"minimum": -10, "maximum": 10}, Decimal("0.3")),
    ({}, 0.01),
    ({"minimum": 1, "maximum": 5}, Decimal("0.04")),
    ({}, Decimal("0.0075")),
    ({}, Fraction(1, 3)),
    ({}, Fraction(2, 3)),
    ({"exclusive_minimum": 0, "maximum": 1}, 0.1),
    ({"minimum": 1, "maximum": 2}, 5),
]


@pytest.mark.parametrize(("bounds", "step"), MULTIPLES, ids=[f"{b}-{s}" for b, s in MULTIPLES])
def test_multiple_of(bounds: dict[str, object], step: object) -> None:
    rng = random.Random(f"{bounds}{step}")
    texts = candidates([exact(v) for v in bounds.values()] or [Fraction(0)], rng)
    m = exact(step)
    for k in range(-40, 41):
        texts |= spellings_of(m * k, rng)
        texts |= spellings_of(m * k + Fraction(1, 100), rng)
    ints = Accepts(json_integer(**bounds, multiple_of=step))  # type: ignore[arg-type]
    num_node = json_number(**bounds, multiple_of=step)  # type: ignore[arg-type]
    assert num_node is not None
    nums = Accepts(num_node)
    for t in texts:
        ok = PLAIN.fullmatch(t) is not None and satisfies(Fraction(Decimal(t)), bounds)
        ok = ok and (Fraction(Decimal(t)) / m).denominator == 1
        assert nums(t) == ok, (bounds, step, t)
        assert ints(t) == (ok and Fraction(Decimal(t)).denominator == 1), (bounds, step, t)


def test_multiple_of_too_large_is_reported() -> None:
    step = Decimal(1) / Decimal(3)  # 0.3333... as a 28-digit decimal
    assert json_number(multiple_of=step) is None
    with pytest.raises(NotImplementedError):
        json_integer(multiple_of=10**9 + 7)
    # a narrow range needs no remainder automaton
    acc = Accepts(json_integer(0, 10**10, multiple_of=10**9 + 7))
    assert acc("0") and acc(str(10**9 + 7)) and acc(str(9 * (10**9 + 7))) and not acc("7")


# -------------------------------------------------------------------- misc
def test_fixed_width_range_exhaustive() -> None:
    for lo, hi in [(0, 999), (5, 5), (17, 342), (100, 199), (0, 0), (998, 999), (250, 255)]:
        dfa = ir_to_dfa(fixed_width_range(lo, hi, 3))
        for v in range(1000):
            assert dfa.accepts(f"{v:03d}".encode()) == (lo <= v <= hi)
        assert not dfa.accepts(str(lo).encode()) or lo >= 100
    digit = None
    hexa = ir_to_dfa(fixed_width_range(0x1F, 0x2B3, 3, base=16, digit=digit))  # default digits: 0-9 only
    assert hexa.accepts(b"100") and not hexa.accepts(b"01f")
    assert fixed_width_range(3, 2, 2) is NOTHING


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        json_integer(float("nan"))
    with pytest.raises(ValueError):
        json_number(multiple_of=0)
    with pytest.raises(ValueError):
        json_number(multiple_of=-2)
    with pytest.raises(TypeError):
        json_integer(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        json_number("1")  # type: ignore[arg-type]
    with pytest.raises(LimitExceeded):
        json_number(Decimal("1e-200"), limits=Limits(max_repetition=100))
    with pytest.raises(LimitExceeded):
        json_integer(10**200, limits=Limits(max_repetition=100))


def test_infinite_bounds() -> None:
    assert is_nothing(json_integer(float("inf")))
    assert is_nothing(json_number(maximum=float("-inf")))
    acc = Accepts(json_integer(float("-inf"), 3))
    assert acc("-1000000") and acc("3") and not acc("4")


def test_huge_bounds_are_cheap() -> None:
    big = 10**120 + 12345
    node = json_integer(big, 2 * big)
    dfa = ir_to_dfa(node)
    assert dfa.accepts(str(big).encode()) and dfa.accepts(str(2 * big).encode())
    assert not dfa.accepts(str(big - 1).encode()) and not dfa.accepts(str(2 * big + 1).encode())
    assert dfa.num_states < 5000


def test_multiple_of_decimal_places_limit() -> None:
    with pytest.raises(LimitExceeded):
        json_number(multiple_of=Decimal("1e-500"), limits=Limits(max_repetition=100))
    acc = Accepts(json_number(multiple_of=Decimal("1e-30")))  # type: ignore[arg-type]
    assert acc("0." + "0" * 29 + "1") and not acc("0." + "0" * 30 + "1") and acc("1." + "0" * 40)


def test_digits_range_brute_force() -> None:
    from tokensieve.grammar.json_numbers import digits_range

    texts = {str(v) for v in range(-1200, 1201)} | {"-0", "01", "-01", "00", "1.0"}
    for lo, hi in [(None, None), (-1000, 999), (5, None), (None, -7), (0, 0), (-19, -10), (98, 1001)]:
        acc = Accepts(digits_range(lo, hi))
        for t in texts:
            ok = PLAIN.fullmatch(t) is not None and "." not in t
            ok = ok and (lo is None or int(t) >= lo) and (hi is None or int(t) <= hi)
            assert acc(t) == ok, (lo, hi, t)
    assert digits_range(3, 2) is NOTHING
