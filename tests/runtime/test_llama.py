"""The slot-cached Llama forward pass against transformers' own forward on SmolLM2.

Tolerances, stated: float32 logits agree with transformers' within 1e-3
(float32 rounding of a differently ordered computation); bfloat16 and int8 are
lossy, so only their greedy choices are compared, on a fixed set of prompts.
"""

from __future__ import annotations

import pytest

from tokensieve.runtime import LoadedModel
from tokensieve.runtime.llama import FastLlama, supports

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.xdist_group("smollm2")]

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "1, 2, 3, 4, 5,",
]


def _reference(loaded: LoadedModel, ids: list[int]):
    import torch

    with torch.inference_mode():
        return loaded.model(torch.tensor([ids])).logits[0].float()


def _ids(loaded: LoadedModel, text: str) -> list[int]:
    return list(loaded.tokenizer(text)["input_ids"])


def test_fp32_logits_match_transformers_in_prefill_and_decode(smollm2: LoadedModel) -> None:
    import torch

    fast = FastLlama(smollm2.model, weights="fp32", max_slots=3, max_len=128)
    a, b = _ids(smollm2, PROMPTS[0]), _ids(smollm2, PROMPTS[2])
    ref_a, ref_b = _reference(smollm2, a), _reference(smollm2, b)
    # two prompts of different lengths in one padded pass, in slots 1 and 2
    out = fast.forward(1, [a[:3], b[:5]], [0, 0])
    assert torch.allclose(out[0], ref_a[2], atol=1e-3) and torch.allclose(out[1], ref_b[4], atol=1e-3)
    # then both rows decode a token at a time, at different positions
    for step in range(3, len(a)):
        j = step + 2
        out = fast.forward(1, [[a[step]], [b[j]]], [step, j])
        assert torch.allclose(out[0], ref_a[step], atol=1e-3), (out[0] - ref_a[step]).abs().max()
        assert torch.allclose(out[1], ref_b[j], atol=1e-3), (out[1] - ref_b[j]).abs().max()
    # a chunk of several tokens after a cached prefix (jump-forward feeds chunks)
    out = fast.forward(0, [b[:2]], [0])
    out = fast.forward(0, [b[2:6]], [2])
    assert torch.allclose(out[0], ref_b[5], atol=1e-3)


def test_moved_slot_continues_the_same_sequence(smollm2: LoadedModel) -> None:
    import torch

    fast = FastLlama(smollm2.model, weights="fp32", max_slots=4, max_len=64)
    ids = _ids(smollm2, PROMPTS[1])
    ref = _reference(smollm2, ids)
    fast.forward(3, [ids[:4]], [0])
    fast.move_slot(3, 0, 4)
    out = fast.forward(0, [[ids[4]]], [4])
    assert torch.allclose(out[0], ref[4], atol=1e-3)


@pytest.mark.parametrize("weights", ["bf16", "int8"])
def test_lossy_formats_keep_greedy_choices(smollm2: LoadedModel, weights: str) -> None:
    import torch

    fast = FastLlama(smollm2.model, weights=weights, max_slots=1, max_len=128)
    agree = total = 0
    for text in PROMPTS:
        ids = _ids(smollm2, text)
        ref = _reference(smollm2, ids)
        # every position's greedy choice: each prefix run as a prompt
        for end in range(2, len(ids) + 1):
            out = fast.forward(0, [ids[:end]], [0])
            agree += int(torch.argmax(out[0]) == torch.argmax(ref[end - 1]))
            total += 1
    # measured: bf16 and int8 agree on every position of these prompts
    assert agree >= total - 1, f"{weights}: {agree}/{total} greedy choices agree"


def test_support_and_bad_arguments(smollm2: LoadedModel) -> None:
    assert supports(smollm2.model)
    assert not supports(object())
    with pytest.raises(ValueError, match="weights"):
        FastLlama(smollm2.model, weights="fp8")
    fast = FastLlama(smollm2.model, weights="bf16", max_slots=2, max_len=8)
    with pytest.raises(ValueError, match="max_len"):
        fast.forward(0, [list(range(1, 10))], [0])
    with pytest.raises(ValueError, match="slots"):
        fast.forward(1, [[1], [2]], [0, 0])


TEXT = (
    "The lighthouse stood at the end of a long stone pier, and every evening the keeper climbed its "
    "steps to light the lamp. Ships passing in the night relied on its beam to find the harbour entrance, "
    "which was narrow and guarded by rocks on both sides."
)


def test_perplexity_of_each_format_against_transformers(smollm2: LoadedModel) -> None:
    """Stated tolerances: fp32 equal within 1e-4 (relative), bf16 within 2 %, int8 within 4 %."""
    import torch

    ids = _ids(smollm2, TEXT)
    target = torch.tensor(ids[1:])

    def ppl(logits: torch.Tensor) -> float:
        return float(torch.exp(torch.nn.functional.cross_entropy(logits[:-1], target)))

    reference = ppl(_reference(smollm2, ids))
    for weights, tolerance in (("fp32", 1e-4), ("bf16", 0.02), ("int8", 0.04)):
        fast = FastLlama(smollm2.model, weights=weights, max_slots=1, max_len=len(ids))
        got = ppl(fast.forward(0, [ids], [0], every_position=True))
        assert abs(got / reference - 1) <= tolerance, (weights, got, reference)


def test_transformers_runner_agrees_with_the_fp32_step(smollm2: LoadedModel) -> None:
    """The fallback runner (any model folder) against the Llama step: two implementations, same logits."""
    import torch

    from tokensieve.runtime.runner import TransformersRunner, make_runner

    assert isinstance(make_runner(smollm2.model, weights=None, max_slots=1, max_len=8), FastLlama)
    runner = TransformersRunner(smollm2.model, max_slots=2, max_len=64)
    fast = FastLlama(smollm2.model, weights="fp32", max_slots=2, max_len=64)
    a, b = _ids(smollm2, PROMPTS[0]), _ids(smollm2, PROMPTS[3])
    for model in (runner, fast):
        model.forward(0, [a[:4], b[:6]], [0, 0])
        model.move_slot(1, 0, 6)  # the second row continues in slot 0
    got = runner.forward(0, [b[6:8]], [6])
    want = fast.forward(0, [b[6:8]], [6])
    assert torch.allclose(got, want, atol=1e-3), (got - want).abs().max()
