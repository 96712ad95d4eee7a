"""The contract between a compiled constraint and the matchers that drive it.

:class:`~tokensieve.compile.compiled_grammar.CompiledGrammar` (one automaton)
and :class:`~tokensieve.compile.pushdown.CompiledPushdownGrammar` (a recursive
grammar, states interned sets of parse stacks) both derive from
:class:`CompiledConstraint` (so that the type checker holds them to it) and
:class:`~tokensieve.GrammarMatcher` uses nothing else of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ..limits import Limits
    from ..vocab import TokenizerInfo

__all__ = ["CompiledConstraint", "is_compiled_constraint"]


class CompiledConstraint(Protocol):
    """A constraint compiled against one vocabulary, as a state machine over bytes with token masks.

    States are integers; a state is reached from :attr:`start_state` by the
    bytes of the output so far. Every method may be called from several
    threads at once.

    Attributes
    ----------
    tokenizer_info
        The vocabulary the masks are over.
    limits
        The bounds applied while compiling and decoding.
    kind, source
        What was compiled (``"regex"``, ``"json_schema"``...) and its text.
    unenforced
        Parts of the constraint that are not enforced, as reported by the compiler.
    """

    tokenizer_info: TokenizerInfo
    limits: Limits
    kind: str
    source: str
    unenforced: tuple[str, ...]

    @property
    def start_state(self) -> int:
        """The state before any output."""
        ...

    @property
    def vocab_size(self) -> int:
        """Token ids the masks cover."""
        ...

    @property
    def num_words(self) -> int:
        """``ceil(vocab_size / 32)``: the ``int32`` words of one mask."""
        ...

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by the automaton and the memoised masks."""
        ...

    def is_accepting(self, state: int) -> bool:
        """Whether the output that led to ``state`` is complete (a stop token is allowed)."""
        ...

    def row(self, state: int) -> np.ndarray:
        """``int32 (256,)``, read-only: the state after each byte (-1: the byte is not allowed)."""
        ...

    def step_bytes(self, state: int, data: bytes) -> int:
        """The state after ``data`` from ``state``, or -1 if ``data`` leaves the language.

        Raises
        ------
        LimitExceeded
            Where following ``data`` would pass a bound of :attr:`limits`
            (recursive grammars: stack depth, parse stacks, states).
        """
        ...

    def token_mask(self, state: int) -> np.ndarray:
        """``int32 (num_words,)``, read-only: the tokens allowed in ``state`` (stop tokens when accepting).

        Bits past :attr:`vocab_size` in the last word are 0.
        """
        ...

    def fill_row(self, state: int, row: np.ndarray) -> None:
        """Write :meth:`token_mask` of ``state`` into ``row`` (``int32 (num_words,)``)."""
        ...


def is_compiled_constraint(value: object) -> bool:
    """Whether ``value``'s class derives from :class:`CompiledConstraint` (cheap: no attribute is read)."""
    return CompiledConstraint in type(value).__mro__
