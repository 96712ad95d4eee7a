"""The character-chain shortcut: whole trie subtrees inside counted strings.

Inside a JSON string of bounded length (``maxLength: 50``) every plain character
moves the automaton one state along a chain (``q50 -> q49 -> ...``); no state
loops, so the loop closure of :mod:`.utf8_closure` never applies and a walk
visits nearly the whole token trie, once per state.

A state *q* has a chain step when every plain ASCII byte (printable, neither
``"`` nor ``\\``) leads to one state ``next(q)``; it has a character step when,
in addition, every well-formed multi-byte UTF-8 character leads to ``next(q)``
too. ``ascii_len(q)`` (``utf8_len(q)``) is the number of such steps in a row,
capped: every string of at most that many plain characters is viable from *q*.

Bounded whitespace runs (``[ \\t\\n\\r]{0,32}``) are chains too, over the four
JSON blanks: ``blank_len(q)``.

Per trie node, once per trie: the length of the longest token suffix below it
(in characters for the character kind: a multi-byte character is one step,
taken at its lead byte, complete or not), and whether every byte below it is
plain ASCII (or plain ASCII and well-formed UTF-8 from a character boundary, or
a blank). A node whose suffixes are of a chain's kind and no longer than the
state's chain is allowed whole.

The three kinds are always in this order: plain ASCII, plain characters, blanks.
"""

from __future__ import annotations

import numpy as np

from ..automata.blank_runs import BLANKS, CopyRows
from ..vocab.trie import TokenTrie
from .utf8_closure import HIGH_BYTES, UTF8_TABLE, utf8_node_steps, utf8_subtree_ok

__all__ = [
    "CLASS_MIN_BYTES",
    "MAX_CHAIN",
    "NEVER",
    "NOT_OF_KIND",
    "PLAIN_BYTES",
    "PLAIN_SET",
    "chain_lengths",
    "class_chains",
    "node_chain_needs",
    "node_suffix_needs",
    "token_needs",
]

#: Chains are followed for at most this many steps; deeper subtrees are walked further down.
MAX_CHAIN = 128

#: The plain ASCII bytes: printable, neither ``"`` nor ``\\``.
PLAIN_BYTES = np.array([b for b in range(0x20, 0x7F) if b not in (0x22, 0x5C)], dtype=np.int64)
#: the same set as a range of bytes less the two it leaves out (how :func:`chain_lengths` reads it)
_PLAIN_RANGE = (int(PLAIN_BYTES[0]), int(PLAIN_BYTES[-1]))
_NOT_PLAIN_IN_RANGE = tuple(b for b in range(_PLAIN_RANGE[0], _PLAIN_RANGE[1] + 1) if b not in PLAIN_BYTES)


def _byte_set(values: np.ndarray) -> np.ndarray:
    out = np.zeros(4, dtype=np.uint64)
    for b in values.tolist():
        out[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return out


#: :data:`PLAIN_BYTES` as a 256-bit set (``uint64 (4,)``).
PLAIN_SET = _byte_set(PLAIN_BYTES)
_NOT_PLAIN = ~PLAIN_SET
_NOT_PLAIN_OR_HIGH = ~(PLAIN_SET | HIGH_BYTES)
_NOT_BLANK = ~_byte_set(BLANKS)
_BLANK_SET = frozenset(BLANKS.tolist())

#: A need larger than any chain: the subtree is never closed by a chain.
NEVER = np.int16(MAX_CHAIN + 1)

#: What :func:`token_needs` gives for a kind the token is not of (longer than any token).
NOT_OF_KIND = 1 << 30


def token_needs(data: bytes) -> tuple[int, int, int]:
    """The chain of each kind a state needs for ``data`` to be viable from it.

    The length of ``data`` for each kind it belongs to (all plain ASCII; plain
    ASCII and well-formed UTF-8 from a character boundary, possibly ending inside
    a character, counted in characters; all blanks), :data:`NOT_OF_KIND` for the
    others.
    """
    n, never = len(data), NOT_OF_KIND
    plain = _PLAIN_LOOKUP
    blank = all(b in _BLANK_SET for b in data)
    if all(plain[b] for b in data):
        return n, n, n if blank else never
    u = 0
    for b in data:
        if b < 0x80 and not plain[b]:
            return never, never, n if blank else never
        u = int(UTF8_TABLE[u, b])
        if u < 0:
            return never, never, never
    return never, sum(1 for b in data if not 0x80 <= b < 0xC0), never


_PLAIN_LOOKUP = [False] * 256
for _b in PLAIN_BYTES.tolist():
    _PLAIN_LOOKUP[_b] = True


def node_chain_needs(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node of ``trie``, the chain of each kind a state needs for the whole subtree to be allowed.

    Returns ``int16 (num_nodes,)`` arrays, one per kind: the length of the
    longest token suffix below the node when every byte below it is plain ASCII;
    in characters (a character not complete at the token's end counts) when every
    byte is plain ASCII or part of well-formed UTF-8 from a character boundary;
    when every byte is a blank.
    :data:`NEVER` otherwise or when that suffix is longer than :data:`MAX_CHAIN`.
    The caller keeps the result (one per vocabulary).
    """
    suffix = _longest_suffixes(trie)
    # characters: a multi-byte character is one step of the chain, taken at its lead byte
    chars = _longest_suffixes(trie, utf8_node_steps(trie)[1])
    sub = trie.subtree_bytes
    ascii_plain = ~((sub & _NOT_PLAIN).any(axis=1))
    utf8_plain = ~((sub & _NOT_PLAIN_OR_HIGH).any(axis=1)) & utf8_subtree_ok(trie)
    blank = ~((sub & _NOT_BLANK).any(axis=1))
    needs = tuple(
        np.where(kind & (length <= MAX_CHAIN), length, NEVER).astype(np.int16)
        for kind, length in ((ascii_plain, suffix), (utf8_plain, chars), (blank, suffix))
    )
    for need in needs:
        need.setflags(write=False)
    return needs  # type: ignore[return-value]


def node_suffix_needs(trie: TokenTrie) -> np.ndarray:
    """Per node of ``trie``, the class chain a state needs for the whole subtree to be allowed.

    ``int16 (num_nodes,)``: the length of the longest token suffix below the node,
    :data:`NEVER` when it is longer than :data:`MAX_CHAIN` (see :func:`class_chains`;
    which bytes occur below a node is ``trie.subtree_bytes``).
    """
    suffix = _longest_suffixes(trie)
    need = np.where(suffix <= MAX_CHAIN, suffix, NEVER).astype(np.int16)
    need.setflags(write=False)
    return need


def _longest_suffixes(trie: TokenTrie, steps: np.ndarray | None = None) -> np.ndarray:
    """Per node, the length of the longest token suffix below it (bottom-up, one level at a time).

    With ``steps`` (per node, the steps its path takes), suffixes are measured in steps, not bytes.
    """
    depth = (trie.node_depth if steps is None else steps).astype(np.int64)
    deepest = depth.copy()
    parent = trie.node_parent.astype(np.int64)
    for d in range(trie.max_depth, 0, -1):
        nodes = trie.nodes_at_depth(d).astype(np.int64)
        if nodes.size:
            np.maximum.at(deepest, parent[nodes], deepest[nodes])
    return deepest - depth


#: the bytes whose targets are tried as a state's class-chain step (a letter and a digit:
#: the classes with the most tokens)
_CLASS_PROBES = (ord("e"), ord("0"))
#: a class chain steps on at least this many bytes (below that the walk is cheap anyway)
CLASS_MIN_BYTES = 4


def class_chains(
    table: np.ndarray, loops: np.ndarray, copies: CopyRows | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per state, a byte class and how many bytes of it in a row are viable from the state.

    Inside a counted run of a character class (``[a-z0-9]{3,32}``, an e-mail
    address of at most 254 characters) no state loops: every byte of the class
    moves the automaton one state along (``q -> next(q)``), like the plain
    strings of :func:`chain_lengths` but over any class. A non-looping state's
    class is the set of bytes leading to the target of ``e`` or of ``0`` (the
    bigger of the two); a looping state's class is the bytes it loops on. Then
    ``length[q] = 1 + length[next(q)]`` while the class of ``next(q)`` contains
    the class of ``q`` (a looping state counts as an endless chain): every string
    of at most ``length[q]`` bytes of the class is viable from ``q``.

    Parameters
    ----------
    table
        ``int32 (S, 256)`` transition table, -1 for no transition.
    loops
        ``uint64 (S, 4)``: the bytes each state loops on.
    copies
        Optional: the copies of layout places whose rows need not be read
        (their classes are their places'; see
        :class:`~tokensieve.automata.blank_runs.CopyRows`), and the rows left
        unread, which get no class (so a chain stops before them).

    Returns
    -------
    (classes, length, nxt)
        ``uint64 (S, 4)`` byte sets, ``int16 (S,)`` lengths, capped at
        :data:`MAX_CHAIN` (0 for a state without a class of at least
        :data:`CLASS_MIN_BYTES` bytes), and ``int64 (S,)`` the state every byte
        of the class leads to (the state itself for a looping one; -1 without a class).
    """
    s = table.shape[0]
    looping = loops.any(axis=1)
    rows = np.arange(s, dtype=np.int64)
    best = np.empty(s, dtype=np.int64)
    count = np.empty(s, dtype=np.int64)
    classes = np.empty((s, 4), dtype=np.uint64)
    read = None if copies is None else copies.scanned
    # a block of rows at a time: the byte set of the first probe's target, its size
    for i in range(0, s if read is None else read.size, _ROWS):
        if read is None:
            at: slice | np.ndarray = slice(i, i + _ROWS)
            block = table[i : i + _ROWS]
        else:
            at = read[i : i + _ROWS]
            block = _rows(table, at)
        target = block[:, _CLASS_PROBES[0]]
        same = block == target[:, None]
        count[at] = np.where(target >= 0, np.count_nonzero(same, axis=1), 0)
        classes[at] = np.packbits(same, axis=1, bitorder="little").view(np.uint64)
        best[at] = target
    if copies is not None:  # rows not read at all: no class
        copies.clear(count, 0)
        copies.clear(classes, 0)
        copies.clear(best, -1)
    # the second probe, where it leads elsewhere to more bytes
    other = table[:, _CLASS_PROBES[1]].astype(np.int64)
    differ_at = (other >= 0) & (other != best) & (other != rows)
    if copies is not None:
        differ_at[copies.copies] = False  # not read: their values are not set yet
        differ_at[copies.unread] = False
    differ = np.flatnonzero(differ_at)
    if differ.size:
        same = table[differ] == other[differ][:, None]
        more = np.count_nonzero(same, axis=1) > count[differ]
        won = differ[more]
        best[won] = other[won]
        count[won] = np.count_nonzero(same[more], axis=1)
        classes[won] = np.packbits(same[more], axis=1, bitorder="little").view(np.uint64)
    if copies is not None:
        copies.spread(count)
        copies.spread(classes)
        copies.spread_targets(best)
    ok = (count >= CLASS_MIN_BYTES) & (best >= 0) & (best != rows) & ~looping
    classes[~ok] = 0
    classes[looping] = loops[looping]
    nxt = np.where(looping, rows, np.where(ok, best, -1))
    chained = ok | looping
    # the chain goes on only while the next state's class holds this one's
    safe = np.maximum(nxt, 0)
    holds = ~(classes & ~classes.take(safe, axis=0)).any(axis=1)
    length = _run_lengths(chained, np.where(holds, nxt, s), s)
    return classes, length, nxt


def _continuation_targets(table: np.ndarray, states: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """Per range of continuation bytes a character may need, the one target of every byte of it.

    Keys ``(lo, hi)`` are the ranges ``0x80-0xBF`` (any), ``0xA0-0xBF`` (after ``E0``),
    ``0x80-0x9F`` (after ``ED``), ``0x90-0xBF`` (after ``F0``), ``0x80-0x8F`` (after ``F4``).
    Each value is indexed by state, -1 where the bytes differ, one is missing or the
    state is not in ``states``, with one more entry, -1, so that ``-1`` indexes a
    refusal. One gather of the 64 columns serves every range.
    """
    block = table[states, 0x80:0xC0]
    same_as_next = block[:, 1:] == block[:, :-1]
    out = {}
    for lo, hi in ((0x80, 0xBF), (0xA0, 0xBF), (0x80, 0x9F), (0x90, 0xBF), (0x80, 0x8F)):
        first = block[:, lo - 0x80]
        same = same_as_next[:, lo - 0x80 : hi - 0x80].all(axis=1) & (first >= 0)
        targets = np.full(table.shape[0] + 1, -1, dtype=np.int64)
        targets[states] = np.where(same, first, -1)
        out[(lo, hi)] = targets
    return out


def _after_high_bytes(table: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """The states reached from ``cand`` by a lead byte and then up to two more high bytes."""
    seen = np.zeros(table.shape[0] + 1, dtype=bool)  # the last entry absorbs the missing transitions
    step = table[cand, 0xC2:0xF5]
    seen[step] = True
    seen[-1] = False
    frontier = np.flatnonzero(seen)
    for _ in range(2):
        if not frontier.size:
            break
        step = table[frontier, 0x80:0xC0]
        fresh = np.zeros_like(seen)
        fresh[step] = True
        fresh[-1] = False
        fresh &= ~seen
        seen |= fresh
        frontier = np.flatnonzero(fresh)
    return np.flatnonzero(seen).astype(np.int64)


#: the lead bytes of multi-byte characters by the ranges their continuation bytes must be in
_LEADS = (
    (range(0xC2, 0xE0), ((0x80, 0xBF),)),
    ((0xE0,), ((0xA0, 0xBF), (0x80, 0xBF))),
    ((*range(0xE1, 0xED), 0xEE, 0xEF), ((0x80, 0xBF), (0x80, 0xBF))),
    ((0xED,), ((0x80, 0x9F), (0x80, 0xBF))),
    ((0xF0,), ((0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF))),
    (range(0xF1, 0xF4), ((0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF))),
    ((0xF4,), ((0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF))),
)


def _uniform_step(
    table: np.ndarray, lo: int, hi: int, skip: tuple[int, ...] = (), copies: CopyRows | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For every state: whether every byte ``lo..hi`` but ``skip`` leads to one state, and that state.

    A block of rows at a time, so that the temporaries stay small (fresh pages cost more than the
    comparisons). With ``copies``, only their ``scanned`` rows are read; the copies take their places'.
    """
    s = table.shape[0]
    ok = np.empty(s, dtype=bool)
    nxt = np.empty(s, dtype=np.int64)
    cols = [b - lo for b in skip]
    read = None if copies is None else copies.scanned
    for i in range(0, s if read is None else read.size, _ROWS):
        if read is None:
            at: slice | np.ndarray = slice(i, i + _ROWS)
            block = table[i : i + _ROWS, lo : hi + 1]
        else:
            at = read[i : i + _ROWS]
            block = _rows(table, at)[:, lo : hi + 1]
        first = block[:, 0]
        same = block == first[:, None]
        same[:, cols] = True
        ok[at] = same.all(axis=1) & (first >= 0)
        nxt[at] = first
    if copies is not None:
        copies.spread(ok)
        copies.spread_targets(nxt)
        copies.clear(ok, False)  # rows not read at all: no step
        copies.clear(nxt, -1)
    return ok, nxt


def _blank_step(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every state: whether the four JSON blanks lead to one state, and that state."""
    head, *rest = BLANKS.tolist()
    first = table[:, head].astype(np.int64)
    ok = first >= 0
    for b in rest:
        ok &= table[:, b] == first
    return ok, first


#: rows compared at a time
_ROWS = 4096


def _rows(table: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``table[at]``: a view when ``at`` (sorted, distinct) is a run of consecutive rows."""
    if at.size and int(at[-1]) - int(at[0]) == at.size - 1:
        return table[int(at[0]) : int(at[-1]) + 1]
    return table.take(at, axis=0)


def chain_lengths(table: np.ndarray, copies: CopyRows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per state, how many characters of each kind in a row are viable along its chain.

    Parameters
    ----------
    table
        ``int32 (S, 256)`` transition table, -1 for no transition.
    copies
        Optional: the copies of layout places whose rows need not be read
        (see :class:`~tokensieve.automata.blank_runs.CopyRows`), and the rows
        left unread, from which no plain or character chain goes on.

    Returns
    -------
    (ascii_len, utf8_len, blank_len) : tuple of numpy.ndarray
        ``int16 (S,)``: every string of at most ``ascii_len[q]`` plain ASCII
        bytes is viable from ``q``; every string of at most ``utf8_len[q]``
        characters, each plain ASCII or a well-formed multi-byte character; and
        every string of at most ``blank_len[q]`` blanks. Capped at
        :data:`MAX_CHAIN`.
    """
    s = table.shape[0]
    step, nxt = _uniform_step(table, *_PLAIN_RANGE, skip=_NOT_PLAIN_IN_RANGE, copies=copies)
    blank_step, blank_nxt = _blank_step(table)
    char = step.copy()
    cand = np.flatnonzero(step)
    if cand.size:
        # multi-byte characters: each lead byte, then its continuation ranges, back to next(q)
        inner = _after_high_bytes(table, cand)
        targets = _continuation_targets(table, inner)
        rows = table[cand, 0xC2:0xF5].astype(np.int64)
        want = nxt[cand][:, None]
        ok = np.ones(cand.size, dtype=bool)
        for leads, ranges in _LEADS:
            after = rows[:, [lead - 0xC2 for lead in leads]]
            for key in ranges:
                after = targets[key].take(after)  # -1 stays -1 (the extra last entry)
            ok &= (after == want).all(axis=1)
        char[cand] = ok
    return _run_lengths(step, nxt, s), _run_lengths(char, nxt, s), _run_lengths(blank_step, blank_nxt, s)


def _run_lengths(ok: np.ndarray, nxt: np.ndarray, s: int) -> np.ndarray:
    """``ok[q] ? 1 + run[nxt[q]] : 0``, capped at :data:`MAX_CHAIN` (cycles reach the cap).

    By doubling: after round ``k``, ``length[q]`` is ``min(run[q], 2**k)`` and ``jump[q]`` the state
    ``2**k`` steps along the chain (the extra state ``s``, of length 0, where the chain is shorter).
    """
    length = np.zeros(s + 1, dtype=np.int64)
    length[:s] = ok
    jump = np.full(s + 1, s, dtype=np.int64)
    jump[:s] = np.where(ok, nxt, s)
    span = 1
    while span < MAX_CHAIN:
        length += length.take(jump)
        jump = jump.take(jump)
        span *= 2
    return np.minimum(length[:s], MAX_CHAIN).astype(np.int16)
