"""Where the JSON leaf languages become automata: one path from their IR to the automaton builders.

The string, number and format languages (``json_strings``, ``json_numbers``,
``json_formats``) are regex IR; the parts that are built as automata instead,
and the products of these languages, go through here:

* :func:`intersect`, :func:`difference`, :func:`is_empty`: boolean
  operations on regular languages (``automata.ops``; a length-bounded string
  by layers, ``automata.layered_product``), remembered per process;
* :func:`string_enum`: a large ``enum`` of strings as one acyclic automaton
  (``automata.choices``);
* :func:`counted` and :func:`embedded`: a bounded repetition built by layers
  (``automata.counted``), and a language determinised once and embedded as
  one :class:`~tokensieve.ir.nodes.Automaton` leaf, spliced whole into the
  automaton of the schema when it is large (``automata.splice``);
* :func:`multiples_dfa` and :func:`intersect_multiples`: ``multipleOf`` as a
  remainder automaton over number texts, intersected with a number language.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .._memo import BoundedMemo
from ..automata import ops as _ops
from ..automata.build import ir_to_dfa
from ..automata.choices import choices_to_dfa
from ..automata.counted import cached_counted_repeat
from ..automata.dfa import ByteDFA
from ..automata.layered_product import layered_intersection
from ..automata.ops import dfa_to_ir
from ..automata.splice import SPLICE_MIN_STATES
from ..ir.nodes import NOTHING, Automaton, Node, is_nothing
from ..limits import Limits

__all__ = [
    "counted",
    "difference",
    "embedded",
    "intersect",
    "intersect_multiples",
    "is_empty",
    "multiples_dfa",
    "string_enum",
]

#: results of automaton operations kept for reuse (by operation, operands and limits)
_OP_CACHE_ENTRIES = 64
#: results larger than this many automaton states are not kept
_OP_CACHE_MAX_STATES = 50_000
_op_cache: BoundedMemo[Node] = BoundedMemo(max_entries=_OP_CACHE_ENTRIES)


def _cached_op(name: str, fn: Callable[[Node, Node, Any], Node], x: Node, y: Node, limits: Any) -> Node:
    """``fn(x, y, limits)``, remembered per process.

    The same string constraints recur across the properties of a schema, across
    schemas (``format: email`` with ``maxLength: 254`` is everywhere) and
    across the lenient compiler's attempts, and their products cost seconds.
    """
    key = (name, x, y, limits)
    hit = _op_cache.get(key)
    if hit is not None:
        return hit
    result = fn(x, y, limits)
    if getattr(result, "num_states", 0) <= _OP_CACHE_MAX_STATES:
        _op_cache.put(key, result)
    return result


def intersect(x: Node, y: Node, limits: Any) -> Node:
    """Intersection of two regular IR languages."""
    return _cached_op("intersect", _intersect, x, y, limits)


def _intersect(x: Node, y: Node, limits: Any) -> Node:
    """A length-bounded string and another string language by layers, when that works
    (:mod:`tokensieve.automata.layered_product`); else the general product."""
    for a, b in ((x, y), (y, x)):
        if isinstance(a, Automaton):
            built = layered_intersection(a, b, limits)
            if built is not None:
                return built
    return _ops.ir_intersect(x, y, limits)


def difference(x: Node, y: Node, limits: Any) -> Node:
    """``x`` minus ``y``."""
    return _cached_op("difference", _ops.ir_difference, x, y, limits)


def is_empty(node: Node, limits: Any) -> bool:
    """Whether a regular IR language is empty."""
    if is_nothing(node):
        return True
    return bool(_ops.is_empty_ir(node, limits))


def counted(item: Node, min_count: int, max_count: int | None, limits: Limits) -> Automaton | None:
    """``item{min_count,max_count}`` built by layers as one automaton (None: not by layers; see ``automata.counted``)."""
    return cached_counted_repeat(item, min_count, max_count, limits)


def embedded(node: Node, *, large_only: bool = False) -> Node:
    """The regular ``node`` determinised once, as an embedded automaton.

    With ``large_only``, an automaton of fewer than ``SPLICE_MIN_STATES``
    states is not embedded: ``node`` comes back as it is, to be determinised
    with the automaton around it.
    """
    dfa = ir_to_dfa(node)
    return dfa_to_ir(dfa) if not large_only or dfa.num_states >= SPLICE_MIN_STATES else node


def string_enum(values: list[str], limits: Limits) -> Automaton:
    """A large enum of strings as one acyclic automaton.

    Each value is accepted as ``json.dumps`` writes it, with and without
    ``ensure_ascii``; other spellings (needless escapes) are not.
    """
    texts = {json.dumps(v, ensure_ascii=False) for v in values}
    texts |= {json.dumps(v) for v in values}
    return dfa_to_ir(choices_to_dfa(sorted(texts), limits))


# ---------------------------------------------------------------- multipleOf
def multiples_dfa(p: int, j: int) -> ByteDFA:
    """Number texts ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` whose value is a multiple of ``p / 10**j``.

    The value times ``10**j`` must be an integer divisible by ``p``: the states
    follow the remainder modulo ``p`` of the digits read so far, and in the
    fraction also how many digits were read (up to ``j``; later digits must be 0).
    """
    digits = np.arange(10, dtype=np.int64)
    residues = np.arange(p, dtype=np.int64)
    start, minus, zero = 0, 1, 2
    int_base = 3  # int_base + r: integer part read, remainder r
    frac_base = int_base + p  # frac_base + i * p + r: "." and i fraction digits read, remainder r
    tail = frac_base + (j + 1) * p  # more than j fraction digits, all of them zeros past the j-th
    num_states = tail + 1
    src: list[np.ndarray] = []
    byt: list[np.ndarray] = []
    dst: list[np.ndarray] = []

    def add(s: np.ndarray, b: np.ndarray, t: np.ndarray) -> None:
        src.append(np.asarray(s, dtype=np.int64).ravel())
        byt.append(np.asarray(b, dtype=np.int64).ravel())
        dst.append(np.asarray(t, dtype=np.int64).ravel())

    for first in (start, minus):
        if first == start:
            add(np.array([start]), np.array([0x2D]), np.array([minus]))
        add(np.array([first]), np.array([0x30]), np.array([zero]))
        add(np.full(9, first), 0x30 + digits[1:], int_base + digits[1:] % p)
    # integer part: r -> (10 r + d) mod p; "." keeps r
    grid_r, grid_d = np.meshgrid(residues, digits, indexing="ij")
    add(int_base + grid_r, 0x30 + grid_d, int_base + (10 * grid_r + grid_d) % p)
    add(int_base + residues, np.full(p, 0x2E), frac_base + residues)
    add(np.array([zero]), np.array([0x2E]), np.array([frac_base]))
    # fraction digits 1..j: remainder updated; beyond j only zeros, and only with remainder 0
    for i in range(j):
        add(frac_base + i * p + grid_r, 0x30 + grid_d, frac_base + (i + 1) * p + (10 * grid_r + grid_d) % p)
    add(np.array([frac_base + j * p, tail]), np.array([0x30, 0x30]), np.array([tail, tail]))
    e_src = np.concatenate(src)
    e_byte = np.concatenate(byt)
    e_dst = np.concatenate(dst)
    order = np.lexsort((e_byte, e_src))
    accepting = np.zeros(num_states, dtype=bool)
    accepting[zero] = True
    accepting[int_base + residues] = (residues * pow(10, j, p)) % p == 0
    for i in range(1, j + 1):
        accepting[frac_base + i * p + residues] = (residues * pow(10, j - i, p)) % p == 0
    accepting[tail] = True
    return ByteDFA.from_edges(num_states, (e_src[order], e_byte[order], e_dst[order]), accepting, start)


def intersect_multiples(base: Node, p: int, j: int, limits: Limits | None) -> Node:
    """``base`` restricted to values that are multiples of ``p / 10**j``."""
    limits = limits or Limits()
    if is_nothing(base):
        return NOTHING
    if (p + 1) * (j + 2) > limits.max_dfa_states:
        raise NotImplementedError(
            f"a multiple_of step of {p}/10**{j} needs more than {limits.max_dfa_states} automaton states"
        )
    return intersect(base, dfa_to_ir(multiples_dfa(p, j)), limits)
