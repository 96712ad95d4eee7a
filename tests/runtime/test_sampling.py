"""Token choice from logits (no model): frequencies, nucleus, budget refusals, row independence."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tokensieve.runtime.requests import SamplingParams  # noqa: E402
from tokensieve.runtime.sampling import choose_token, draw_rows  # noqa: E402

PROBS = [0.5, 0.3, 0.15, 0.05]


def _logits(probs: list[float]) -> torch.Tensor:
    return torch.log(torch.tensor(probs, dtype=torch.float32))


def test_batched_draws_follow_the_softmax() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = _logits(PROBS)[None].repeat(4, 1)
    counts = [0] * len(PROBS)
    draws = 4000
    for _ in range(draws // 4):
        for token in draw_rows(torch, logits, [1.0] * 4, [1.0] * 4, [gen] * 4):
            assert token is not None
            counts[token] += 1
    for p, c in zip(PROBS, counts, strict=True):
        # four standard deviations of a binomial count
        assert abs(c - p * draws) <= 4 * math.sqrt(draws * p * (1 - p)), counts


def test_a_rows_draw_does_not_depend_on_the_other_rows() -> None:
    rows = torch.randn(6, 300)
    alone = [
        draw_rows(torch, rows[i : i + 1], [0.9], [1.0], [torch.Generator().manual_seed(i)])[0]
        for i in range(6)
    ]
    together = draw_rows(
        torch, rows, [0.9] * 6, [1.0] * 6, [torch.Generator().manual_seed(i) for i in range(6)]
    )
    assert together == alone
    greedy = draw_rows(torch, rows, [0.0] * 6, [1.0] * 6, [torch.Generator()] * 6)
    assert greedy == [int(torch.argmax(r)) for r in rows]


def test_nucleus_keeps_only_the_top_tokens() -> None:
    gen = torch.Generator().manual_seed(1)
    logits = _logits(PROBS)[None]
    # top_p = 0.7: tokens 0 and 1 (0.5 + 0.3 reaches it), never 2 or 3
    seen = {draw_rows(torch, logits, [1.0], [0.7], [gen])[0] for _ in range(300)}
    assert seen == {0, 1}
    seen = {
        choose_token(torch, logits[0], temperature=1.0, generator=gen, stops=frozenset(), top_p=0.7)
        for _ in range(300)
    }
    assert seen == {0, 1}


def test_refused_tokens_are_redrawn_and_masked_rows_give_none() -> None:
    gen = torch.Generator().manual_seed(2)
    logits = _logits(PROBS)
    for temperature in (0.0, 1.0):
        picks = {
            choose_token(
                torch,
                logits,
                temperature=temperature,
                generator=gen,
                stops=frozenset(),
                fits=lambda t: t == 3,
            )
            for _ in range(20)
        }
        assert picks == {3}
        # a stop token is taken without asking the budget
        assert (
            choose_token(
                torch,
                logits,
                temperature=temperature,
                generator=gen,
                stops=frozenset({0, 1, 2, 3}),
                fits=lambda t: False,
            )
            is not None
        )
        assert (
            choose_token(
                torch, logits, temperature=temperature, generator=gen, stops=frozenset(), fits=lambda t: False
            )
            is None
        )
    dead = torch.full((1, 4), -math.inf)
    assert draw_rows(torch, dead, [1.0], [1.0], [gen]) == [None]
    assert draw_rows(torch, dead, [0.0], [1.0], [gen]) == [None]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", -1),
        ("temperature", math.nan),
        ("top_p", 1.5),
        ("max_tokens", 0),
        ("stop", [""]),
        ("top_logprobs", 21),
        ("seed", 1.5),
    ],
)
def test_sampling_params_refuse_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingParams(**{field: value})  # type: ignore[arg-type]
