"""Frame walks of a rule network: the tokens one frame allows, depth first over the token trie.

A *frame walk* (see :mod:`.pushdown`) starts from the frame of one global
state alone at some trie nodes and follows the token bytes below them. A path
is a trie node and a configuration: the state on top and the frames pushed
since the walk began. A byte moves the top state through the global
transition table; a state that calls pushes ``(callee start, return state)``
(a tail call replaces the top instead); a state that may return pops the last
pushed frame, or, with nothing pushed, marks the node as an *escape node*: the
frame below the origin's goes on from there. A node's configurations are kept
distinct, so an ambiguous grammar does not multiply paths.

Every token whose bytes a path reads to the end is allowed. A configuration
whose state loops on every byte below its node (counting well-formed UTF-8
characters as loop bytes for a state that takes each back to itself, or each
but the line separators U+2028 and U+2029, as a ``pattern``'s ``.`` does)
allows the whole subtree at once, and the walk does not descend there: the calls,
returns and escape nodes it would meet below could only add tokens below the
node, all allowed already.

The walk is one loop in a numba kernel (:mod:`._frame_kernel`, imported on the
first walk), so its cost is the trie nodes and configurations it visits, a few
nanoseconds each, whatever the depth of the stack it serves.

:func:`dfa_walk` is the same walk for one state of a plain DFA, with no frames
(:mod:`._dfa_kernel`, loaded with it): the masks a
:class:`~tokensieve.compile.compiled_grammar.CompiledGrammar` first needs while
decoding.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from ..automata import kernels as automata_kernels
from ..bitmask import friendly_zeros
from ..errors import LimitExceeded
from .background import in_walker
from .utf8_closure import UTF8_DOT_TABLE, utf8_subtree_ok

if TYPE_CHECKING:
    from .automaton_view import AutomatonView
    from .token_masks import TokenMaskBuilder

__all__ = [
    "FrameTables",
    "Workspace",
    "dfa_walk",
    "frame_walk",
    "frame_walks",
    "kernel_ready",
    "load_kernel",
    "trie_arrays",
]

_TRIES: weakref.WeakKeyDictionary[TokenMaskBuilder, tuple[np.ndarray, ...]] = weakref.WeakKeyDictionary()
_SCRATCH: weakref.WeakKeyDictionary[TokenMaskBuilder, threading.local] = weakref.WeakKeyDictionary()


_KERNEL: list[Callable[..., tuple[int, int]]] = []  # the loaded kernel, once it is
_DFA_KERNEL: list[Callable[..., int]] = []  # and the DFA walk's (:mod:`._dfa_kernel`): without, with the GIL
_LOADER: list[threading.Thread] = []
_LOADER_LOCK = threading.Lock()


def kernel_ready() -> bool:
    """Whether the kernel is loaded; the first call starts loading it in a background thread.

    Loading imports numba and loads the machine code it keeps beside
    :mod:`._frame_kernel` (about 0.3 s; several seconds the first time on a
    machine, when it compiles). Until it is ready, callers walk with the numpy
    walk of :mod:`.level_walk` (the same masks), so that the first compilation
    in a process does not wait for it.
    """
    if _KERNEL:
        return True
    with _LOADER_LOCK:
        if not _LOADER:
            loader = threading.Thread(target=_load, name="tokensieve-frame-kernel", daemon=True)
            _LOADER.append(loader)
            loader.start()
    return False


def load_kernel() -> None:
    """Load the kernel now (waiting for a load in progress)."""
    kernel_ready()
    _LOADER[0].join()
    if not _KERNEL:
        _load()  # the background load failed: say why here


def _load() -> None:
    automata_kernels.load()  # numba: the automata stage's kernels first (a compile needs them before any walk)
    from ._dfa_kernel import dfa_walk_kernel, dfa_walk_kernel_gil  # numba: imported on the first walk only
    from ._frame_kernel import walk_kernel

    # one walk over a one-node trie (as trie_arrays has it) by each kernel, with the argument types of real walks
    one = np.zeros(1, dtype=np.int64)
    trie = (np.zeros(2, dtype=np.int64), *(np.zeros(0, dtype=np.int64),) * 2, *(one,) * 3,
            np.zeros((1, 4), dtype=np.uint64), np.ones((2, 1), dtype=bool), np.zeros(0, dtype=np.int64),
            np.zeros((1, 4), dtype=np.uint64))
    dfa_kernels = [cast("Callable[..., int]", k) for k in (dfa_walk_kernel, dfa_walk_kernel_gil)]
    for dfa_kernel in dfa_kernels:  # a one-state automaton
        dfa_kernel(_read_only(np.full(256, -1, dtype=np.int32)), np.zeros((1, 4), dtype=np.uint64),
                   np.zeros(1, dtype=bool), np.zeros(1, dtype=np.int8), 0, *trie[:9],
                   np.zeros(1, dtype=np.uint32), one.copy(), one.copy())
    _DFA_KERNEL.extend(dfa_kernels)

    kernel = cast("Callable[..., tuple[int, int]]", walk_kernel)
    # a one-state network
    tables = FrameTables(np.full((1, 256), -1, dtype=np.int32), np.ones(1, dtype=bool), [()],
                         np.zeros((1, 4), dtype=np.uint64), np.zeros(1, dtype=np.int8))
    space = Workspace(1)
    space.fit(tables)
    kernel(*_tables_args(tables), *trie, one.copy(), np.zeros(0, dtype=np.int64), one.copy(), 1, 0,
           np.zeros((1, 1), dtype=np.uint32), np.zeros(1, dtype=np.int64), space.seen_call, space.seen_set, 1,
           *space.tables())
    _KERNEL.append(kernel)


def _read_only(table: np.ndarray) -> np.ndarray:
    """``table``, read-only (a view when it is writable): the kernel is loaded for read-only tables only."""
    if table.flags.writeable:
        table = table.view()
        table.setflags(write=False)
    return table


def _tables_args(tables: FrameTables) -> tuple[np.ndarray, ...]:
    return (
        tables.trans, tables.accept, tables.special, tables.call_start, tables.call_callee,
        tables.call_ret, tables.has_loop, tables.loops, tables.utf8,
    )


class FrameTables:
    """A rule network's global automaton as the frame walk reads it.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)``: the global byte transitions (-1: none).
    accepting
        ``bool (S,)``: the states where a rule may return.
    calls
        Per global state, its ``(callee start state, return state)`` edges
        (return state -1: a tail call).
    loops, utf8
        ``uint64 (S, 4)`` loop bytes of each state (the bytes 0x80-0xFF
        included for ``utf8`` states) and ``int8 (S,)``: the states that take
        every well-formed UTF-8 character back to themselves (1), or every one
        but the line separators (2), as the :attr:`~tokensieve.compile.automaton_view.AutomatonView.kernel_loops`
        and :attr:`~tokensieve.compile.automaton_view.AutomatonView.utf8_kind` of the automaton.
    """

    def __init__(
        self,
        transitions: np.ndarray,
        accepting: np.ndarray,
        calls: list[tuple[tuple[int, int], ...]],
        loops: np.ndarray,
        utf8: np.ndarray,
    ) -> None:
        self.trans = np.ascontiguousarray(transitions, dtype=np.int32).reshape(-1)
        self.accept = np.ascontiguousarray(accepting, dtype=np.bool_)
        sizes = np.fromiter(map(len, calls), dtype=np.int64, count=len(calls))
        self.call_start = np.zeros(len(calls) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.call_start[1:])
        flat = [edge for edges in calls for edge in edges]
        self.call_callee = np.array([c for c, _ in flat], dtype=np.int64)
        self.call_ret = np.array([r for _, r in flat], dtype=np.int64)
        self.special = self.accept | (sizes > 0)
        self.loops = np.ascontiguousarray(loops, dtype=np.uint64)
        self.has_loop = (self.loops != 0).any(axis=1)
        self.utf8 = np.ascontiguousarray(utf8, dtype=np.int8)

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables (the transition table included)."""
        return int(sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray)))


def _child_bits(child_start: np.ndarray, child_byte: np.ndarray, num_nodes: int) -> np.ndarray:
    """``uint64 (N, 4)``: the bytes along which each trie node has a child, as 256-bit sets."""
    bits = np.zeros((num_nodes, 4), dtype=np.uint64)
    starts = child_start.astype(np.int64)
    parent = np.repeat(np.arange(num_nodes, dtype=np.int64), starts[1:] - starts[:-1])
    byte = child_byte.astype(np.int64)
    np.bitwise_or.at(bits, (parent, byte >> 6), np.left_shift(np.uint64(1), (byte & 63).astype(np.uint64)))
    return bits


def trie_arrays(builder: TokenMaskBuilder) -> tuple[np.ndarray, ...]:
    """The trie as the kernel reads it, once per vocabulary (tens of milliseconds for 131k tokens).

    :class:`~tokensieve.compile.compiler.GrammarCompiler` builds them with
    the token trie, so that no compile pays for them.
    """
    known = _TRIES.get(builder)
    if known is None:
        trie = builder.trie
        ids = trie.child_ids.astype(np.int64)
        known = (
            trie.child_start.astype(np.int64),
            ids,
            trie.node_byte.astype(np.int64)[ids],
            trie.token_lo.astype(np.int64),
            trie.token_mid.astype(np.int64),
            trie.token_hi.astype(np.int64),
            np.ascontiguousarray(trie.subtree_bytes, dtype=np.uint64),
            # per kind of UTF-8 loop (see AutomatonView.utf8_kind), the nodes below which it closes a subtree
            # (writable, as in the warm-up of _load: one specialisation)
            np.array([builder.utf8_ok, utf8_subtree_ok(trie, UTF8_DOT_TABLE)], dtype=np.bool_),
            trie.sorted_tokens.astype(np.int64),
            _child_bits(trie.child_start, trie.node_byte[ids], trie.num_nodes),
        )
        _TRIES[builder] = known
    return known


class Workspace:
    """One thread's tables for the walks of one vocabulary (see :mod:`._frame_kernel`), grown on demand.

    Per trie node, the walk and the set it was last walked with; and the
    tables of pushed frames, configurations, closures, sets and their members,
    their child sets per byte, and the escape nodes found.
    """

    def __init__(self, num_nodes: int) -> None:
        self.seen_call = np.full(num_nodes, -1, dtype=np.int64)
        self.seen_set = np.zeros(num_nodes, dtype=np.int64)
        self.calls = 0
        self.stamps = np.zeros(2, dtype=np.int64)  # the kernel's counters: marks, walks
        self._owner: weakref.ref[FrameTables] | None = None  # whose states the configuration table holds
        self._size(num_states=0, scale=1, escapes=max(4096, num_nodes // 8))

    def _size(self, num_states: int, scale: int, escapes: int) -> None:
        self.pushes = np.zeros((256 * scale, 3), dtype=np.int64)
        self.cfg = np.zeros((num_states + 1024 * scale, 6), dtype=np.int64)
        self._owner = None
        self.reach = np.zeros(4096 * scale, dtype=np.int64)
        self.buf = np.zeros(1024 * scale, dtype=np.int64)
        self.sets = np.zeros((256 * scale, 8), dtype=np.int64)
        self.set_trans = np.zeros((256 * scale, 256), dtype=np.int32)
        self.set_bits = np.zeros((256 * scale, 4), dtype=np.uint64)
        self.members = np.zeros(8192 * scale, dtype=np.int64)
        self.loopers = np.zeros(1024 * scale, dtype=np.int64)
        self.live = np.zeros(256 * 256 * scale, dtype=np.int64)
        self.escapes = np.zeros(escapes, dtype=np.int64)
        self.scale = scale

    def fit(self, tables: FrameTables) -> None:
        """The configuration table set for ``tables``' automaton: a row per state with nothing pushed,
        room for more."""
        if self._owner is not None and self._owner() is tables:
            return
        num_states = int(tables.accept.shape[0])
        if self.cfg.shape[0] < num_states + 1024 * self.scale:
            self.cfg = np.zeros((num_states + 1024 * self.scale, 6), dtype=np.int64)
        self.cfg[:num_states, 0] = np.arange(num_states)  # (state, nothing pushed)
        self.cfg[:num_states, 1] = 0
        self.cfg[:num_states, 5] = -1  # no closure list
        self._owner = weakref.ref(tables)

    def grow(self, num_states: int) -> None:
        """Every table twice as large (a walk found one full)."""
        self._size(num_states, self.scale * 2, 2 * self.escapes.shape[0])

    def tables(self) -> tuple[np.ndarray, ...]:
        """The tables, in the kernel's order."""
        return (
            self.pushes, self.cfg, self.reach, self.buf, self.sets, self.set_trans, self.set_bits,
            self.members, self.loopers, self.live, self.escapes, self.stamps,
        )


def _per_thread(builder: TokenMaskBuilder) -> threading.local:
    """This thread's scratch for walks over ``builder``'s trie: a frame walk's workspace, a DFA walk's stacks."""
    per_thread = _SCRATCH.get(builder)
    if per_thread is None:
        per_thread = _SCRATCH.setdefault(builder, threading.local())
    return per_thread


def _workspace(builder: TokenMaskBuilder) -> Workspace:
    """This thread's workspace for walks over ``builder``'s trie."""
    per_thread = _per_thread(builder)
    space: Workspace | None = getattr(per_thread, "space", None)
    if space is None:
        space = per_thread.space = Workspace(int(builder.trie.num_nodes))
    return space


def frame_walk(
    tables: FrameTables,
    builder: TokenMaskBuilder,
    origin: int,
    start_nodes: np.ndarray | None,
    max_stack_depth: int,
    below: Sequence[int] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """The tokens the frame of global state ``origin`` allows below ``start_nodes``, and its escape nodes.

    Parameters
    ----------
    tables
        The rule network's automaton.
    builder
        The vocabulary's mask builder (its trie).
    origin
        The global state on top of the frame.
    start_nodes
        Trie nodes the walk starts from (None: the root). The tokens that end
        exactly at a start node are allowed too.
    max_stack_depth
        The most frames one path may push.
    below
        The frames under the origin's, bottom first (their states to return
        to): the walk returns into them, and escapes only where the last
        returns. Empty: the origin's frame alone.

    Returns
    -------
    (mask, escapes)
        The packed ``int32`` mask (no stop tokens; read-only) and the escape
        nodes (``int32``, sorted, distinct).

    Raises
    ------
    LimitExceeded
        When a path pushes more than ``max_stack_depth`` frames.
    """
    return frame_walks(tables, builder, [origin], start_nodes, max_stack_depth, below)[0]


def frame_walks(
    tables: FrameTables,
    builder: TokenMaskBuilder,
    origins: Sequence[int],
    start_nodes: np.ndarray | None,
    max_stack_depth: int,
    below: Sequence[int] = (),
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`frame_walk` for several origins, in one call of the kernel (the same start nodes and frames
    below for all; the configurations and sets found are shared between them). When a table of the
    workspace fills up, the origins are walked in halves; a walk of one grows the tables."""
    from ._frame_kernel import FULL, TOO_DEEP

    if not _KERNEL:
        load_kernel()
    trie = trie_arrays(builder)
    nodes = np.zeros(1, dtype=np.int64) if start_nodes is None else np.ascontiguousarray(start_nodes, dtype=np.int64)
    frames = np.asarray(below, dtype=np.int64)
    space = _workspace(builder)
    num_states = int(tables.accept.shape[0])
    out: list[tuple[np.ndarray, np.ndarray]] = []
    todo = [np.asarray(origins, dtype=np.int64)]
    while todo:
        starts = todo.pop()
        k = int(starts.size)
        masks = friendly_zeros((k, builder.num_words), np.uint32)
        ends = np.zeros(k, dtype=np.int64)
        space.fit(tables)
        first_call = space.calls + 1
        space.calls += k
        count, work = _KERNEL[0](
            *_tables_args(tables),
            *trie,
            starts,
            frames,
            nodes,
            int(max_stack_depth),
            int(builder.trie.max_depth),
            masks,
            ends,
            space.seen_call,
            space.seen_set,
            first_call,
            *space.tables(),
        )
        if work == FULL:
            if k > 1:
                todo += [starts[k // 2 :], starts[: k // 2]]
            else:
                space.grow(num_states)  # and walk again with room enough
                todo.append(starts)
            continue
        if work == TOO_DEEP:
            raise LimitExceeded("max_stack_depth", max_stack_depth, "the parse stack is too deep")
        builder.add_work(int(work))
        begin = 0
        for i in range(k):
            mask = masks[i].view(np.int32)
            mask.setflags(write=False)
            escapes = space.escapes[begin : ends[i]]
            begin = int(ends[i])
            if escapes.size > 1 and not bool((escapes[1:] > escapes[:-1]).all()):
                escapes = np.unique(escapes)  # from start nodes one below another (a walk from one is in order)
            out.append((mask, escapes.astype(np.int32)))
    return out


def dfa_walk(
    builder: TokenMaskBuilder, automaton: AutomatonView, state: int, aside: bool = False
) -> np.ndarray | None:
    """The packed mask of DFA state ``state`` from one depth-first walk in the JIT kernel, or None.

    The same tokens as :meth:`~tokensieve.compile.token_masks.TokenMaskBuilder.compute`
    gives (the stop tokens included where ``state`` accepts), in time
    proportional to the trie nodes the walk visits, whatever the state. None
    while the kernel is loading (the first call starts it, see
    :func:`kernel_ready`) and for automata
    the kernel does not read: those without an ``(S, 256)`` table (large
    choice lists) or with more than ``2**23`` states.

    Parameters
    ----------
    builder
        The vocabulary's mask builder (its trie; the walk's work is added to
        its count).
    automaton
        The automaton's walk arrays.
    state
        The state whose mask to compute.
    aside
        Called from a thread beside decoding: the kernel lets go of the GIL
        (a decoding step holds it through its walk instead).

    Returns
    -------
    numpy.ndarray or None
        ``int32 (num_words,)``, writable, made where copies from it are fast.
    """
    trans = automaton.trans
    if trans is None or trans.dtype != np.int32 or not kernel_ready():
        return None
    per_thread = _per_thread(builder)
    stacks: tuple[np.ndarray, np.ndarray] | None = getattr(per_thread, "stacks", None)
    if stacks is None:
        num_nodes = int(builder.trie.num_nodes)
        stacks = per_thread.stacks = (np.zeros(num_nodes, dtype=np.int64), np.zeros(num_nodes, dtype=np.int64))
    mask = friendly_zeros(builder.num_words, np.uint32)
    work = _DFA_KERNEL[0 if aside or in_walker() else 1](
        _read_only(trans), automaton.kernel_loops, automaton.has_loop, automaton.utf8_kind, int(state),
        *trie_arrays(builder)[:9], mask, *stacks,
    )
    builder.add_work(int(work))
    if automaton.accepting[state]:
        for word, bit in builder.stop_pairs:
            mask[word] |= np.uint32(bit)
    return mask.view(np.int32)
