"""Choosing one token from one row of logits, within a constraint's token budget.

Shared by :mod:`tokensieve.runtime.generate` (one sequence) and
:mod:`tokensieve.runtime.engine` (many): greedy at temperature 0, otherwise a
draw from the softmax (optionally cut to its top-``p`` nucleus) with the
sequence's own ``torch.Generator``, so a seed gives the same tokens however
the sequence is batched. A constrained sequence only takes a token after which
its output can still be completed within the tokens left (see
:mod:`tokensieve.runtime.planner`); a refused token is removed and another is
drawn (without replacement), up to :data:`MAX_REJECTIONS` times.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LimitExceeded, VocabularyError
from .planner import planner_for

__all__ = ["MAX_REJECTIONS", "BudgetCheck", "choose_token", "draw_rows"]

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
        float32 1-D tensor (not changed).
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
    if temperature == 0:
        keys = logits
    else:
        probs = torch.softmax(logits / temperature, dim=-1)
        if top_p < 1.0:
            probs = _nucleus(torch, probs, top_p)
        # sampling without replacement, all candidates at once: the largest p / Exp(1)
        # come in the order successive draws that remove each refused token would give
        keys = probs / torch.empty_like(probs).exponential_(generator=generator)
    values, order = torch.topk(keys, min(MAX_REJECTIONS, int(keys.shape[-1])))
    for value, token in zip(values.tolist(), order.tolist(), strict=True):
        if value == -math.inf or (temperature != 0 and not value > 0.0):
            return None
        if token in stops or fits is None or fits(token):
            return token
    return None


def draw_rows(
    torch: Any,
    logits: Any,
    temperatures: Sequence[float],
    top_ps: Sequence[float],
    generators: Sequence[Any],
) -> list[int | None]:
    """One token per row of ``(rows, vocab)`` logits, all rows at once.

    Rows at temperature 0 take their argmax; the others draw by inverting the
    softmax's cumulative sum at one uniform number from the row's own
    generator. Every operation works row by row, so a row's token does not
    depend on the other rows. The caller checks the token against the
    row's budget and falls back to :func:`choose_token` when it does not fit.

    Parameters
    ----------
    torch
        The torch module.
    logits
        float32 ``(rows, vocab)``, masked already (not changed).
    temperatures, top_ps, generators
        Each row's sampling parameters and ``torch.Generator``.

    Returns
    -------
    list of int or None
        ``None`` for a row with nothing allowed.
    """
    n = int(logits.shape[0])
    out: list[int | None] = [None] * n
    greedy = [i for i in range(n) if temperatures[i] == 0]
    sampled = [i for i in range(n) if temperatures[i] != 0]
    if greedy:
        sub = logits[torch.as_tensor(greedy)]
        best = torch.argmax(sub, dim=-1)
        values = sub.gather(1, best[:, None])[:, 0]
        for j, i in enumerate(greedy):
            out[i] = int(best[j]) if bool(values[j] > -math.inf) else None
    if sampled:
        temps = torch.as_tensor([float(temperatures[i]) for i in sampled], dtype=torch.float32)[:, None]
        probs = torch.softmax(logits[torch.as_tensor(sampled)] / temps, dim=-1)
        for j, i in enumerate(sampled):
            if top_ps[i] < 1.0:
                probs[j] = _nucleus(torch, probs[j], float(top_ps[i]))
        cdf = torch.cumsum(probs, dim=-1)
        total = cdf[:, -1]
        u = torch.cat([torch.rand(1, generator=generators[i]) for i in sampled])
        tokens = torch.searchsorted(cdf, (u * total)[:, None], right=True)[:, 0].clamp_(max=cdf.shape[1] - 1)
        picked = probs.gather(1, tokens[:, None])[:, 0]
        for j, i in enumerate(sampled):
            ok = bool(total[j] > 0) and bool(picked[j] > 0)
            out[i] = int(tokens[j]) if ok else None
    return out


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
