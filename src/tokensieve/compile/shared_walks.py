"""Frame walks and walk classes that grammars share, by the arrays of the rules they read.

A frame walk from the root reads only the automata of a rule and of the rules
it can call, so it is the same in every grammar whose rules there are the same
automata; rule automata are remembered by body and limits (see
:func:`~tokensieve.automata.pushdown.compile_grammar_automaton`), so grammars
that share a rule have the very same arrays. Per vocabulary, such walks (masks
and escape nodes, :func:`shared_walks_for`) are remembered under the rules'
identity (:func:`rule_keys`), and so are the walk classes of a rule's states
(:func:`walk_classes`, :func:`rule_classes`): an entry holds the arrays by weak
reference and is used only while they are the same objects.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .._memo import BoundedMemo
from ..automata.pushdown import RuleNetwork
from .shared_masks import mask_representatives

__all__ = [
    "RuleKey",
    "SharedWalk",
    "reachable_rules",
    "rule_classes",
    "rule_keys",
    "same_objects",
    "shared_walks_for",
    "walk_classes",
]

#: per rule: the objects its frame walks read, those objects as a memo entry holds them, an identity
RuleKey = tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]
#: a shared walk from the root: the rules' objects as held, the mask, the escape nodes
SharedWalk = tuple[tuple[Any, ...], np.ndarray, np.ndarray]

#: rules of fewer states than this do not look for states with the same walks
_SHARE_MIN_STATES = 64
#: per vocabulary, the frame walks from the root of rules that grammars share (by the rule
#: automata of the rules they reach, see :func:`rule_keys`), at most this many bytes of masks
#: and escape nodes
_SHARED_WALK_BYTES = 64 << 20
_SHARED_WALKS: weakref.WeakKeyDictionary[Any, BoundedMemo[SharedWalk]] = weakref.WeakKeyDictionary()
_SHARED_WALKS_LOCK = threading.Lock()
#: the walk classes of shared rules (see :func:`walk_classes`), by the same keys
_SHARED_CLASSES: BoundedMemo[tuple[tuple[Any, ...], np.ndarray]] = BoundedMemo(max_size=16 << 20)


def shared_walks_for(builder: object) -> BoundedMemo[SharedWalk]:
    """The memo of shared walks from the root of one vocabulary (by its mask builder), made on first use.

    Keyed by ``(identity, state within the rule)``, the identity from
    :func:`rule_keys`; an entry is used only while :func:`same_objects` holds.
    """
    shared = _SHARED_WALKS.get(builder)
    if shared is None:
        with _SHARED_WALKS_LOCK:
            shared = _SHARED_WALKS.setdefault(builder, BoundedMemo(max_size=_SHARED_WALK_BYTES))
    return shared


def rule_classes(
    network: RuleNetwork, r: int, key: RuleKey, maybe_empty: list[bool], depth: int
) -> tuple[np.ndarray, bool]:
    """The walk classes of rule ``r`` (:func:`walk_classes`, read-only), shared between grammars.

    ``key`` is the rule's entry of :func:`rule_keys`. Returns the classes and
    whether they were computed now (``False``: remembered from a grammar with
    the same rules).
    """
    refs, held, ident = key
    known = _SHARED_CLASSES.get((ident, depth))
    if known is not None and same_objects(known[0], refs):
        return known[1], False
    classes = walk_classes(network.transitions[r], network.accepting[r], network.calls[r], maybe_empty, depth)
    classes.setflags(write=False)
    _SHARED_CLASSES.put((ident, depth), (held, classes), int(classes.nbytes))
    return classes, True


def reachable_rules(network: RuleNetwork) -> list[list[int]]:
    """Per rule, the rules it can reach by calls, itself included (sorted)."""
    # each rule's own callees, read off its states' call edges once
    callees = [{callee for edges in rule_calls for callee, _ in edges} for rule_calls in network.calls]
    out: list[list[int]] = []
    for r in range(len(network.names)):
        seen = {r}
        todo = [r]
        while todo:
            for callee in callees[todo.pop()] - seen:
                seen.add(callee)
                todo.append(callee)
        out.append(sorted(seen))
    return out


def rule_keys(network: RuleNetwork, max_stack_depth: int) -> list[RuleKey]:
    """Per rule, what its frame walks read: the arrays of the rules it can reach by calls.

    Returns, per rule, the objects (transitions, acceptance and call edges of
    each rule reached, the rule itself included), those objects as a memo
    entry holds them (see :func:`_held`), and a hashable identity: the rule's
    index, the stack bound, each reached rule's index and start, and the ids
    of those objects. What is remembered under the identity is used only while
    it holds the same objects, so an id taken over by another object matches
    nothing.
    """
    out: list[RuleKey] = []
    for r, rules in enumerate(reachable_rules(network)):
        refs = tuple(x for c in rules for x in (network.transitions[c], network.accepting[c], network.calls[c]))
        # the rule itself first: rules that call each other reach the same rules
        ident = (r, max_stack_depth, *((c, int(network.starts[c])) for c in rules), *(id(x) for x in refs))
        out.append((refs, _held(refs), ident))
    return out


def _held(objects: tuple[Any, ...]) -> tuple[Any, ...]:
    """``objects`` as a memo entry holds them: arrays by weak reference, the rest as they are.

    A remembered walk must not keep a rule's table alive (tens of megabytes for
    a large rule, against the kilobytes the memo counts); once the table is
    gone the entry matches nothing.
    """
    return tuple(weakref.ref(x) if isinstance(x, np.ndarray) else x for x in objects)


def same_objects(held: tuple[Any, ...], objects: tuple[Any, ...]) -> bool:
    """Whether a memo entry's ``held`` objects (see :func:`_held`) are ``objects`` themselves."""
    return all(
        (h() if isinstance(h, weakref.ref) else h) is x for h, x in zip(held, objects, strict=True)
    )


def walk_classes(
    transitions: np.ndarray,
    accepting: np.ndarray,
    calls: tuple[tuple[tuple[int, int], ...], ...],
    maybe_empty: list[bool],
    depth: int,
) -> np.ndarray:
    """For each state of one rule, the first state whose walks are certainly the same.

    A walk from a frame alone allows the tokens whose bytes the frame can read
    (entering and returning from the rules it calls) and escapes at the trie
    nodes where the frame can return. Two states agree on both when they agree,
    for every byte string up to the longest token, on where they can go, where
    they accept, and which rules they call with returns that agree as well.
    Moore's refinement decides this in ``depth`` rounds: a round looks one byte
    further, and a call one byte or more, since a called rule that cannot match
    the empty string reads at least one byte. A state that calls a rule that
    may match the empty string is left in a class of its own.

    Parameters
    ----------
    transitions
        ``(S, 256)`` byte transitions of the rule (-1: none).
    accepting
        ``bool (S,)``: where the rule may return.
    calls
        ``calls[q]``: the ``(callee, return state)`` edges of state ``q``.
    maybe_empty
        Per rule of the network: whether it may match the empty string
        (a conservative answer is fine).
    depth
        The longest token, in bytes.

    Returns
    -------
    numpy.ndarray
        ``int64 (S,)``: ``rep[q] <= q``.
    """
    num_states = int(transitions.shape[0])
    if num_states < _SHARE_MIN_STATES:
        return np.arange(num_states, dtype=np.int64)
    # Encoded for the refinement of shared_masks: after the byte columns come the return
    # states of the calls, then a tag column to one extra state per initial class (whether
    # the state accepts, which rules it calls). The extra states differ from every state
    # (no tag) and from each other (self-loops on the columns of the bits of their class).
    width = max((len(edges) for edges in calls), default=0)
    kinds: dict[tuple[Any, ...], int] = {}
    kind = np.zeros(num_states, dtype=np.int64)
    returns = np.full((num_states, width), -1, dtype=np.int32)
    accept = np.asarray(accepting, dtype=bool)
    for q, edges in enumerate(calls):
        key: tuple[Any, ...] = (bool(accept[q]),)
        if edges:
            ordered = sorted(edges)
            returns[q, : len(ordered)] = [ret for _, ret in ordered]
            if any(maybe_empty[callee] for callee, _ in ordered):
                key = ("alone", q)
            else:
                key = (bool(accept[q]), *(callee for callee, _ in ordered))
        kind[q] = kinds.setdefault(key, len(kinds))
    num_kinds = len(kinds)
    bits = max(1, int(num_kinds - 1).bit_length())
    total = num_states + num_kinds
    table = np.full((total, 256 + width + 1 + bits), -1, dtype=np.int32)
    table[:num_states, :256] = transitions
    table[:num_states, 256 : 256 + width] = returns
    table[:num_states, 256 + width] = num_states + kind
    extra = np.arange(num_kinds, dtype=np.int64)
    for bit in range(bits):
        table[num_states + extra, 257 + width + bit] = np.where((extra >> bit) & 1, num_states + extra, -1)
    # the refinement's first round is the pattern of missing columns, the second sees the
    # tags: two rounds more than the bytes of a token
    reps = mask_representatives(table, np.zeros(total, dtype=bool), depth + 2)
    return reps[:num_states].astype(np.int64)
