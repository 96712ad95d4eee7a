"""GGUF tokenizers: our metadata reader against ``gguf``, vocabularies against transformers/tokenizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tokensieve import VocabularyError
from tokensieve.vocab import TokenizerInfo
from tokensieve.vocab.byte_level import encode_byte_level
from tokensieve.vocab.gguf_reader import read_gguf_metadata

gguf = pytest.importorskip("gguf")

TEXTS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "Héllo wörld: café, naïve, € 12.50 — 日本語のテキスト, 中文, русский текст 😀🎉",
    '{"name": "tokensieve", "ok": true, "n": [1, 2, 3]}\n\tindented  two  spaces\n',
    "<|im_start|>user\nhi<|im_end|>",
]
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def write_gguf(
    path: Path, model: str, tokens: list[str], types: list[int] | None, big_endian: bool = False, **ids: int
) -> Path:
    """A GGUF file with only tokenizer metadata (no tensors)."""
    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    writer = gguf.GGUFWriter(str(path), arch="llama", endianess=endian)
    writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    if types is not None:
        writer.add_token_types(types)
    writer.add_array("tokenizer.ggml.merges", ["a b", "ab c"] * 50)  # skipped by the reader
    for key, value in ids.items():
        if key == "vocab_size":
            writer.add_vocab_size(value)
        else:
            writer.add_uint32(f"tokenizer.ggml.{key}", value)
    writer.add_string("general.name", "test")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _gpt2_tokens() -> tuple[list[str], list[int], list[bytes]]:
    """Tokens, types and the expected bytes of a small byte-level vocabulary."""
    rows: list[tuple[str, int, bytes]] = [
        ("<|endoftext|>", CONTROL, b""),
        ("<|im_start|>", CONTROL, b""),
        ("<|im_end|>", CONTROL, b""),
        ("<unk>", UNKNOWN, b""),
        ("[UNUSED]", UNUSED, b""),
        ("<tool_call>", USER_DEFINED, b"<tool_call>"),
        ("Ġdon't", USER_DEFINED, "Ġdon't".encode()),  # user-defined text is taken as is (llama.cpp)
        ("<0x41>", BYTE, b"A"),
    ]
    rows += [(encode_byte_level(bytes([b])), NORMAL, bytes([b])) for b in range(256)]
    for data in [b" hello", b"\n\n", "é".encode(), "€".encode()[:2], " 日本".encode(), b"  ", b"\t{"]:
        rows.append((encode_byte_level(data), NORMAL, data))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


@pytest.mark.parametrize("big_endian", [False, True])
def test_gpt2_model(tmp_path: Path, big_endian: bool) -> None:
    tokens, types, expected = _gpt2_tokens()
    path = write_gguf(
        tmp_path / "m.gguf", "gpt2", tokens, types, big_endian, eos_token_id=2, eot_token_id=3, bos_token_id=1
    )
    info = TokenizerInfo.from_file(path)
    assert info.decoded_vocab == expected
    assert info.special_token_ids == [0, 1, 2, 3, 4]
    # eos, eot (even when it is the unknown token), and <|endoftext|> by name
    assert info.stop_token_ids == [0, 2, 3]
    assert info.name == "m"
    assert TokenizerInfo.from_gguf(path).hash == info.hash
    assert TokenizerInfo.from_file(tmp_path).hash == info.hash  # folder with one .gguf


def test_llama_model(tmp_path: Path) -> None:
    rows = [
        ("<unk>", UNKNOWN, b""),
        ("<s>", CONTROL, b""),
        ("</s>", CONTROL, b""),
        ("<0x0A>", BYTE, b"\n"),
        ("<0xE2>", BYTE, b"\xe2"),
        ("▁hello", NORMAL, b" hello"),
        ("▁▁", NORMAL, b"  "),
        ("world▁", NORMAL, b"world "),
        ("<0x41", NORMAL, b"<0x41"),
        ("▁<tool>", USER_DEFINED, "▁<tool>".encode()),
    ]
    path = write_gguf(
        tmp_path / "llama.gguf",
        "llama",
        [r[0] for r in rows],
        [r[1] for r in rows],
        eos_token_id=2,
        vocab_size=16,
    )
    info = TokenizerInfo.from_file(path)
    assert info.vocab_size == 16  # llama.vocab_size: padded logits
    assert info.num_real_tokens == len(rows)
    assert info.decoded_vocab == [r[2] for r in rows] + [b""] * 6
    assert info.stop_token_ids == [2]
    assert info.special_token_ids == [0, 1, 2, *range(10, 16)]


def test_without_token_types(tmp_path: Path) -> None:
    tokens = ["<s>", "</s>", "Ġa", "b"]
    path = write_gguf(tmp_path / "old.gguf", "gpt2", tokens, None, bos_token_id=0, eos_token_id=1)
    info = TokenizerInfo.from_file(path)
    assert info.decoded_vocab == [b"", b"", b" a", b"b"]
    assert info.stop_token_ids == [1]


def test_reader_matches_gguf_package(tmp_path: Path) -> None:
    tokens, types, _ = _gpt2_tokens()
    path = write_gguf(tmp_path / "m.gguf", "gpt2", tokens, types, eos_token_id=2)
    _compare_with_gguf_reader(path)


def _compare_with_gguf_reader(path: Path) -> None:
    ours = read_gguf_metadata(path, arrays=("tokenizer.ggml.tokens", "tokenizer.ggml.token_type"))
    reader = gguf.GGUFReader(str(path))
    assert set(ours) == set(reader.fields) - {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        theirs = field.contents()
        if key == "tokenizer.ggml.tokens":
            assert ours[key] == theirs
        elif key == "tokenizer.ggml.token_type":
            assert ours[key].tolist() == theirs
        elif isinstance(theirs, list):
            assert ours[key] is None  # arrays not asked for are skipped
        elif isinstance(theirs, float):
            assert ours[key] == pytest.approx(theirs)
        else:
            assert ours[key] == theirs, key


# --- the real SmolLM2 GGUF ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_transformers(smollm2_path: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(smollm2_path.parent), gguf_file=smollm2_path.name)


@pytest.mark.slow
def test_real_reader_matches_gguf_package(smollm2_path: Path) -> None:
    _compare_with_gguf_reader(smollm2_path)


@pytest.mark.slow
def test_real_smollm2_against_transformers(smollm2_path: Path, smollm2_transformers: Any) -> None:
    info = TokenizerInfo.from_file(smollm2_path)
    tok = smollm2_transformers
    backend = tok.backend_tokenizer
    assert info.vocab_size == len(tok) == 49152
    special = {i for i, t in backend.get_added_tokens_decoder().items() if t.special}
    assert set(tok.all_special_ids) <= special
    assert set(info.special_token_ids) == special
    assert (
        info.stop_token_ids
        == sorted({tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")})
        == [0, 2]
    )
    # every token by the tokenizer's own decoder (lossy where a token is a partial UTF-8 character)
    ids = list(range(info.vocab_size))
    decoded = backend.decode_batch([[i] for i in ids], skip_special_tokens=True)
    mismatches = [i for i in ids if info.decoded_vocab[i].decode("utf-8", "replace") != decoded[i]]
    assert mismatches == []
    # exact bytes of single-byte tokens, located by the tokenizer's own byte-level pre-tokenizer
    pre = backend.pre_tokenizer
    for text in ["\x00\x1f !~\x7f", "é€😀", "".join(chr(c) for c in range(0x80, 0x800, 3))]:
        pieces = "".join(p for p, _ in pre.pre_tokenize_str(text))
        char_ids = [tok.convert_tokens_to_ids(c) for c in pieces]
        assert b"".join(info.decoded_vocab[i] for i in char_ids) == text.encode()
    # exact bytes of whole texts through the tokenizer's BPE
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False)
        assert (
            b"".join(info.decoded_vocab[i] for i in ids) == tok.decode(ids, skip_special_tokens=True).encode()
        )


@pytest.mark.slow
def test_real_smollm2_from_huggingface_matches_file(smollm2_path: Path, smollm2_transformers: Any) -> None:
    from_file = TokenizerInfo.from_file(smollm2_path)
    from_object = TokenizerInfo.from_huggingface(smollm2_transformers)
    assert from_object.decoded_vocab == from_file.decoded_vocab
    assert from_object.special_token_ids == from_file.special_token_ids
    assert from_object.stop_token_ids == from_file.stop_token_ids
    assert from_object.hash == from_file.hash


@pytest.mark.slow
def test_real_sentencepiece_as_llama_gguf(sp_v1_path: Path, tmp_path: Path) -> None:
    """The v1 SentencePiece model written as a GGUF "llama" vocabulary reads the same."""
    spm = pytest.importorskip("sentencepiece")
    sp = spm.SentencePieceProcessor(model_file=str(sp_v1_path))
    tokens, types = [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        kind = NORMAL
        if sp.is_unknown(i):
            kind = UNKNOWN
        elif sp.is_control(i):
            kind = CONTROL
        elif sp.is_byte(i):
            kind = BYTE
        types.append(kind)
    path = write_gguf(tmp_path / "sp.gguf", "llama", tokens, types, eos_token_id=sp.eos_id())
    from_gguf = TokenizerInfo.from_file(path)
    from_model = TokenizerInfo.from_file(sp_v1_path)
    assert from_gguf.decoded_vocab == from_model.decoded_vocab
    assert from_gguf.hash == from_model.hash


def test_reader_types(tmp_path: Path) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "t.gguf"), arch="x")
    writer.add_uint8("k.u8", 7)
    writer.add_int64("k.i64", -5)
    writer.add_float64("k.f64", 0.25)
    writer.add_bool("k.bool", True)
    writer.add_array("k.ints", [1, 2, 3])
    writer.add_array("k.floats", [0.5, 1.5])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    meta = read_gguf_metadata(tmp_path / "t.gguf", arrays=("k.ints", "k.floats"))
    assert (meta["k.u8"], meta["k.i64"], meta["k.f64"], meta["k.bool"]) == (7, -5, 0.25, True)
    assert meta["k.ints"].tolist() == [1, 2, 3] and np.allclose(meta["k.floats"], [0.5, 1.5])
    assert meta["general.architecture"] == "x"
    with pytest.raises(VocabularyError, match="has no tokenizer"):
        TokenizerInfo.from_file(tmp_path / "t.gguf")
