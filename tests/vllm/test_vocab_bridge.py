"""The vocabulary read from the tokenizers vLLM loads: Hugging Face (SmolLM2) and Mistral (Tekken, SentencePiece).

Oracle: each tokenizer's own encoder. The bytes tokensieve gives the ids that
the tokenizer encodes a text into must spell that text.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm.v1.sample.logits_processor",
    reason="vLLM is not installed in this interpreter: run `bash scripts/install-vllm.sh`, "
    "then `.venv-vllm/bin/python -m pytest -q tests/vllm`",
)

from tokensieve.integrations._vllm_vocab import stop_ids_from, tokenizer_info_from  # noqa: E402

TEXTS = [
    "Hello, wörld! ✓ 123",
    '{"key": [1, 2.5, null]}\n\tend',
    "日本語のテキスト and emoji 🎉",
    "  spaces   ",
]


def spelled(info: Any, ids: list[int]) -> bytes:
    return b"".join(info.decoded_vocab[i] for i in ids)


def mistral_folder(tmp_path: Path, name: str, as_name: str) -> Path:
    spec = importlib.util.find_spec("mistral_common")
    assert spec is not None and spec.origin is not None
    (tmp_path / as_name).symlink_to(Path(spec.origin).parent / "data" / name)
    return tmp_path


def test_hugging_face_tokenizer(model_dir: Path) -> None:
    from vllm.tokenizers import get_tokenizer

    tokenizer = get_tokenizer(str(model_dir))
    generation = {"eos_token_id": 2}
    info = tokenizer_info_from(
        tokenizer, vocab_size=49152 + 64, stop_token_ids=stop_ids_from(tokenizer, generation)
    )
    assert info.num_real_tokens == 49152 and info.vocab_size == 49152 + 64
    assert info.stop_token_ids == [2]  # <|im_end|>: what vLLM stops on, not <|endoftext|> too
    assert all(info.decoded_vocab[i] == b"" for i in range(49152, 49152 + 64))  # padding never produces text
    for text in TEXTS:
        assert spelled(info, tokenizer.encode(text, add_special_tokens=False)) == text.encode()


def test_mistral_tekken(tmp_path: Path) -> None:
    from vllm.tokenizers.mistral import MistralTokenizer

    tokenizer = MistralTokenizer.from_pretrained(
        str(mistral_folder(tmp_path, "tekken_240911.json", "tekken.json"))
    )
    assert tokenizer.is_tekken
    info = tokenizer_info_from(tokenizer, vocab_size=131072, stop_token_ids=[tokenizer.eos_token_id])
    assert info.num_real_tokens == 131072
    assert set(range(1000)) <= set(info.special_token_ids)  # the control tokens
    for text in TEXTS:
        assert spelled(info, tokenizer.encode(text, add_special_tokens=False)) == text.encode()


def test_mistral_sentencepiece(tmp_path: Path) -> None:
    from vllm.tokenizers.mistral import MistralTokenizer

    tokenizer = MistralTokenizer.from_pretrained(
        str(mistral_folder(tmp_path, "tokenizer.model.v1", "tokenizer.model.v1"))
    )
    assert tokenizer.is_spm
    info = tokenizer_info_from(tokenizer, vocab_size=32000, stop_token_ids=[tokenizer.eos_token_id])
    assert info.num_real_tokens == 32000 and info.stop_token_ids == [2]
    for text in TEXTS:
        # SentencePiece writes a word's leading space into its first piece (the dummy prefix at the start)
        assert spelled(info, tokenizer.encode(text, add_special_tokens=False)) == b" " + text.encode()
