"""The compiled, immutable form of a constraint."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..limits import Limits
from .token_masks import loop_bytesets
from .vocab_cache import mask_builder_for

if TYPE_CHECKING:
    from ..automata import ByteDFA
    from ..vocab import TokenizerInfo

__all__ = ["CompiledGrammar"]

_FORMAT_VERSION = 1


class CompiledGrammar:
    """A constraint compiled against one vocabulary.

    A compiled grammar is an immutable value: its automaton and vocabulary never
    change, and it can be shared by any number of :class:`GrammarMatcher` objects
    and threads, and pickled (the token-mask cache is not part of the pickle; it
    is rebuilt lazily). Token masks are computed on first use per automaton
    state and memoised, up to ``limits.max_mask_cache_bytes``.

    Attributes
    ----------
    tokenizer_info : TokenizerInfo
        The vocabulary the masks are over.
    dfa : ByteDFA
        The minimal byte automaton of the constraint.
    kind : str
        ``"regex"`` or ``"choices"``.
    source : str
        The pattern (or a short description of the choice list).
    unenforced : tuple of str
        Parts of the constraint that are not enforced (empty for regexes and
        choices, which are always enforced exactly).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        dfa: ByteDFA,
        *,
        kind: str,
        source: str,
        limits: Limits | None = None,
        unenforced: Iterable[str] = (),
    ) -> None:
        self.tokenizer_info = tokenizer_info
        self.dfa = dfa
        self.kind = kind
        self.source = source
        self.limits = limits or Limits()
        self.unenforced = tuple(unenforced)
        self._builder = mask_builder_for(tokenizer_info)
        self._transitions = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
        self._accepting = np.asarray(dfa.accepting, dtype=bool)
        self._loops = loop_bytesets(self._transitions)
        self._masks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mask_bytes = 0
        self._rows: dict[int, list[int]] = {}
        self._lock = threading.Lock()

    # ----------------------------------------------------------- properties
    @property
    def start_state(self) -> int:
        """The automaton's start state."""
        return int(self.dfa.start)

    @property
    def num_states(self) -> int:
        """Number of automaton states."""
        return int(self._transitions.shape[0])

    @property
    def vocab_size(self) -> int:
        """Width of the masks, in tokens."""
        return self._builder.vocab_size

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by the automaton and the cached masks."""
        return int(self._transitions.nbytes + self._accepting.nbytes + self._loops.nbytes + self._mask_bytes)

    # ------------------------------------------------------------- runtime
    def is_accepting(self, state: int) -> bool:
        """Whether the text that led to ``state`` is a complete match."""
        return bool(self._accepting[state])

    def row(self, state: int) -> list[int]:
        """Transitions of ``state`` as a Python list (memoised; fast to index)."""
        row = self._rows.get(state)
        if row is None:
            row = self._transitions[state].tolist()
            self._rows[state] = row
        return row

    def step_bytes(self, state: int, data: bytes) -> int:
        """State after ``data`` from ``state``, or -1 if ``data`` leaves the language."""
        for byte in data:
            state = self.row(state)[byte]
            if state < 0:
                return -1
        return state

    def token_mask(self, state: int) -> np.ndarray:
        """Packed ``int32`` mask of the tokens allowed in ``state`` (read-only view)."""
        mask = self._masks.get(state)
        if mask is not None:
            return mask
        (mask,) = self._builder.masks(self._transitions, self._accepting, self._loops, [state])
        mask.setflags(write=False)
        self._store(state, mask)
        return mask

    def precompute(self, states: Iterable[int] | None = None) -> None:
        """Compute and cache the masks of ``states`` (all states by default) in one walk."""
        wanted = range(self.num_states) if states is None else states
        todo = [int(s) for s in wanted if int(s) not in self._masks]
        if not todo:
            return
        # walk in batches so the frontier stays bounded
        batch = 64
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            for s, mask in zip(
                part, self._builder.masks(self._transitions, self._accepting, self._loops, part), strict=True
            ):
                mask.setflags(write=False)
                self._store(s, mask)

    def _store(self, state: int, mask: np.ndarray) -> None:
        with self._lock:
            if state in self._masks:
                return
            self._masks[state] = mask
            self._mask_bytes += mask.nbytes
            while self._mask_bytes > self.limits.max_mask_cache_bytes and len(self._masks) > 1:
                _, old = self._masks.popitem(last=False)
                self._mask_bytes -= old.nbytes

    # --------------------------------------------------------------- pickle
    def __reduce__(self) -> tuple[Any, ...]:
        from ..automata import ByteDFA

        return (
            _rebuild,
            (
                _FORMAT_VERSION,
                self.tokenizer_info,
                ByteDFA(self._transitions, self._accepting, int(self.dfa.start)),
                self.kind,
                self.source,
                self.limits,
                self.unenforced,
            ),
        )

    def __repr__(self) -> str:
        src = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        return f"CompiledGrammar(kind={self.kind!r}, source={src!r}, states={self.num_states})"


def _rebuild(
    version: int,
    info: TokenizerInfo,
    dfa: ByteDFA,
    kind: str,
    source: str,
    limits: Limits,
    unenforced: tuple[str, ...],
) -> CompiledGrammar:
    if version != _FORMAT_VERSION:
        raise ValueError(
            f"cannot load a CompiledGrammar of format {version}; this version reads {_FORMAT_VERSION}"
        )
    return CompiledGrammar(info, dfa, kind=kind, source=source, limits=limits, unenforced=unenforced)
