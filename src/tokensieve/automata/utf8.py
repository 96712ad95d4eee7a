"""Code point ranges as UTF-8 byte-range sequences.

A range of code points whose UTF-8 encodings have the same length and differ
only in "free" trailing bytes is one sequence of byte ranges, e.g. U+0800 to
U+FFFF (minus surrogates) is ``[E0][A0-BF][80-BF] | [E1-EC][80-BF][80-BF] |
[ED][80-9F][80-BF] | [EE-EF][80-BF][80-BF]``. Any range splits into a handful of
such sequences (the classic construction used by RE2 and Rust's regex crate),
so a class never costs more than a few dozen byte ranges, however many code
points it holds.
"""

from __future__ import annotations

from .._memo import memoized
from ..ir.nodes import MAX_CODE_POINT, SURROGATES

__all__ = ["utf8_sequences", "class_sequences", "ClassAutomaton", "class_automaton"]

Seq = tuple[tuple[int, int], ...]

_LEN_LIMITS = (0x7F, 0x7FF, 0xFFFF)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> list[Seq]:
    """Split the code point range ``lo..hi`` into UTF-8 byte-range sequences.

    Parameters
    ----------
    lo, hi
        Inclusive bounds, ``0 <= lo <= hi <= 0x10FFFF``. Surrogates inside the
        range are skipped (they have no UTF-8 form).

    Returns
    -------
    list of tuple of (int, int)
        Sequences in increasing order; a byte string is the UTF-8 encoding of a
        code point in the range iff it matches exactly one sequence.
    """
    if not 0 <= lo <= hi <= MAX_CODE_POINT:
        raise ValueError(f"bad code point range {lo:#x}..{hi:#x}")
    out: list[Seq] = []
    stack = [(lo, hi)]
    while stack:
        s, e = stack.pop()
        if s > e:
            continue
        if s <= SURROGATES[1] and e >= SURROGATES[0]:
            stack.append((SURROGATES[1] + 1, e))
            stack.append((s, SURROGATES[0] - 1))
            continue
        split = False
        for limit in _LEN_LIMITS:
            if s <= limit < e:
                stack.append((limit + 1, e))
                stack.append((s, limit))
                split = True
                break
        if split:
            continue
        if e <= 0x7F:
            out.append(((s, e),))
            continue
        for i in (1, 2, 3):
            m = (1 << (6 * i)) - 1
            if (s & ~m) != (e & ~m):
                if (s & m) != 0:
                    stack.append(((s | m) + 1, e))
                    stack.append((s, s | m))
                    split = True
                    break
                if (e & m) != m:
                    stack.append((e & ~m, e))
                    stack.append((s, (e & ~m) - 1))
                    split = True
                    break
        if split:
            continue
        bs, be = _encode(s), _encode(e)
        out.append(tuple(zip(bs, be, strict=True)))
    return out


@memoized(max_entries=4096)
def class_sequences(ranges: Seq) -> tuple[Seq, ...]:
    """All UTF-8 sequences of a normalised code point class (memoised)."""
    seqs: list[Seq] = []
    for lo, hi in ranges:
        seqs.extend(utf8_sequences(lo, hi))
    return tuple(seqs)


class ClassAutomaton:
    """The UTF-8 sequences of a class as a small acyclic automaton over byte sets.

    Sequences share their leading ranges (a trie), identical subtrees are
    merged, and the ranges leaving a node for the same target are grouped, so
    ``\\w`` is a single edge and ``.`` fewer than twenty.

    Attributes
    ----------
    edges : tuple of tuple of (ranges, target)
        ``edges[q]`` lists the edges leaving node ``q`` (the root is 0): a tuple
        of inclusive ``(lo, hi)`` byte ranges and the target node, ``-1`` where
        a sequence ends.
    num_edges : int
        Total edges: the byte NFA nodes the class costs.
    """

    __slots__ = ("edges", "num_edges")

    def __init__(self, edges: tuple[tuple[tuple[Seq, int], ...], ...]) -> None:
        self.edges = edges
        self.num_edges = sum(len(e) for e in edges)


@memoized(max_entries=4096)
def class_automaton(ranges: Seq) -> ClassAutomaton:
    """Build (memoised) the byte automaton of a normalised code point class."""
    children: list[dict[tuple[int, int, bool], int]] = [{}]
    for seq in class_sequences(ranges):
        node = 0
        last = len(seq) - 1
        for i, (lo, hi) in enumerate(seq):
            if i == last:
                children[node][(lo, hi, True)] = -1
                break
            key = (lo, hi, False)
            nxt = children[node].get(key)
            if nxt is None:
                nxt = len(children)
                children.append({})
                children[node][key] = nxt
            node = nxt
    # merge identical subtrees (children have larger ids than parents) and
    # group the ranges that lead to the same target
    canon = [0] * len(children)
    register: dict[tuple[tuple[Seq, int], ...], int] = {}
    shapes: list[tuple[tuple[Seq, int], ...]] = []
    for q in range(len(children) - 1, -1, -1):
        by_target: dict[int, list[tuple[int, int]]] = {}
        for (lo, hi, _), c in sorted(children[q].items()):
            by_target.setdefault(-1 if c < 0 else canon[c], []).append((lo, hi))
        shape = tuple(sorted((_merge(rs), t) for t, rs in by_target.items()))
        idx = register.get(shape)
        if idx is None:
            idx = register[shape] = len(shapes)
            shapes.append(shape)
        canon[q] = idx
    # renumber so that the root is 0 and nodes follow their first parent
    order = {canon[0]: 0}
    todo = [canon[0]]
    for q in todo:
        for _, c in shapes[q]:
            if c >= 0 and c not in order:
                order[c] = len(order)
                todo.append(c)
    edges = tuple(tuple((rs, -1 if c < 0 else order[c]) for rs, c in shapes[q]) for q in todo)
    return ClassAutomaton(edges)


def _merge(ranges: list[tuple[int, int]]) -> Seq:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)
