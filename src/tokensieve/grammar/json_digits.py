"""Fixed-width numerals whose value lies between two bounds, as regex IR built digit by digit.

:func:`fixed_width_range` is the building block of the number languages
(``json_numbers``: integer ranges, fraction digits) and of the ``\\uXXXX``
escapes of string characters (``json_strings``: hexadecimal digits); its IR
is proportional to the number of digits, never to the size of the range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir.nodes import EMPTY, NOTHING, Node, alt, char_class, concat, repeat

__all__ = ["decimal_digit", "digit_runs", "fixed_width_range", "natural_digits"]

_DIGIT = char_class([(0x30, 0x39)])
_NONZERO = char_class([(0x31, 0x39)])


def decimal_digit(lo: int, hi: int) -> Node:
    """One ASCII decimal digit with a value in ``lo..hi``."""
    return char_class([(0x30 + lo, 0x30 + hi)])


def fixed_width_range(
    lo: int, hi: int, width: int, *, base: int = 10, digit: Callable[[int, int], Node] | None = None
) -> Node:
    """Numerals of exactly ``width`` digits (leading zeros included) whose value lies in ``lo..hi``.

    Parameters
    ----------
    lo, hi
        Inclusive bounds, ``0 <= lo``, ``hi < base**width``.
    width
        Number of digits.
    base
        The radix.
    digit
        ``digit(a, b)`` is the IR of one digit with a value in ``a..b``
        (default: decimal ASCII digits).

    Returns
    -------
    Node
        IR of size proportional to ``width``; :data:`NOTHING` when ``lo > hi``.
    """
    if digit is None:
        digit = decimal_digit
    if lo > hi:
        return NOTHING
    if lo < 0 or hi >= base**width:
        raise ValueError(f"range {lo}..{hi} does not fit {width} base-{base} digits")
    lo_d = _to_digits(lo, width, base)
    hi_d = _to_digits(hi, width, base)
    return _tight_range(lo_d, hi_d, base, digit)


def _to_digits(value: int, width: int, base: int) -> list[int]:
    if base == 10:
        text = str(value).rjust(width, "0") if value else "0" * width
        return [ord(c) - 0x30 for c in text]
    out = [0] * width
    for i in range(width - 1, -1, -1):
        value, out[i] = divmod(value, base)
    return out


def _tight_range(
    lo_d: Sequence[int], hi_d: Sequence[int], base: int, digit: Callable[[int, int], Node]
) -> Node:
    """Fixed-width numerals between two digit lists of the same length, built from the right."""
    width = len(lo_d)
    top = base - 1
    # lo tail all zeros / hi tail all top: the tight flag can be dropped from position i on
    lo_free = [False] * (width + 1)
    hi_free = [False] * (width + 1)
    lo_free[width] = hi_free[width] = True
    for i in range(width - 1, -1, -1):
        lo_free[i] = lo_free[i + 1] and lo_d[i] == 0
        hi_free[i] = hi_free[i + 1] and hi_d[i] == top
    any_digit = digit(0, top)
    # state nodes for position i+1: index (tight_lo, tight_hi)
    nxt: dict[tuple[bool, bool], Node] = {(a, b): EMPTY for a in (False, True) for b in (False, True)}
    for i in range(width - 1, -1, -1):
        cur: dict[tuple[bool, bool], Node] = {}
        for tl in (False, True):
            for th in (False, True):
                if (tl and lo_free[i]) or (th and hi_free[i]):
                    continue  # filled from the equivalent looser state below
                if not tl and not th:
                    cur[(tl, th)] = repeat(any_digit, width - i, width - i)
                    continue
                a = lo_d[i] if tl else 0
                b = hi_d[i] if th else top
                if a > b:
                    cur[(tl, th)] = NOTHING
                    continue
                targets = [
                    _state(nxt, tl and d == lo_d[i], th and d == hi_d[i], lo_free, hi_free, i + 1)
                    for d in range(a, b + 1)
                ]
                cur[(tl, th)] = digit_runs(a, digit, targets)
        nxt = cur
    return _state(nxt, True, True, lo_free, hi_free, 0)


def digit_runs(a: int, digit: Callable[[int, int], Node], targets: list[Node]) -> Node:
    """Union over digits ``d = a + j`` of ``digit(d) targets[j]``, runs of equal targets merged."""
    parts: list[Node] = []
    j = 0
    while j < len(targets):
        t = targets[j]
        e = j
        while e + 1 < len(targets) and targets[e + 1] is t:
            e += 1
        parts.append(concat(digit(a + j, a + e), t))
        j = e + 1
    return alt(*parts)


def _state(
    nodes: dict[tuple[bool, bool], Node], tl: bool, th: bool, lo_free: list[bool], hi_free: list[bool], i: int
) -> Node:
    tl = tl and not lo_free[i]
    th = th and not hi_free[i]
    return nodes[(tl, th)]


def natural_digits(lo: int, hi: int | None) -> Node:
    """Decimal numerals without leading zeros (``0`` itself allowed) with a value in ``lo..hi``."""
    if hi is not None and lo > hi:
        return NOTHING
    lo = max(lo, 0)
    len_lo = len(str(lo))
    parts: list[Node] = []
    top_lo = 10**len_lo - 1
    first_lo = max(lo, 10 ** (len_lo - 1)) if len_lo > 1 else lo
    parts.append(fixed_width_range(first_lo, top_lo if hi is None else min(hi, top_lo), len_lo))
    if hi is None:
        parts.append(concat(_NONZERO, repeat(_DIGIT, len_lo, None)))
    else:
        len_hi = len(str(hi))
        if len_hi - len_lo >= 2:
            parts.append(concat(_NONZERO, repeat(_DIGIT, len_lo, len_hi - 2)))
        if len_hi > len_lo:
            parts.append(fixed_width_range(10 ** (len_hi - 1), hi, len_hi))
    return alt(*parts)
