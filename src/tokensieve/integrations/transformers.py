"""A ``transformers`` logits processor that constrains ``model.generate``.

Example
-------
>>> from transformers import AutoModelForCausalLM, AutoTokenizer  # doctest: +SKIP
>>> from tokensieve import GrammarCompiler, TokenizerInfo
>>> from tokensieve.integrations.transformers import TokensieveLogitsProcessor
>>> info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)  # doctest: +SKIP
>>> compiled = GrammarCompiler(info).compile_regex(r"\\d{4}-\\d{2}-\\d{2}")  # doctest: +SKIP
>>> processor = TokensieveLogitsProcessor(compiled)  # doctest: +SKIP
>>> out = model.generate(**inputs, logits_processor=[processor],
...                      eos_token_id=info.stop_token_ids, max_new_tokens=32)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import LogitsProcessor

from ..bitmask import apply_token_bitmask_inplace, bitmask_size
from ..matcher import GrammarMatcher

__all__ = ["TokensieveLogitsProcessor"]


class TokensieveLogitsProcessor(LogitsProcessor):
    """Masks the logits of ``model.generate`` so that each row follows its grammar.

    One :class:`~tokensieve.GrammarMatcher` per batch row follows the tokens
    that row has generated: on each call the processor reads the new last
    token of every row (the prompt, seen on the first call, is skipped),
    fills a ``(batch, ceil(V / 32))`` int32 bitmask and applies it with
    :func:`~tokensieve.apply_token_bitmask_inplace`. Logits wider than the
    vocabulary (padded embedding matrices) get their extra columns masked; a
    row whose output is complete and has taken a stop token only gets stop
    tokens from then on.

    Rows are re-synchronised from ``input_ids`` whenever they are not the
    previous call's rows plus one token (beam search reorders rows), so any
    decoding strategy of ``generate`` works. A new generation (a different
    prompt or batch) resets the matchers; :meth:`reset` does so explicitly.

    Parameters
    ----------
    compiled_grammars
        One compiled grammar for every row, or one per row. With ``k``
        grammars and a batch of ``n * k`` rows (``num_return_sequences`` or
        ``num_beams`` of ``n``), grammar ``i`` applies to rows
        ``i * n .. i * n + n - 1``, the order ``generate`` expands inputs in.

    Notes
    -----
    Pass the vocabulary's stop tokens to ``generate``
    (``eos_token_id=info.stop_token_ids``) so that every stop token the
    grammar allows also ends the row.

    Raises
    ------
    ValueError
        (when called) If the batch size does not fit the number of grammars,
        or a row holds a token its grammar refuses (the mask was not applied,
        for example because another processor ran after this one and changed
        the choice).
    """

    def __init__(self, compiled_grammars: Any | Sequence[Any]) -> None:
        if isinstance(compiled_grammars, (list, tuple)):
            grammars = list(compiled_grammars)
        else:
            grammars = [compiled_grammars]
        if not grammars:
            raise ValueError("TokensieveLogitsProcessor needs at least one compiled grammar")
        # fail early on objects that are not compiled grammars
        for g in grammars:
            GrammarMatcher(g)
        self.compiled_grammars = grammars
        self._matchers: list[GrammarMatcher] = []
        self._accepted: list[list[int]] = []
        self._prompt: torch.Tensor | None = None
        self._bitmask: np.ndarray | None = None

    # ---------------------------------------------------------------- API
    @property
    def matchers(self) -> list[GrammarMatcher]:
        """The per-row matchers of the current generation (empty before the first call)."""
        return list(self._matchers)

    def reset(self) -> None:
        """Forget the current generation; the next call starts a new one."""
        self._matchers = []
        self._accepted = []
        self._prompt = None
        self._bitmask = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Mask ``scores`` in place and return them.

        Parameters
        ----------
        input_ids
            ``(batch, length)``: the prompt followed by the tokens generated so far.
        scores
            ``(batch, V)`` logits of the next token.

        Returns
        -------
        torch.FloatTensor
            ``scores``, with every token the rows' grammars refuse at ``-inf``.
        """
        batch = int(input_ids.shape[0])
        if self._is_new_generation(input_ids):
            self._start(input_ids)
        else:
            assert self._prompt is not None
            generated = input_ids[:, self._prompt.shape[1] :].tolist()
            for row in range(batch):
                self._sync(row, generated[row])
        width = max(int(scores.shape[-1]), *(int(g.vocab_size) for g in self.compiled_grammars))
        words = bitmask_size(width)
        if self._bitmask is None or self._bitmask.shape != (batch, words):
            self._bitmask = np.zeros((batch, words), dtype=np.int32)
        for row, matcher in enumerate(self._matchers):
            matcher.fill_next_token_bitmask(self._bitmask, row)
        apply_token_bitmask_inplace(scores, torch.from_numpy(self._bitmask))
        return scores

    # ---------------------------------------------------------- internals
    def _is_new_generation(self, input_ids: torch.Tensor) -> bool:
        prompt = self._prompt
        if prompt is None or not self._matchers:
            return True
        if input_ids.shape[0] != prompt.shape[0] or input_ids.shape[1] <= prompt.shape[1]:
            return True
        head = input_ids[:, : prompt.shape[1]]
        return head.device != prompt.device or not torch.equal(head, prompt)

    def _start(self, input_ids: torch.Tensor) -> None:
        batch = int(input_ids.shape[0])
        k = len(self.compiled_grammars)
        if batch % k:
            raise ValueError(
                f"a batch of {batch} rows does not fit {k} grammars: pass one grammar, one per row, "
                "or one per input when generate repeats each input (num_return_sequences, num_beams)"
            )
        per = batch // k
        self._matchers = [GrammarMatcher(self.compiled_grammars[row // per]) for row in range(batch)]
        self._accepted = [[] for _ in range(batch)]
        self._prompt = input_ids.detach().clone()
        self._bitmask = None

    def _sync(self, row: int, tokens: list[int]) -> None:
        """Bring row ``row``'s matcher to the state after ``tokens``."""
        accepted = self._accepted[row]
        matcher = self._matchers[row]
        n = len(accepted)
        if len(tokens) == n + 1 and tokens[:n] == accepted:  # the usual case: one new token
            todo = tokens[n:]
        else:
            common = 0
            limit = min(n, len(tokens))
            while common < limit and accepted[common] == tokens[common]:
                common += 1
            if common == n and matcher.is_terminated():
                return  # padding after the stop token
            matcher.rollback(n - common)
            del accepted[common:]
            todo = tokens[common:]
        for token in todo:
            if matcher.is_terminated():
                return  # what follows a stop token is padding
            if not matcher.accept_token(token):
                raise ValueError(
                    f"row {row} generated token {token}, which its grammar does not allow here: "
                    "was the mask overridden by a later logits processor?"
                )
            accepted.append(int(token))
