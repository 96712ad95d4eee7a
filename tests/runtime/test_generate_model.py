"""Constrained generation with the real SmolLM2-135M-Instruct model."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tokensieve import LimitExceeded
from tokensieve.runtime import LoadedModel, converted_dir, default_model_path, generate, load_model
from tokensieve.runtime.cache import is_converted

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.xdist_group("smollm2")]

DATE = r"\d{4}-\d{2}-\d{2}"
QUESTION = "When was the Eiffel tower finished?"


@pytest.mark.parametrize(("seed", "temperature"), [(0, 0.0), (1, 0.7), (2, 1.0), (3, 1.5)])
def test_date_regex_is_always_complete(smollm2: LoadedModel, seed: int, temperature: float) -> None:
    compiled = smollm2.compiler.compile_regex(DATE)
    stream = generate(
        smollm2.model, smollm2.tokenizer, compiled, QUESTION, seed=seed, temperature=temperature
    )
    pieces = list(stream)
    text = "".join(pieces)
    assert re.fullmatch(DATE, text), text
    assert text == stream.text
    assert len(pieces) > 1  # streamed token by token, not in one piece at the end
    assert stream.finish_reason == "stop" and stream.forced_tokens == 0
    assert stream.num_prompt_tokens > 10  # the chat template was applied


def test_greedy_is_deterministic_and_seeds_reproduce(smollm2: LoadedModel) -> None:
    compiled = smollm2.compiler.compile_regex(DATE)
    a = smollm2.generate(compiled, QUESTION, seed=5, temperature=1.2, max_tokens=16).read()
    b = smollm2.generate(compiled, QUESTION, seed=5, temperature=1.2, max_tokens=16).read()
    assert a == b


def test_choices_with_multibyte_characters(smollm2: LoadedModel) -> None:
    choices = ["café ☕", "naïve 😀", "plain"]
    compiled = smollm2.compiler.compile_choices(choices)
    for seed in range(2):
        stream = smollm2.generate(compiled, "Pick one.", seed=seed, temperature=1.0)
        pieces = list(stream)
        assert "".join(pieces) in choices
        assert all("\ufffd" not in p for p in pieces)


def test_small_budget_still_gives_a_complete_sentence(smollm2: LoadedModel) -> None:
    pattern = r"(Yes|No), because [a-z ]+\."
    compiled = smollm2.compiler.compile_regex(pattern)
    for seed in range(2):
        stream = smollm2.generate(
            compiled, "Is the sky blue? Explain.", seed=seed, temperature=1.0, max_tokens=8
        )
        text = stream.read()
        assert re.fullmatch(pattern, text), text
        assert len(stream.token_ids) <= 8


def test_budget_below_the_shortest_output_is_refused(smollm2: LoadedModel) -> None:
    compiled = smollm2.compiler.compile_regex(DATE)
    stream = smollm2.generate(compiled, QUESTION, max_tokens=3)
    with pytest.raises(LimitExceeded, match="max_tokens"):
        next(stream)


def test_plain_prompt_without_chat_template(smollm2: LoadedModel) -> None:
    compiled = smollm2.compiler.compile_regex(r"[0-9]{2}")
    stream = smollm2.generate(compiled, "The answer is ", chat=False, temperature=0.0)
    assert re.fullmatch(r"[0-9]{2}", stream.read())
    assert stream.num_prompt_tokens < 10


def test_second_load_reads_the_cache(smollm2: LoadedModel) -> None:
    gguf = default_model_path()
    folder = converted_dir(gguf)
    assert smollm2.source == gguf and smollm2.path == folder and is_converted(folder)
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    t0 = time.perf_counter()
    again = load_model(progress=False)
    elapsed = time.perf_counter() - t0
    assert not again.converted and again.path == folder
    assert again.tokenizer_info == smollm2.tokenizer_info
    # the slow path (reading and dequantising the GGUF file) takes about 20 s
    assert elapsed < 15, f"loading from the cache took {elapsed:.1f} s"


def test_hugging_face_folder_is_accepted(smollm2_converted: Path) -> None:
    loaded = load_model(smollm2_converted, progress=False)
    assert loaded.source == smollm2_converted and loaded.path == smollm2_converted and not loaded.converted
    assert loaded.logits_size == 49152
    compiled = loaded.compiler.compile_choices(["red", "green", "blue"])
    assert loaded.generate(compiled, "Pick a colour.", temperature=0.0).read() in ("red", "green", "blue")
