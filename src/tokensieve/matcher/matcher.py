"""GrammarMatcher: the per-sequence state of constrained decoding."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compile.constraint import CompiledConstraint, is_compiled_constraint
from ..errors import LimitExceeded

#: the native int32 dtype (compared by identity on the hot path)
_INT32 = np.dtype(np.int32)

__all__ = ["GrammarMatcher"]


class GrammarMatcher:
    """Tracks one sequence against a compiled grammar.

    A token that the grammar does not allow is refused (``accept_token``
    returns ``False``) and the state is left unchanged.

    The token loop (:meth:`accept_token`, :meth:`accept_string`,
    :meth:`fill_next_token_bitmask`, :meth:`next_token_mask`) raises one
    exception only: :class:`~tokensieve.LimitExceeded`, when a recursive
    grammar would pass a bound of its ``limits`` while decoding (a parse stack
    deeper than ``max_stack_depth``, more than ``max_stacks`` stacks at once,
    more than ``max_pushdown_states`` states); ``limit`` names the bound. The
    matcher is left as it was before the call, so the caller can end the
    sequence, or :meth:`rollback` and go on. Grammars without recursion never
    raise there.

    Parameters
    ----------
    compiled_grammar
        The constraint, shared read-only between matchers.
    max_rollback_tokens
        How many accepted tokens :meth:`rollback` can undo (``-1``: unlimited).
    terminate_without_stop_token
        If true, the matcher terminates as soon as the output is complete and
        nothing can follow, without waiting for a stop token.

    Notes
    -----
    Masks come from the compiled grammar's per-state cache, so a step costs one
    copy of ``ceil(V / 32)`` words once a state has been seen.
    """

    def __init__(
        self,
        compiled_grammar: CompiledConstraint,
        *,
        max_rollback_tokens: int = -1,
        terminate_without_stop_token: bool = False,
    ) -> None:
        if not is_compiled_constraint(compiled_grammar):
            raise TypeError("GrammarMatcher needs a compiled grammar from GrammarCompiler")
        self.compiled_grammar = compiled_grammar
        self.max_rollback_tokens = max_rollback_tokens
        self.terminate_without_stop_token = terminate_without_stop_token
        info = compiled_grammar.tokenizer_info
        self._vocab = info.decoded_vocab
        self._stop = info.stop_token_set
        self._special = info.special_token_set
        self._vocab_size = compiled_grammar.vocab_size
        self._state = compiled_grammar.start_state
        self._terminated = False
        self._history: list[tuple[int, bool]] = []

    # --------------------------------------------------------------- state
    @property
    def state(self) -> int:
        """Current automaton state."""
        return self._state

    def is_terminated(self) -> bool:
        """Whether a stop token has been accepted (or the output is final, see ``terminate_without_stop_token``)."""
        return self._terminated

    def is_completed(self) -> bool:
        """Whether the output so far is a complete match (a stop token would be accepted)."""
        return self._terminated or self.compiled_grammar.is_accepting(self._state)

    def reset(self) -> None:
        """Return to the start state and forget the history."""
        self._state = self.compiled_grammar.start_state
        self._terminated = False
        self._history.clear()

    # -------------------------------------------------------------- tokens
    def accept_token(self, token_id: int) -> bool:
        """Advance by one token.

        Returns
        -------
        bool
            ``True`` if the token was allowed and accepted; ``False`` (state
            unchanged) otherwise. A stop token is allowed exactly when the output
            is a complete match, and accepting it terminates the matcher.
        """
        if self._terminated:
            return False
        token_id = int(token_id)
        if token_id < 0 or token_id >= self._vocab_size:
            return False
        if token_id in self._stop:
            if not self.compiled_grammar.is_accepting(self._state):
                return False
            self._push(self._state, True)
            return True
        if token_id in self._special or token_id >= len(self._vocab):
            return False
        data = self._vocab[token_id]
        if not data:
            return False
        return self._step(data)

    def accept_string(self, text: str | bytes) -> bool:
        """Advance by a string (counts as one step for :meth:`rollback`).

        Returns ``False`` and leaves the state unchanged if the text would leave
        the language.
        """
        if self._terminated:
            return False
        return self._step(text.encode("utf-8") if isinstance(text, str) else bytes(text))

    def _step(self, data: bytes) -> bool:
        cg = self.compiled_grammar
        nxt = cg.step_bytes(self._state, data)  # may raise LimitExceeded: nothing is changed yet
        if nxt < 0:
            return False
        final = self.terminate_without_stop_token and cg.is_accepting(nxt) and not (cg.row(nxt) >= 0).any()
        self._push(nxt, final)
        return True

    def _push(self, state: int, terminated: bool) -> None:
        self._history.append((self._state, self._terminated))
        if 0 <= self.max_rollback_tokens < len(self._history):
            del self._history[0]
        self._state = state
        self._terminated = terminated

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens (or strings).

        Raises
        ------
        ValueError
            If more steps are requested than the history holds.
        """
        if num_tokens < 0 or num_tokens > len(self._history):
            raise ValueError(f"cannot roll back {num_tokens} tokens; {len(self._history)} can be undone")
        if num_tokens == 0:
            return
        self._state, self._terminated = self._history[-num_tokens]
        del self._history[-num_tokens:]

    @property
    def num_rollback_steps(self) -> int:
        """How many steps :meth:`rollback` can undo now."""
        return len(self._history)

    # --------------------------------------------------------------- masks
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Write the allowed next tokens into row ``index`` of ``bitmask``.

        Parameters
        ----------
        bitmask
            ``int32 (batch, ceil(V/32))`` numpy array or torch tensor (CPU or
            CUDA), as made by :func:`tokensieve.allocate_token_bitmask`; a
            wider row is accepted too, and every word past the vocabulary's
            is set to 0, on every path.
        index
            The row to fill.

        Returns
        -------
        bool
            Always ``True`` (the mask must be applied).
        """
        if (
            type(bitmask) is np.ndarray
            and bitmask.ndim == 2
            and bitmask.dtype is _INT32
            and not self._terminated
        ):
            cg = self.compiled_grammar
            if bitmask.shape[1] == cg.num_words:  # the usual case: the grammar writes the row
                cg.fill_row(self._state, bitmask[index])
                return True
        mask = self.next_token_mask()
        width = mask.shape[0]
        if isinstance(bitmask, np.ndarray):
            row = bitmask[index] if bitmask.ndim == 2 else bitmask
            if row.shape[0] < width or bitmask.dtype != np.int32:
                raise ValueError(
                    f"bitmask row must be int32 with at least {width} words; "
                    f"got {bitmask.dtype} {bitmask.shape}: use allocate_token_bitmask(batch, {self._vocab_size})"
                )
            row[:width] = mask
            row[width:] = 0
            return True
        import torch

        if not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32:
            raise ValueError("bitmask must be an int32 numpy array or torch tensor")
        row_t = bitmask[index] if bitmask.dim() == 2 else bitmask
        if row_t.shape[0] < width:
            raise ValueError(f"bitmask row must have at least {width} words; got {tuple(bitmask.shape)}")
        if row_t.device.type == "cpu":
            out = row_t.numpy()
            out[:width] = mask
            out[width:] = 0
        else:
            row_t[:width].copy_(torch.from_numpy(mask.copy()), non_blocking=False)
            row_t[width:] = 0
        return True

    def next_token_mask(self) -> np.ndarray:
        """The packed ``int32 (ceil(V/32),)`` mask for the next token (read-only; stop tokens once terminated)."""
        if self._terminated:
            return self._stop_only_mask()
        return self.compiled_grammar.token_mask(self._state)

    def _stop_only_mask(self) -> np.ndarray:
        allowed = np.zeros(((self._vocab_size + 31) // 32) * 32, dtype=bool)
        allowed[sorted(self._stop)] = True
        return np.packbits(allowed, bitorder="little").view(np.int32)

    # --------------------------------------------------------- jump-forward
    def find_jump_forward_string(self) -> str:
        """The text that must come next whatever is generated (may be empty).

        Follows the automaton while exactly one byte is possible and the output
        is not yet complete; only whole UTF-8 characters are returned.
        """
        if self._terminated:
            return ""
        cg = self.compiled_grammar
        state = self._state
        out = bytearray()
        seen = {state}
        try:
            while not cg.is_accepting(state):
                row = cg.row(state)
                allowed = np.flatnonzero(row >= 0)
                if allowed.size != 1:
                    break
                byte = int(allowed[0])
                state = int(row[byte])
                out.append(byte)
                if state in seen:
                    break
                seen.add(state)
        except LimitExceeded:  # the forced text ends where the grammar's bounds do
            pass
        # keep whole characters only
        while out:
            try:
                return out.decode("utf-8")
            except UnicodeDecodeError as exc:
                out = out[: exc.start]
        return ""

    def forced_tokens(self, max_tokens: int = 64) -> list[int]:
        """The tokens that must come next, as long as exactly one token is allowed at each step.

        Unlike :meth:`find_jump_forward_string`, this works at the token level:
        it stops as soon as two tokens (or a token and a stop token) are
        possible, so the forced tokens can be fed to the model without
        changing its tokenization. The matcher itself is not advanced.

        Parameters
        ----------
        max_tokens
            Upper bound on the number of tokens returned.

        Returns
        -------
        list of int
            The forced token ids (a stop token ends the list).
        """
        probe = self.fork()
        out: list[int] = []
        while len(out) < max_tokens and not probe.is_terminated():
            mask = probe.next_token_mask()
            if int(np.bitwise_count(mask.view(np.uint32)).sum()) != 1:
                break
            word = int(np.flatnonzero(mask)[0])
            token = word * 32 + int(mask.view(np.uint32)[word]).bit_length() - 1
            if not probe.accept_token(token):
                break
            out.append(token)
        return out

    def fork(self) -> GrammarMatcher:
        """An independent copy of this matcher (for beam search): same state and history."""
        clone = GrammarMatcher.__new__(GrammarMatcher)
        clone.__dict__.update(self.__dict__)
        clone._history = list(self._history)
        return clone

    def __repr__(self) -> str:
        return f"GrammarMatcher(state={self._state}, terminated={self._terminated})"
