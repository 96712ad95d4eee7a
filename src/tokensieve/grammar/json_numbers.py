"""JSON numbers and integers within bounds, as regex IR over the bytes of the JSON text.

Every function here returns the *exact* set of JSON number texts (RFC 8259
grammar) whose value satisfies the constraints, built digit by digit: bounds
of any size (``10**300``, ``Decimal("1e-50")``) cost IR proportional to their
number of digits, never to their magnitude.

Values follow JSON Schema: ``-0`` is zero, and a number with a zero fraction
(``1.0``, ``-3.00``) is an integer. Bounds may be ``int``, ``float`` or
:class:`~decimal.Decimal`; a ``float`` bound is read as the shortest decimal
that round-trips (``0.1`` is one tenth), which is the number a JSON Schema
text spelled.

What is left out (sound, slightly incomplete): texts with an exponent
(``1e3``, ``2.5E-1``) are produced only by :func:`json_number` without bounds
and without ``multiple_of``; bounded numbers and all integers are written
without exponent. An empty range gives :data:`~tokensieve.ir.nodes.NOTHING`
(test with :func:`~tokensieve.ir.nodes.is_nothing`, or ask
:func:`integer_range_is_empty` / :func:`number_range_is_empty` first).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from ..errors import LimitExceeded
from ..ir.nodes import (
    EMPTY,
    NOTHING,
    Node,
    alt,
    char_class,
    concat,
    is_nothing,
    literal,
    optional,
    plus,
    star,
)
from ..limits import Limits
from .json_automata import intersect_multiples
from .json_digits import decimal_digit, digit_runs, fixed_width_range, natural_digits

__all__ = [
    "Bound",
    "fixed_width_range",
    "digits_range",
    "json_integer",
    "json_number",
    "integer_range_is_empty",
    "number_range_is_empty",
    "JSON_NUMBER",
    "JSON_INTEGER",
]

#: A bound as a JSON Schema keyword may hold it.
Bound = int | float | Decimal

_DIGIT = char_class([(0x30, 0x39)])
_NONZERO = char_class([(0x31, 0x39)])
_ZERO = literal("0")
_MINUS = literal("-")
_DOT = literal(".")
#: ``0|[1-9][0-9]*``
_NATURAL = alt(_ZERO, concat(_NONZERO, star(_DIGIT)))
#: Every JSON number text.
JSON_NUMBER = concat(
    optional(_MINUS),
    _NATURAL,
    optional(concat(_DOT, plus(_DIGIT))),
    optional(
        concat(
            char_class([(0x45, 0x45), (0x65, 0x65)]),
            optional(char_class([(0x2B, 0x2B), (0x2D, 0x2D)])),
            plus(_DIGIT),
        )
    ),
)
#: Every JSON integer text without fraction (``-?(0|[1-9][0-9]*)``).
JSON_INTEGER = concat(optional(_MINUS), _NATURAL)


# ------------------------------------------------------------- digit ranges
def digits_range(lo: int | None, hi: int | None) -> Node:
    """JSON integer texts (``-?(0|[1-9][0-9]*)``, ``-0`` meaning 0) with a value in ``lo..hi``.

    Parameters
    ----------
    lo, hi
        Inclusive integer bounds, any sign; ``None`` is unbounded on that side.

    Returns
    -------
    Node
        No fraction and no exponent; :data:`NOTHING` when ``lo > hi``.
    """
    return _integer_texts(lo, hi, fraction=False)


def _integer_texts(lo: int | None, hi: int | None, *, fraction: bool) -> Node:
    if lo is not None and hi is not None and lo > hi:
        return NOTHING
    parts: list[Node] = []
    if hi is None or hi >= 0:
        parts.append(natural_digits(0 if lo is None or lo < 0 else lo, hi))
    if lo is None or lo <= 0:
        # "-" k with -k in lo..hi, k >= 0 ("-0" is zero)
        neg_lo = 0 if hi is None or hi > 0 else -hi
        neg_hi = None if lo is None else -lo
        parts.append(concat(_MINUS, natural_digits(neg_lo, neg_hi)))
    body = alt(*parts)
    if fraction and not is_nothing(body):
        body = concat(body, optional(concat(_DOT, plus(_ZERO))))
    return body


# ------------------------------------------------------------------ bounds
def _as_decimal(value: Bound, name: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError(f"{name} is NaN")
        if math.isinf(value):
            return Decimal("Infinity") if value > 0 else Decimal("-Infinity")
        return Decimal(repr(value))
    if value.is_nan():
        raise ValueError(f"{name} is NaN")
    return value


_Lower = tuple[Decimal, bool] | None  # (value, strict)


def _combine(
    minimum: Bound | None,
    maximum: Bound | None,
    exclusive_minimum: Bound | None,
    exclusive_maximum: Bound | None,
) -> tuple[_Lower, _Lower, bool]:
    """Tightest lower and upper bound; third item: the range is empty for certain."""
    lower: _Lower = None
    upper: _Lower = None
    empty = False
    for value, strict, name in ((minimum, False, "minimum"), (exclusive_minimum, True, "exclusive_minimum")):
        if value is None:
            continue
        d = _as_decimal(value, name)
        if d.is_infinite():
            if d > 0:
                empty = True
            continue
        if lower is None or d > lower[0] or (d == lower[0] and strict):
            lower = (d, strict)
    for value, strict, name in ((maximum, False, "maximum"), (exclusive_maximum, True, "exclusive_maximum")):
        if value is None:
            continue
        d = _as_decimal(value, name)
        if d.is_infinite():
            if d < 0:
                empty = True
            continue
        if upper is None or d < upper[0] or (d == upper[0] and strict):
            upper = (d, strict)
    if lower is not None and upper is not None:
        if lower[0] > upper[0] or (lower[0] == upper[0] and (lower[1] or upper[1])):
            empty = True
    return lower, upper, empty


def _floor(d: Decimal) -> int:
    t = int(d)  # exact truncation toward zero
    return t if d >= t else t - 1


def _ceil(d: Decimal) -> int:
    t = int(d)
    return t if d <= t else t + 1


def _integer_bounds(lower: _Lower, upper: _Lower) -> tuple[int | None, int | None]:
    lo = None if lower is None else (_floor(lower[0]) + 1 if lower[1] else _ceil(lower[0]))
    hi = None if upper is None else (_ceil(upper[0]) - 1 if upper[1] else _floor(upper[0]))
    return lo, hi


def _check_size(lower: _Lower, upper: _Lower, limits: Limits | None) -> None:
    limits = limits or Limits()
    for b in (lower, upper):
        if b is None:
            continue
        _, digits, exp = b[0].as_tuple()
        assert isinstance(exp, int)
        size = max(len(digits), len(digits) + exp, -exp) + 1
        if size > limits.max_repetition:
            raise LimitExceeded(
                "max_repetition", limits.max_repetition, f"a numeric bound with {size} digits"
            )


def integer_range_is_empty(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: Bound | None = None,
    exclusive_maximum: Bound | None = None,
) -> bool:
    """Whether no integer satisfies the bounds (same parameters as :func:`json_integer`)."""
    lower, upper, empty = _combine(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return True
    lo, hi = _integer_bounds(lower, upper)
    return lo is not None and hi is not None and lo > hi


def number_range_is_empty(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: Bound | None = None,
    exclusive_maximum: Bound | None = None,
) -> bool:
    """Whether no number satisfies the bounds (same parameters as :func:`json_number`)."""
    return _combine(minimum, maximum, exclusive_minimum, exclusive_maximum)[2]


def _multiple_of(value: Bound | Fraction, name: str = "multiple_of") -> Fraction:
    if isinstance(value, Fraction):
        if value <= 0:
            raise ValueError(f"{name} must be a positive number, not {value!r}")
        return value
    d = _as_decimal(value, name)
    if not d.is_finite() or d <= 0:
        raise ValueError(f"{name} must be a positive number, not {value!r}")
    return Fraction(d)


# ---------------------------------------------------------------- integers
def json_integer(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: Bound | None = None,
    exclusive_maximum: Bound | None = None,
    multiple_of: Bound | Fraction | None = None,
    integral_fractions: bool = True,
    limits: Limits | None = None,
) -> Node:
    """JSON texts of the integers within bounds (and multiples of ``multiple_of``).

    Parameters
    ----------
    minimum, maximum
        Inclusive bounds (``int``, ``float`` or ``Decimal``; a non-integer bound
        is rounded inward).
    exclusive_minimum, exclusive_maximum
        Exclusive bounds.
    multiple_of
        A positive number (also a :class:`~fractions.Fraction`): the value
        must be an integer multiple of it. For an
        integer value and ``multiple_of = p/q`` in lowest terms this is
        divisibility by ``p``, enforced exactly by a remainder automaton
        (intersected with the range) when ``p`` is below
        ``limits.max_dfa_states``; few multiples in a bounded range are listed.
    integral_fractions
        Also accept integer values written with a zero fraction (``1.0``,
        ``-3.00``), which JSON Schema counts as integers.
    limits
        ``max_repetition`` bounds the number of digits of a bound;
        ``max_dfa_states`` the remainder automaton of ``multiple_of``.

    Returns
    -------
    Node
        Exactly the texts ``-?(0|[1-9][0-9]*)`` (optionally followed by
        ``.0+``) whose value is in range; ``-0`` counts as 0. Texts with an
        exponent are never produced. :data:`NOTHING` when no integer fits.

    Raises
    ------
    ValueError
        For a NaN bound or a ``multiple_of`` that is not positive.
    NotImplementedError
        For a ``multiple_of`` whose remainder automaton would exceed
        ``limits.max_dfa_states`` (the caller reports it as not enforced).
    LimitExceeded
        For a bound with more digits than ``limits.max_repetition``.
    """
    lower, upper, empty = _combine(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING
    _check_size(lower, upper, limits)
    lo, hi = _integer_bounds(lower, upper)
    k = 1
    if multiple_of is not None:
        k = _multiple_of(multiple_of).numerator
    if k == 1:
        return _integer_texts(lo, hi, fraction=integral_fractions)
    return _integer_multiples(lo, hi, k, fraction=integral_fractions, limits=limits)


def _integer_multiples(
    lo: int | None, hi: int | None, k: int, *, fraction: bool, limits: Limits | None
) -> Node:
    if lo is not None:
        lo = -((-lo) // k) * k  # round up to a multiple
    if hi is not None:
        hi = (hi // k) * k
    if lo is not None and hi is not None and lo > hi:
        return NOTHING
    if lo is not None and hi is not None and (hi - lo) // k < 64:
        # few values: list them
        texts: list[Node] = []
        for v in range(lo, hi + 1, k):
            texts.append(literal(str(v)))
            if v == 0:
                texts.append(literal("-0"))
        body = alt(*texts)
        return concat(body, optional(concat(_DOT, plus(_ZERO)))) if fraction else body
    base = _integer_texts(lo, hi, fraction=fraction)
    return intersect_multiples(base, k, 0, limits)


# ----------------------------------------------------------------- numbers
def _split_decimal(d: Decimal) -> tuple[int, list[int]]:
    """Integer part and fraction digits (no trailing zeros) of a non-negative decimal."""
    text = format(d, "f")
    if "." in text:
        int_text, frac_text = text.split(".")
    else:
        int_text, frac_text = text, ""
    frac_text = frac_text.rstrip("0")
    return int(int_text), [ord(c) - 0x30 for c in frac_text]


def _fraction_digits(
    lo: list[int] | None,
    lo_strict: bool,
    hi: list[int] | None,
    hi_strict: bool,
    max_decimals: int | None,
) -> tuple[bool, Node]:
    """Fraction digit strings ``F`` with ``lo <(=) 0.F <(=) hi``.

    Returns whether the empty fraction (value ``0.``) qualifies, and the IR of
    the non-empty ``F`` that do. ``lo``/``hi`` are digit lists without trailing
    zeros (``None``: unbounded); digits past ``max_decimals`` must be zero.
    """
    lo_d = lo or []
    hi_d = hi or []
    n = max(len(lo_d), len(hi_d), 1 if max_decimals is None else max_decimals, 1)

    def lo_at(i: int) -> int:
        return lo_d[i] if i < len(lo_d) else 0

    def hi_at(i: int) -> int:
        return hi_d[i] if i < len(hi_d) else 0

    def accept_end(i: int, tl: bool, th: bool) -> bool:
        ok = True
        if tl:
            ok = ok and not lo_strict and i >= len(lo_d)
        if th:
            ok = ok and (not hi_strict or i < len(hi_d))
        return ok

    zeros_only = max_decimals is not None
    # terminal states at position n: the remaining digits of lo and hi are all zero
    free_tail = star(_ZERO) if zeros_only else star(_DIGIT)
    term: dict[tuple[bool, bool], Node] = {
        (False, False): free_tail,
        (True, False): (
            (NOTHING if zeros_only else concat(star(_ZERO), _NONZERO, star(_DIGIT)))
            if lo_strict
            else free_tail
        ),
        (False, True): NOTHING if hi_strict else star(_ZERO),
        (True, True): NOTHING if (lo_strict or hi_strict) else star(_ZERO),
    }
    nxt = term
    first: Node = NOTHING
    for i in range(n - 1, -1, -1):
        allowed_top = 0 if (max_decimals is not None and i >= max_decimals) else 9
        cur: dict[tuple[bool, bool], Node] = {}
        for tl in (False, True):
            for th in (False, True):
                a = lo_at(i) if tl else 0
                b = min(hi_at(i) if th else 9, allowed_top)
                targets = [nxt[(tl and d == lo_at(i), th and d == hi_at(i))] for d in range(a, b + 1)]
                body = digit_runs(a, decimal_digit, targets)
                if i == 0:
                    if (tl, th) == (lo is not None, hi is not None):
                        first = body
                    continue
                cur[(tl, th)] = alt(EMPTY, body) if accept_end(i, tl, th) else body
        nxt = cur
    return accept_end(0, lo is not None, hi is not None), first


def _fraction_suffix(
    lo: list[int] | None, lo_strict: bool, hi: list[int] | None, hi_strict: bool, max_decimals: int | None
) -> Node:
    empty_ok, digits = _fraction_digits(lo, lo_strict, hi, hi_strict, max_decimals)
    body = concat(_DOT, digits)
    return alt(EMPTY, body) if empty_ok else body


def _nonneg_numbers(
    lower: tuple[Decimal, bool], upper: tuple[Decimal, bool] | None, max_decimals: int | None
) -> Node:
    """Non-negative decimal texts (no sign, no exponent) in range; ``lower[0] >= 0``."""
    a_int, a_frac = _split_decimal(lower[0])
    any_frac = _fraction_suffix(None, False, None, False, max_decimals)
    if upper is None:
        return alt(
            concat(literal(str(a_int)), _fraction_suffix(a_frac, lower[1], None, False, max_decimals)),
            concat(natural_digits(a_int + 1, None), any_frac),
        )
    b_int, b_frac = _split_decimal(upper[0])
    if a_int == b_int:
        return concat(literal(str(a_int)), _fraction_suffix(a_frac, lower[1], b_frac, upper[1], max_decimals))
    parts = [concat(literal(str(a_int)), _fraction_suffix(a_frac, lower[1], None, False, max_decimals))]
    if b_int - a_int >= 2:
        parts.append(concat(natural_digits(a_int + 1, b_int - 1), any_frac))
    parts.append(concat(literal(str(b_int)), _fraction_suffix(None, False, b_frac, upper[1], max_decimals)))
    return alt(*parts)


def _signed_numbers(lower: _Lower, upper: _Lower, max_decimals: int | None) -> Node:
    zero = Decimal(0)
    parts: list[Node] = []
    # non-negative values: [max(lower, 0), upper]
    if upper is None or upper[0] > zero or (upper[0] == zero and not upper[1]):
        lo_nn = (zero, False) if lower is None or lower[0] < zero else lower
        if not (
            upper is not None and (lo_nn[0] > upper[0] or (lo_nn[0] == upper[0] and (lo_nn[1] or upper[1])))
        ):
            parts.append(_nonneg_numbers(lo_nn, upper, max_decimals))
    # "-" x for x in [max(-upper, 0), -lower]
    if lower is None or lower[0] < zero or (lower[0] == zero and not lower[1]):
        neg_upper = None if lower is None else (lower[0].copy_negate(), lower[1])
        neg_lower = (zero, False) if upper is None or upper[0] > zero else (upper[0].copy_negate(), upper[1])
        if not (
            neg_upper is not None
            and (
                neg_lower[0] > neg_upper[0]
                or (neg_lower[0] == neg_upper[0] and (neg_lower[1] or neg_upper[1]))
            )
        ):
            parts.append(concat(_MINUS, _nonneg_numbers(neg_lower, neg_upper, max_decimals)))
    return alt(*parts)


def json_number(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: Bound | None = None,
    exclusive_maximum: Bound | None = None,
    multiple_of: Bound | Fraction | None = None,
    limits: Limits | None = None,
) -> Node | None:
    """JSON number texts whose value lies within bounds (and is a multiple of ``multiple_of``).

    Parameters
    ----------
    minimum, maximum, exclusive_minimum, exclusive_maximum
        Bounds (``int``, ``float`` or ``Decimal``), as in :func:`json_integer`.
    multiple_of
        A positive number (also a :class:`~fractions.Fraction`), read as an exact decimal (a ``float`` by its
        shortest repr: ``0.01`` is one hundredth). Enforced exactly: an
        integer step gives the integer multiples (see :func:`json_integer`),
        ``10**-k`` allows at most ``k`` decimals (then zeros), any other step
        ``p / 10**k`` a remainder automaton intersected with the range. A step
        whose automaton would exceed ``limits.max_dfa_states`` states gives
        ``None``.
    limits
        ``max_repetition`` bounds the number of digits of a bound;
        ``max_dfa_states`` the remainder automaton of ``multiple_of``.

    Returns
    -------
    Node or None
        Without bounds and ``multiple_of``: the whole JSON number grammar,
        exponents included. Otherwise exactly the texts
        ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` whose value satisfies the constraints
        (``-0`` is zero); texts with an exponent are left out (sound, slightly
        incomplete). :data:`NOTHING` when no number fits; ``None`` when
        ``multiple_of`` is of a kind not enforced (the caller reports it).

    Raises
    ------
    ValueError
        For a NaN bound or a ``multiple_of`` that is not positive.
    LimitExceeded
        For a bound with more digits than ``limits.max_repetition``.
    """
    lower, upper, empty = _combine(minimum, maximum, exclusive_minimum, exclusive_maximum)
    max_decimals: int | None = None
    scaled: tuple[int, int] | None = None
    if multiple_of is not None:
        m = _multiple_of(multiple_of)
        if m.denominator == 1:
            if empty:
                return NOTHING
            try:
                return json_integer(
                    minimum,
                    maximum,
                    exclusive_minimum=exclusive_minimum,
                    exclusive_maximum=exclusive_maximum,
                    multiple_of=m.numerator,
                    limits=limits,
                )
            except NotImplementedError:
                return None
        scaled = _decimal_step(m)
        if scaled[0] == 1:
            max_decimals, scaled = scaled[1], None
            cap = (limits or Limits()).max_repetition
            if max_decimals > cap:
                raise LimitExceeded("max_repetition", cap, f"multiple_of allows {max_decimals} decimals")
    if empty:
        return NOTHING
    if lower is None and upper is None and max_decimals is None and scaled is None:
        return JSON_NUMBER
    _check_size(lower, upper, limits)
    body = _signed_numbers(lower, upper, max_decimals)
    if scaled is None:
        return body
    try:
        return intersect_multiples(body, scaled[0], scaled[1], limits)
    except NotImplementedError:
        return None


def _decimal_step(m: Fraction) -> tuple[int, int]:
    """``(p, j)`` such that the decimals that are multiples of ``m`` are those of ``p / 10**j``.

    Write ``m = a / (q c)`` in lowest terms with ``q = 2**x 5**y`` and ``c``
    prime to 10. For a decimal ``v = V / 10**d``, ``v q c / a`` is an integer
    iff ``a 10**d`` divides ``V q c``, iff (``c`` being prime to ``a 10**d``)
    it divides ``V q``: the multiples of ``m`` among decimals are the
    multiples of ``a / q = p / 10**j``.
    """
    q = m.denominator
    x = y = 0
    while q % 2 == 0:
        q //= 2
        x += 1
    while q % 5 == 0:
        q //= 5
        y += 1
    j = max(x, y)
    p = m.numerator * (10**j // (2**x * 5**y))
    return p, j
