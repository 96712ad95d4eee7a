"""The keys an object does not name: any string's content less some exact keys, built directly.

An object that allows properties besides the ones it names (``additionalProperties``
not false) takes, for those other properties, any key except the named ones, in
none of their spellings. The general difference
(:func:`tokensieve.automata.ops.ir_difference`) determinises the spellings of
the named keys and walks its product with the any-string automaton: about
1.5 ms for a typical object, and nearly every object of a real schema needs it.

The product has a simple shape, so it is built here from its parts in a tenth of
that time:

* the *free* part is the any-string automaton itself: once the text read leaves
  every named key, the rest is any string;
* above it, one state per *trie node* of the keys (a prefix of some key, read to
  a character boundary; accepting unless the prefix is a key), and one per
  partial spelling of the next character (``\\u00`` of ``é``), each of them
  tracking the any-string state its bytes reach. A state's row is its
  any-string state's row, where a byte leaves the keys, overridden by the bytes
  that go on spelling a next character of some key.

The spellings of one character come from
:func:`tokensieve.grammar.json_strings.json_string_content` (the automaton of the
one-character literal), so they are the spellings the any-string automaton has;
they form a prefix code (no lone surrogates), which is what lets a complete
spelling move to the next trie node at once. Equivalent states above the free
part (common suffixes of keys) are merged deepest first. The result has the
language, and on every schema of the benchmark corpus the state count, of the
minimal difference; its states are not numbered breadth-first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._memo import memoized
from ...automata.build import ir_to_dfa
from ...automata.dfa import ByteDFA
from ...automata.ops import dfa_to_ir
from ...errors import LimitExceeded
from ...ir.nodes import Automaton, literal
from ...limits import Limits
from ..json_strings import json_string_content
from ._lexical import any_string_content

__all__ = ["other_keys_content"]


@memoized(max_entries=1)
def _any_string() -> tuple[np.ndarray, np.ndarray, int]:
    """The any-string automaton: ``(table, accepting, start)``, read-only."""
    dfa = ir_to_dfa(any_string_content())
    table = np.array(dfa.transitions, dtype=np.int32)
    accepting = np.array(dfa.accepting, dtype=bool)
    table.setflags(write=False)
    accepting.setflags(write=False)
    return table, accepting, dfa.start


#: one character's spellings: start state, whether each state ends a spelling, each state's moves by byte
_Spelling = tuple[int, tuple[bool, ...], tuple[dict[int, int], ...]]


@memoized(max_entries=4096)
def _spelling(char: str) -> _Spelling | None:
    """The automaton of ``char``'s spellings, or ``None`` when a spelling ends where another goes on."""
    dfa = ir_to_dfa(json_string_content(literal(char)))
    src, byte, dst = dfa.edge_list()
    moves: list[dict[int, int]] = [{} for _ in range(dfa.num_states)]
    for s, b, t in zip(src.tolist(), byte.tolist(), dst.tolist(), strict=True):
        moves[s][b] = t
    ends = tuple(bool(a) for a in np.asarray(dfa.accepting).tolist())
    if any(end and move for end, move in zip(ends, moves, strict=True)):
        return None
    return dfa.start, ends, tuple(moves)


def _trie(keys: Sequence[str]) -> tuple[list[dict[str, int]], list[bool]]:
    """The keys' trie over characters: each node's children by character, and whether it ends a key."""
    children: list[dict[str, int]] = [{}]
    ends = [False]
    for key in keys:
        node = 0
        for char in key:
            nxt = children[node].get(char)
            if nxt is None:
                nxt = children[node][char] = len(children)
                children.append({})
                ends.append(False)
            node = nxt
        ends[node] = True
    return children, ends


def _after_successors(n: int, free: int, first_override: list[int], targets: list[int]) -> list[int]:
    """The states above the free part (``0..n-1``), each after every state it leads to.

    Their transitions form no cycle (each goes further into a spelling, or to a
    deeper trie node), so a depth-first postorder is such an order.
    """
    order: list[int] = []
    done = [False] * n
    for root in range(n):
        if done[root]:
            continue
        done[root] = True
        stack = [(root, first_override[root])]
        while stack:
            k, e = stack[-1]
            if e == first_override[k + 1]:
                stack.pop()
                order.append(k)
                continue
            stack[-1] = (k, e + 1)
            t = targets[e] - free
            if t >= 0 and not done[t]:
                done[t] = True
                stack.append((t, first_override[t]))
    return order


def other_keys_content(keys: Sequence[str], limits: Limits) -> Automaton | None:
    """The content of the JSON strings other than ``keys``, every spelling of them.

    Parameters
    ----------
    keys
        The decoded keys to leave out (any number, repeats allowed).
    limits
        ``max_dfa_states`` and ``max_compile_work`` bound the result, as they
        bound :func:`tokensieve.automata.ops.ir_difference`.

    Returns
    -------
    Automaton or None
        The language of ``ir_difference(any_string_content(), alt(spellings of
        keys))``; ``None`` when a key holds a surrogate code point or a
        character's spellings are not a prefix code (the caller then takes the
        general difference).

    Raises
    ------
    LimitExceeded
        When the automaton would exceed a limit.
    """
    chars = {c for key in keys for c in key}
    if any(0xD800 <= ord(c) <= 0xDFFF for c in chars):
        return None
    spellings: dict[str, _Spelling] = {}
    for char in chars:
        spelling = _spelling(char)
        if spelling is None:
            return None
        spellings[char] = spelling
    table_a, accepting_a, start_a = _any_string()
    free = table_a.shape[0]
    children, key_ends = _trie(keys)

    # states above the free part, numbered from ``free`` in the order found
    any_state: list[int] = []  # the any-string state each has reached
    accepting: list[bool] = []
    found: list[tuple[int, tuple[tuple[str, int], ...]]] = []  # (trie node, live spelling states)
    ids: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}

    def add(node: int, live: tuple[tuple[str, int], ...], state_a: int, accepts: bool) -> int:
        number = free + len(found)
        if number >= limits.max_dfa_states:
            raise LimitExceeded(
                "max_dfa_states",
                limits.max_dfa_states,
                f"the keys other than {len(keys)} named ones would need more than {limits.max_dfa_states} states",
            )
        if number * 256 > limits.max_compile_work:
            raise LimitExceeded(
                "max_compile_work", limits.max_compile_work, "the other keys are too costly to build"
            )
        ids[(node, live)] = number
        found.append((node, live))
        any_state.append(state_a)
        accepting.append(accepts)
        return number

    roots = [-1] * len(children)  # the state of each trie node, once found

    def trie_state(node: int) -> int:
        if roots[node] < 0:
            live = tuple((c, spellings[c][0]) for c in sorted(children[node]))
            roots[node] = add(node, live, start_a, not key_ends[node])
        return roots[node]

    trie_state(0)
    rows: list[int] = []  # the overridden transitions: source, byte, target
    cols: list[int] = []
    targets: list[int] = []
    first_override = [0]
    k = 0
    while k < len(found):  # grows while it is read
        node, live = found[k]
        state_a = any_state[k]
        moves: dict[int, list[tuple[str, int]]] = {}
        for c, q in live:
            for b, q2 in spellings[c][2][q].items():
                moves.setdefault(b, []).append((c, q2))
        for b, nxt in moves.items():
            done = [c for c, q2 in nxt if spellings[c][1][q2]]
            if done:
                if len(nxt) > 1:
                    return None  # one spelling ends where another goes on
                target = trie_state(children[node][done[0]])
            else:
                live2 = tuple(nxt)
                got = ids.get((node, live2))
                if got is None:
                    after = int(table_a[state_a, b])
                    if after < 0:
                        return None  # a spelling the any-string automaton does not have
                    got = add(node, live2, after, bool(accepting_a[after]))
                target = got
            rows.append(free + k)
            cols.append(b)
            targets.append(target)
        first_override.append(len(rows))
        k += 1

    # merge the states whose rows and acceptance agree, each after the states it leads to
    n = len(found)
    rep = list(range(free + n))
    seen: dict[tuple[object, ...], int] = {}
    for k in _after_successors(n, free, first_override, targets):
        lo, hi = first_override[k], first_override[k + 1]
        sig = (any_state[k], accepting[k], *((cols[e], rep[targets[e]]) for e in range(lo, hi)))
        s = seen.setdefault(sig, free + k)
        rep[free + k] = s
    rep_of = np.array(rep, dtype=np.int64)
    kept = np.flatnonzero(rep_of[free:] == np.arange(free, free + n))
    number = np.arange(free + n, dtype=np.int64)
    number[free + kept] = free + np.arange(kept.size)
    final = number[rep_of]
    table = np.concatenate([table_a, table_a.take(np.array(any_state, dtype=np.int64)[kept], axis=0)])
    src = np.array(rows, dtype=np.int64)
    own = rep_of[src] == src
    table[final[src[own]], np.array(cols, dtype=np.int64)[own]] = final[
        np.array(targets, dtype=np.int64)[own]
    ]
    table.setflags(write=False)
    acc = np.concatenate([accepting_a, np.array(accepting, dtype=bool)[kept]])
    return dfa_to_ir(ByteDFA(table, acc, free))
