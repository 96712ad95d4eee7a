"""Choosing one token from one row of logits, within a constraint's token budget.

Shared by :mod:`tokensieve.runtime.generate` (one sequence) and
:mod:`tokensieve.runtime.engine` (many): greedy at temperature 0, otherwise a
draw from the softmax (optionally cut to its top-``p`` nucleus) with the
sequence's own ``torch.Generator``, so a seed gives the same tokens however
the sequence is batched. A constrained sequence only takes a token after which
its output can still be completed within the tokens left (see
:mod:`tokensieve.runtime.planner`); a refused token is removed and another is
drawn, up to :data:`MAX_REJECTIONS` times.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import LimitExceeded, VocabularyError
from .planner import planner_for

__all__ = ["MAX_REJECTIONS", "BudgetCheck", "budget_check", "choose_token"]

#: How many sampled tokens may be refused for not fitting the budget before the
#: output is finished with the planned completion instead.
MAX_REJECTIONS = 32


def choose_token(
    torch: Any,
    logits: Any,
    *,
    temperature: float,
    generator: Any,
    stops: frozenset[int],
    fits: Callable[[int], bool] | None = None,
    top_p: float = 1.0,
) -> int | None:
    """Pick a token from one row of (masked) logits.

    Parameters
    ----------
    torch
        The torch module.
    logits
        float32 1-D tensor; changed in place (refused tokens are set to -inf).
    temperature
        0 for greedy; otherwise the softmax temperature.
    generator
        The sequence's ``torch.Generator``.
    stops
        Stop tokens: returned without asking ``fits``.
    fits
        Whether a (non-stop) token leaves the output completable; ``None``:
        every token does.
    top_p
        Keep the smallest set of most likely tokens whose probability reaches
        ``top_p`` (1: all).

    Returns
    -------
    int or None
        ``None`` when every allowed token was refused or none is left.
    """
    greedy = temperature == 0
    probs = None
    if not greedy:
        probs = torch.softmax(logits / temperature, dim=-1)
        if top_p < 1.0:
            probs = _nucleus(torch, probs, top_p)
    for _ in range(MAX_REJECTIONS):
        if probs is None:
            token = int(torch.argmax(logits))
            if logits[token] == -math.inf:
                return None
        else:
            if not float(probs.sum()) > 0.0:
                return None
            token = int(torch.multinomial(probs, 1, generator=generator))
        if token in stops or fits is None or fits(token):
            return token
        if probs is None:
            logits[token] = -math.inf
        else:
            probs[token] = 0.0
    return None


def _nucleus(torch: Any, probs: Any, top_p: float) -> Any:
    ordered, order = torch.sort(probs, descending=True)
    before = torch.cumsum(ordered, dim=-1) - ordered  # probability of the tokens ahead of each
    ordered[before >= top_p] = 0.0
    out = torch.zeros_like(probs)
    out.scatter_(-1, order, ordered)
    return out


class BudgetCheck:
    """Whether a constrained output can still be finished within a token budget.

    Parameters
    ----------
    compiled
        The compiled constraint.

    Attributes
    ----------
    planner : CompletionPlanner
        The constraint's shared planner.
    """

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self.planner = planner_for(compiled)
        self._vocab = compiled.tokenizer_info.decoded_vocab

    def check_start(self, state: int, max_tokens: int) -> None:
        """Refuse a budget below the shortest output of the constraint.

        Raises
        ------
        VocabularyError
            When no sequence of the vocabulary's tokens completes the constraint.
        LimitExceeded
            When the shortest output needs more than ``max_tokens`` tokens.
        """
        compiled = self.compiled
        needed = self.planner.tokens_needed(state, within=max_tokens)
        if needed is None and self.planner.exhaustive:
            raise VocabularyError(
                f"no sequence of the vocabulary's tokens completes {compiled.kind} {compiled.source!r}"
            )
        if needed is not None and needed > max_tokens:
            raise LimitExceeded(
                "max_tokens", max_tokens, f"the shortest output of this constraint needs {needed} tokens"
            )

    def fits_state(self, state: int, budget: int) -> bool:
        """Whether ``state`` can be completed in at most ``budget`` tokens (unknown: yes for lazy grammars)."""
        n = self.planner.tokens_needed(state, within=budget)
        return (not self.planner.exhaustive) if n is None else n <= budget

    def token_fits(self, token: int, state: int, left: int) -> bool:
        """Whether taking ``token`` in ``state`` leaves an output completable in ``left - 1`` tokens."""
        nxt = self.compiled.step_bytes(state, self._vocab[token])
        return nxt >= 0 and self.fits_state(nxt, left - 1)


def budget_check(compiled: Any) -> BudgetCheck:
    """A :class:`BudgetCheck` for ``compiled``.

    Parameters
    ----------
    compiled
        The compiled constraint.

    Returns
    -------
    BudgetCheck
    """
    return BudgetCheck(compiled)
