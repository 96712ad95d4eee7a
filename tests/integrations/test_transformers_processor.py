"""TokensieveLogitsProcessor: unit tests on a tiny vocabulary, and model.generate with the real model."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.regex_oracle import complete_by_regex
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, TokenizerInfo
from tokensieve.bitmask import bitmask_to_bool
from tokensieve.runtime import LoadedModel

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tokensieve.integrations.transformers import TokensieveLogitsProcessor  # noqa: E402

PAD_WIDTH = 64  # logits wider than the vocabulary, as padded embedding matrices are


@pytest.fixture(scope="module")
def tiny() -> tuple[GrammarCompiler, int]:
    vocab = make_tiny_vocab()
    info = TokenizerInfo(vocab, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
    return GrammarCompiler(info), info.vocab_size + PAD_WIDTH


def _allowed(scores: torch.Tensor) -> list[set[int]]:
    return [set(torch.nonzero(row > -float("inf")).flatten().tolist()) for row in scores]


def _drive(processor, prompts: torch.Tensor, width: int, steps: int, seed: int) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """A minimal sampling loop over random logits, as ``generate`` runs it (no early stop)."""
    gen = torch.Generator().manual_seed(seed)
    ids = prompts
    for _ in range(steps):
        scores = torch.randn(ids.shape[0], width, generator=gen)
        scores[:, EOS] -= 4.0
        scores = processor(ids, scores)
        probs = torch.softmax(scores, dim=-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


def _text(vocab: list[bytes], tokens: list[int]) -> bytes:
    out = bytearray()
    for t in tokens:
        if t == EOS:
            break
        out += vocab[t]
    return bytes(out)


def test_batch_rows_follow_their_own_grammars(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    vocab = compiler.tokenizer_info.decoded_vocab
    patterns = [r"\d{4}-\d{2}-\d{2}", r"(abc|x)+"]
    processor = TokensieveLogitsProcessor([compiler.compile_regex(p) for p in patterns])
    prompts = torch.tensor([[5, 6, 7], [8, 9, 10]])
    ids = _drive(processor, prompts, width, steps=14, seed=0)
    for row, pattern in enumerate(patterns):
        generated = ids[row, 3:].tolist()
        text = _text(vocab, generated)
        if EOS in generated:
            assert complete_by_regex(pattern, text)
            # after the stop token only stop tokens are allowed
            assert all(t == EOS for t in generated[generated.index(EOS) :])
        else:
            assert re.fullmatch(r"[\d-]*" if row == 0 else r"[abcx]*", text.decode("utf-8", "replace"))


def test_padding_columns_and_terminated_rows(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    info = compiler.tokenizer_info
    processor = TokensieveLogitsProcessor(compiler.compile_choices(["x"]))
    prompt = torch.tensor([[3, 4]])
    scores = processor(prompt, torch.zeros(1, width))
    allowed = _allowed(scores)[0]
    assert allowed and max(allowed) < info.vocab_size  # padding columns are masked
    x = info.decoded_vocab.index(b"x")
    assert x in allowed and EOS not in allowed
    scores = processor(torch.tensor([[3, 4, x]]), torch.zeros(1, width))
    assert _allowed(scores)[0] == {EOS}  # complete: only a stop token may follow
    scores = processor(torch.tensor([[3, 4, x, EOS]]), torch.zeros(1, width))
    assert _allowed(scores)[0] == {EOS}  # terminated: the row is padded with stop tokens
    scores = processor(torch.tensor([[3, 4, x, EOS, EOS]]), torch.zeros(1, width))
    assert _allowed(scores)[0] == {EOS}


def test_one_grammar_per_input_is_repeated_for_returned_sequences(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    info = compiler.tokenizer_info
    processor = TokensieveLogitsProcessor([compiler.compile_choices(["a"]), compiler.compile_choices(["b"])])
    scores = processor(torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, width))
    a, b = info.decoded_vocab.index(b"a"), info.decoded_vocab.index(b"b")
    allowed = _allowed(scores)
    assert [a in s for s in allowed] == [True, True, False, False]
    assert [b in s for s in allowed] == [False, False, True, True]
    with pytest.raises(ValueError, match="does not fit"):
        TokensieveLogitsProcessor([compiler.compile_choices(["a"])] * 2)(
            torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, width)
        )


def test_reordered_rows_are_resynchronised(tiny: tuple[GrammarCompiler, int]) -> None:
    # beam search swaps rows between steps; each row's matcher must follow its own tokens
    compiler, width = tiny
    vocab = compiler.tokenizer_info.decoded_vocab
    processor = TokensieveLogitsProcessor(compiler.compile_regex(r"(ab|ax)c"))
    a, b, x = vocab.index(b"a"), vocab.index(b"b"), vocab.index(b"x")
    c = vocab.index(b"c")
    processor(torch.tensor([[1, 1], [1, 1]]), torch.zeros(2, width))
    processor(torch.tensor([[1, 1, a], [1, 1, a]]), torch.zeros(2, width))
    processor(torch.tensor([[1, 1, a, b], [1, 1, a, x]]), torch.zeros(2, width))
    # the rows swap places
    scores = processor(torch.tensor([[1, 1, a, x, c], [1, 1, a, b, c]]), torch.zeros(2, width))
    assert _allowed(scores) == [{EOS}, {EOS}]
    assert [m.is_completed() for m in processor.matchers] == [True, True]


def test_new_prompt_starts_a_new_generation(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    vocab = compiler.tokenizer_info.decoded_vocab
    processor = TokensieveLogitsProcessor(compiler.compile_choices(["ab"]))
    a = vocab.index(b"a")
    processor(torch.tensor([[2, 3]]), torch.zeros(1, width))
    processor(torch.tensor([[2, 3, a]]), torch.zeros(1, width))
    # a second generate() call with another prompt
    scores = processor(torch.tensor([[7, 8, 9]]), torch.zeros(1, width))
    assert a in _allowed(scores)[0]


def test_refused_token_is_an_error(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    vocab = compiler.tokenizer_info.decoded_vocab
    processor = TokensieveLogitsProcessor(compiler.compile_choices(["ab"]))
    processor(torch.tensor([[2, 3]]), torch.zeros(1, width))
    with pytest.raises(ValueError, match="does not allow"):
        processor(torch.tensor([[2, 3, vocab.index(b"z")]]), torch.zeros(1, width))


def test_masks_match_the_bitmask_layout(tiny: tuple[GrammarCompiler, int]) -> None:
    compiler, width = tiny
    compiled = compiler.compile_regex(r"[a-c]+")
    processor = TokensieveLogitsProcessor(compiled)
    scores = processor(torch.tensor([[2]]), torch.zeros(1, width))
    vocab_size = compiler.tokenizer_info.vocab_size
    expected = bitmask_to_bool(np.asarray(compiled.token_mask(compiled.start_state))[None, :], vocab_size)[0]
    allowed = (scores[0] > -float("inf")).numpy()
    assert allowed[:vocab_size].tolist() == expected.tolist()
    assert not allowed[vocab_size:].any()


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_model_generate_with_a_batch_of_two_constraints(smollm2: LoadedModel) -> None:
    tok = smollm2.tokenizer
    patterns = [r"\d{4}-\d{2}-\d{2}", r"(Yes|No), because [a-z ]{5,40}\."]
    prompts = ["When was the Eiffel tower finished?", "Is the sky blue? Explain briefly."]
    texts = [
        tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    old_side = tok.padding_side
    tok.padding_side = "left"
    try:
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tok.padding_side = old_side
    stops = smollm2.tokenizer_info.stop_token_ids
    for do_sample in (False, True):
        processor = TokensieveLogitsProcessor([smollm2.compiler.compile_regex(p) for p in patterns])
        torch.manual_seed(0)
        out = smollm2.model.generate(
            **enc,
            logits_processor=[processor],
            max_new_tokens=48,
            do_sample=do_sample,
            temperature=1.0 if do_sample else None,
            eos_token_id=stops,
            pad_token_id=tok.pad_token_id,
        )
        for row, pattern in enumerate(patterns):
            generated = out[row, enc["input_ids"].shape[1] :].tolist()
            assert any(t in stops for t in generated), "the row must end with a stop token"
            text = tok.decode(generated, skip_special_tokens=True)
            assert re.fullmatch(pattern, text), (do_sample, text)
