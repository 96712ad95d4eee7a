"""The processor follows vLLM's batch updates row by row (no engine: vLLM's own config and BatchUpdate types).

Oracle: brute force over the vocabulary. After the tokens ``t1..tk`` a row's
allowed tokens are exactly those whose bytes extend the text so far to a
prefix of one of the choices (or, once the text is a choice, the stop token).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm.v1.sample.logits_processor",
    reason="vLLM is not installed in this interpreter: run `bash scripts/install-vllm.sh`, "
    "then `.venv-vllm/bin/python -m pytest -q tests/vllm`",
)
import torch  # noqa: E402

CHOICES = {"a": ["yes", "no"], "b": ["maybe", "never"], "c": ["ok"]}


@pytest.fixture(scope="module")
def processor_factory(model_dir: Path) -> Any:
    from vllm.config import ModelConfig, VllmConfig

    from tokensieve.integrations.vllm import LogitsProcessor

    config = VllmConfig(model_config=ModelConfig(model=str(model_dir), dtype="float32"))
    return lambda: LogitsProcessor(config, torch.device("cpu"), False)


@pytest.fixture(scope="module")
def vocab(model_dir: Path) -> list[bytes]:
    from vllm.tokenizers import get_tokenizer

    from tokensieve.integrations._vllm_vocab import tokenizer_info_from

    info = tokenizer_info_from(get_tokenizer(str(model_dir)), vocab_size=49152, stop_token_ids=[2])
    return info.decoded_vocab


def expected(vocab: list[bytes], choices: list[str], text: bytes) -> set[int]:
    words = [c.encode() for c in choices]
    allowed = {i for i, t in enumerate(vocab) if t and any(w.startswith(text + t) for w in words)}
    if text in words:
        allowed.add(2)
    return allowed


def finite(logits: torch.Tensor, row: int) -> set[int]:
    return set(torch.isfinite(logits[row]).nonzero().flatten().tolist())


def params(choices: list[str] | None) -> Any:
    from vllm import SamplingParams

    return SamplingParams(extra_args=None if choices is None else {"structured_outputs": {"choice": choices}})


def update(size: int, removed=(), added=(), moved=()) -> Any:  # type: ignore[no-untyped-def]
    from vllm.v1.sample.logits_processor import BatchUpdate

    return BatchUpdate(batch_size=size, removed=list(removed), added=list(added), moved=list(moved))


def token_for(vocab: list[bytes], piece: bytes) -> int:
    return vocab.index(piece)


def test_rows_follow_adds_moves_swaps_and_removals(processor_factory: Any, vocab: list[bytes]) -> None:
    from vllm.v1.sample.logits_processor import MoveDirectionality

    proc = processor_factory()
    outputs: dict[str, list[int]] = {"a": [], "b": [], "c": [], "free": []}
    proc.update_state(
        update(
            4,
            added=[
                (0, params(CHOICES["a"]), [1], outputs["a"]),
                (1, params(None), [1], outputs["free"]),
                (2, params(CHOICES["b"]), [1], outputs["b"]),
                (3, params(CHOICES["c"]), [1], outputs["c"]),
            ],
        )
    )
    logits = proc.apply(torch.zeros(4, 49152))
    assert finite(logits, 0) == expected(vocab, CHOICES["a"], b"")
    assert len(finite(logits, 1)) == 49152  # a free row is untouched
    assert finite(logits, 2) == expected(vocab, CHOICES["b"], b"")
    assert finite(logits, 3) == expected(vocab, CHOICES["c"], b"")

    # each row samples a token: vLLM appends it to the request's own output list
    outputs["a"].append(token_for(vocab, b"y"))
    outputs["b"].append(token_for(vocab, b"ma"))
    outputs["c"].append(token_for(vocab, b"ok"))
    outputs["free"].append(token_for(vocab, b"Hello"))
    # rows 0 and 2 swap places, row 3 moves into the free row's place 1 (which leaves)
    proc.update_state(
        update(
            3, removed=[1], moved=[(0, 2, MoveDirectionality.SWAP), (3, 1, MoveDirectionality.UNIDIRECTIONAL)]
        )
    )
    logits = proc.apply(torch.zeros(3, 49152))
    assert finite(logits, 2) == expected(vocab, CHOICES["a"], b"y")
    assert finite(logits, 0) == expected(vocab, CHOICES["b"], b"ma")
    assert finite(logits, 1) == expected(vocab, CHOICES["c"], b"ok") == {2}

    # an asynchronously scheduled step: the sampled token is not known yet (-1); nothing advances
    outputs["a"].append(-1)
    logits = proc.apply(torch.zeros(3, 49152))
    assert finite(logits, 2) == expected(vocab, CHOICES["a"], b"y")
    outputs["a"][-1] = token_for(vocab, b"es")
    logits = proc.apply(torch.zeros(3, 49152))
    assert finite(logits, 2) == expected(vocab, CHOICES["a"], b"yes") == {2}

    # a new request takes a removed row's place; the removed row's constraint is gone
    outputs["new"] = []
    proc.update_state(update(3, removed=[1], added=[(1, params(None), [1], outputs["new"])]))
    logits = proc.apply(torch.zeros(3, 49152))
    assert len(finite(logits, 1)) == 49152


def test_a_refused_token_ends_only_its_row(processor_factory: Any, vocab: list[bytes]) -> None:
    proc = processor_factory()
    out_a: list[int] = []
    out_b: list[int] = []
    proc.update_state(
        update(2, added=[(0, params(CHOICES["a"]), [1], out_a), (1, params(CHOICES["b"]), [1], out_b)])
    )
    proc.apply(torch.zeros(2, 49152))
    out_a.append(token_for(vocab, b"z"))  # not allowed: something overrode the mask
    out_b.append(token_for(vocab, b"ne"))
    logits = proc.apply(torch.zeros(2, 49152))
    assert finite(logits, 0) == {2}  # ended: stop token only
    assert finite(logits, 1) == expected(vocab, CHOICES["b"], b"ne")
