"""Broken, truncated and unknown tokenizer files raise VocabularyError naming the file."""

from __future__ import annotations

import io
import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve import VocabularyError
from tokensieve.vocab import TokenizerInfo
from tokensieve.vocab.huggingface import parse_tokenizer_json
from tokensieve.vocab.sentencepiece_model import parse_sentencepiece
from tokensieve.vocab.tekken import parse_tekken

GOOD_JSON: dict[str, Any] = {
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
    "added_tokens": [{"id": 3, "content": "<eos>", "special": True}],
    "decoder": {"type": "ByteLevel"},
}


def _expect_error(path: Path, message: str, loader: Any = TokenizerInfo.from_file) -> VocabularyError:
    with pytest.raises(VocabularyError, match=message) as err:
        loader(path)
    assert str(path) in str(err.value)
    return err.value


def _json_variant(tmp_path: Path, edit: Any, name: str = "tokenizer.json") -> Path:
    data = json.loads(json.dumps(GOOD_JSON))
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_good_json_loads(tmp_path: Path) -> None:
    info = TokenizerInfo.from_file(_json_variant(tmp_path, lambda d: None))
    assert info.decoded_vocab == [b"a", b"b", b"ab", b""]
    assert info.stop_token_ids == [3]


def test_missing_path(tmp_path: Path) -> None:
    _expect_error(tmp_path / "nope.json", "no such file")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_bytes(b"")
    _expect_error(path, "empty")


def test_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(GOOD_JSON)[:-20])
    _expect_error(path, "invalid JSON")


def test_not_utf8_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_bytes(b'{"model": "\xff"}')
    _expect_error(path, "not UTF-8")


@pytest.mark.parametrize("document", [[1, 2], {"foo": 1}, "text", None])
def test_json_of_no_known_format(document: Any, tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(document))
    _expect_error(path, "no known tokenizer format")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["model"].pop("vocab"), "model.vocab is missing"),
        (lambda d: d["model"].update(type="Mystery"), "unsupported model type"),
        (lambda d: d["model"]["vocab"].update(c=1), "duplicate id 1"),
        (lambda d: d["model"]["vocab"].update(c=-1), "out of range"),
        (lambda d: d["model"]["vocab"].update(c=1 << 40), "out of range"),
        (lambda d: d["model"]["vocab"].update(c="7"), "must be an integer"),
        (lambda d: d["model"].update(type="Unigram", vocab=[["a", 0.0], [5, 1.0]]), r"model.vocab\[1\]"),
        (lambda d: d["added_tokens"].append({"id": 3, "content": "<x>"}), "id 3 appears twice"),
        (lambda d: d["added_tokens"].append({"id": 4}), r"added_tokens\[1\] lacks"),
        (lambda d: d["added_tokens"].append({"id": 4, "content": 5}), "content must be a string"),
        (lambda d: d.update(added_tokens={"id": 4}), "added_tokens must be a list"),
        (lambda d: d.update(decoder={"type": "CTC", "pad_token": "<pad>"}), "unsupported decoder type 'CTC'"),
        (lambda d: d.update(decoder={"type": "Replace", "content": " "}), "malformed Replace decoder"),
        (
            lambda d: d.update(decoder={"type": "Replace", "pattern": {"Regex": "("}, "content": ""}),
            "does not compile",
        ),
        (lambda d: d.update(decoder={"type": "Sequence", "decoders": [42]}), "malformed decoder"),
        (lambda d: d.update(decoder="ByteLevel"), "malformed decoder"),
        (lambda d: d["model"]["vocab"].update({"\ud800x": 4}), "not valid Unicode"),
    ],
)
def test_broken_tokenizer_json(edit: Any, message: str, tmp_path: Path) -> None:
    path = _json_variant(tmp_path, edit)
    _expect_error(path, message)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("tokenizer_config.json", {"eos_token": "<nope>"}, "eos_token '<nope>' is not a token"),
        ("config.json", {"eos_token_id": 99}, "eos_token_id 99 is out of range"),
        ("generation_config.json", {"eos_token_id": [1, "x"]}, "must be an integer"),
        ("config.json", "{broken", "invalid JSON"),
        ("generation_config.json", [1], "expected a JSON object"),
    ],
)
def test_broken_model_folder_configs(name: str, content: Any, message: str, tmp_path: Path) -> None:
    _json_variant(tmp_path, lambda d: None)
    config = tmp_path / name
    config.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(VocabularyError, match=message) as err:
        TokenizerInfo.from_file(tmp_path)
    assert str(config) in str(err.value) or str(tmp_path / "tokenizer.json") in str(err.value)


def test_vocab_size_smaller_than_tokens(tmp_path: Path) -> None:
    path = _json_variant(tmp_path, lambda d: None)
    with pytest.raises(VocabularyError, match="vocab_size 2 is smaller than its 4 tokens") as err:
        TokenizerInfo.from_file(path, vocab_size=2)
    assert str(path) in str(err.value)


def test_empty_folder(tmp_path: Path) -> None:
    _expect_error(tmp_path, "no tokenizer in this folder")


def test_folder_with_two_ggufs(tmp_path: Path) -> None:
    (tmp_path / "a.gguf").write_bytes(b"GGUF")
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    _expect_error(tmp_path, "2 .gguf files")


def test_unknown_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * 4)
    _expect_error(path, "not a recognised tokenizer file")


def test_text_file_is_not_a_sentencepiece_model(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello world, these are not tokens\n")
    _expect_error(path, "not a recognised tokenizer file")


def test_unsupported_object() -> None:
    with pytest.raises(VocabularyError, match="cannot read a vocabulary from a int"):
        TokenizerInfo.from_huggingface(42)


def test_per_format_loaders_reject_other_formats(tmp_path: Path) -> None:
    path = _json_variant(tmp_path, lambda d: None)
    _expect_error(path, "not a Tekken file", TokenizerInfo.from_tekken)
    _expect_error(path, "not a GGUF file", TokenizerInfo.from_gguf)
    _expect_error(path, "not a SentencePiece model", TokenizerInfo.from_sentencepiece)


# --- GGUF ---------------------------------------------------------------------------------------------


def _gguf_bytes(tmp_path: Path, model: str = "gpt2", **extra: Any) -> bytes:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "src.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_tokenizer_model(model)
    tokens = extra.pop("tokens", ["<|endoftext|>", "a", "b", "Ġab", "<0x41>"])
    writer.add_token_list(tokens)
    writer.add_token_types(extra.pop("types", [3, 1, 1, 1, 6]))
    writer.add_uint32("tokenizer.ggml.eos_token_id", extra.pop("eos", 0))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def test_good_gguf(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(_gguf_bytes(tmp_path))
    assert TokenizerInfo.from_file(path).decoded_vocab == [b"", b"a", b"b", b" ab", b"A"]


def test_truncated_gguf_everywhere(tmp_path: Path) -> None:
    data = _gguf_bytes(tmp_path)
    path = tmp_path / "cut.gguf"
    for cut in range(4, len(data)):
        path.write_bytes(data[:cut])
        try:
            TokenizerInfo.from_file(path)
        except VocabularyError as e:
            assert str(path) in str(e)
        # a cut inside trailing alignment padding may leave every key intact: loading is then fine


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "bert"}, "unsupported GGUF tokenizer model 'bert'"),
        ({"types": [3, 1, 1]}, "token_type has 3 entries but tokenizer.ggml.tokens has 5"),
        ({"types": [3, 1, 1, 9, 6]}, "unknown token type 9"),
        ({"types": [3, 1, 1, 1, 6], "tokens": ["<eos>", "a", "b", "c", "<0xZZ>"]}, "is not <0xNN>"),
        ({"eos": 5}, "eos_token_id 5 is out of range"),
    ],
)
def test_inconsistent_gguf(kwargs: dict[str, Any], message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(_gguf_bytes(tmp_path, **kwargs))
    _expect_error(path, message)


def test_gguf_bad_header(tmp_path: Path) -> None:
    data = _gguf_bytes(tmp_path)
    path = tmp_path / "bad.gguf"
    path.write_bytes(data[:4] + struct.pack("<I", 1) + data[8:])
    _expect_error(path, "unsupported GGUF version 1")
    path.write_bytes(data[:8] + struct.pack("<QQ", 0, 1 << 60) + data[24:])
    _expect_error(path, "truncated GGUF file")
    path.write_bytes(b"GGUF" + b"\x03\x00\x00")
    _expect_error(path, "not a GGUF file")
    path.write_bytes(b"XXXX" + data[4:])
    _expect_error(path, "not a GGUF file", TokenizerInfo.from_gguf)


def test_gguf_random_corruption(tmp_path: Path) -> None:
    data = _gguf_bytes(tmp_path)
    rng = random.Random(0)
    path = tmp_path / "fuzz.gguf"
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(4, min(len(corrupt), 400))] = rng.randrange(256)
        path.write_bytes(bytes(corrupt))
        try:
            TokenizerInfo.from_file(path)
        except VocabularyError:
            pass


# --- SentencePiece ------------------------------------------------------------------------------------


def _sp_model() -> bytes:
    spm = pytest.importorskip("sentencepiece")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["hello world", "the quick brown fox", "é € 日本"] * 20),
        model_writer=out,
        vocab_size=60,
        model_type="bpe",
        minloglevel=2,
        hard_vocab_limit=False,
    )
    return out.getvalue()


def test_truncated_sentencepiece(tmp_path: Path) -> None:
    data = _sp_model()
    path = tmp_path / "cut.model"
    errors = 0
    rng = random.Random(2)
    for cut in sorted(rng.sample(range(1, len(data)), 150)) + list(range(1, 200)):
        path.write_bytes(data[:cut])
        try:
            TokenizerInfo.from_sentencepiece(path)
        except VocabularyError as e:
            assert str(path) in str(e)
            errors += 1
    assert errors > 0


def test_sentencepiece_random_corruption(tmp_path: Path) -> None:
    data = _sp_model()
    rng = random.Random(1)
    path = tmp_path / "fuzz.model"
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            # the pieces come first; the rest is mostly the normaliser's character map
            corrupt[rng.randrange(min(len(corrupt), 3000))] = rng.randrange(256)
        path.write_bytes(bytes(corrupt))
        try:
            TokenizerInfo.from_sentencepiece(path)
        except VocabularyError:
            pass


def _proto(*fields: bytes) -> bytes:
    return b"".join(fields)


def _piece(text: bytes, kind: int = 1) -> bytes:
    body = b"\x0a" + bytes([len(text)]) + text + b"\x18" + bytes([kind])
    return b"\x0a" + bytes([len(body)]) + body


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x0a\x05ab", "claims 5 bytes"),
        (b"\x0a", "truncated varint"),
        (b"\x18\x01", "no pieces"),
        (b"\x08\x01", "field 1 has wire type 0, expected a message"),
        (b"\x0d\x00\x00\x00\x00", "expected a message"),
        (b"\x0b\x0c", "unsupported wire type 3"),
        (b"\x00\x01", "invalid field number 0"),
        (b"\x08" + b"\xff" * 11, "varint longer than"),
        (_piece(b"\xff\xfe"), "not UTF-8"),
        (_piece(b"a", 9), "unknown type 9"),
        (_piece(b"<0xZZ>", 6), "is not <0xNN>"),
        (_piece(b"a") + b"\x12\x03\xd0\x02\x05", "trainer_spec.eos_id 5 is out of range"),
    ],
)
def test_broken_sentencepiece(data: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.model"
    path.write_bytes(data)
    _expect_error(path, message, TokenizerInfo.from_sentencepiece)


# --- arbitrary input never escapes as anything but VocabularyError -----------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 300) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_decoder_types = st.sampled_from(
    [
        "ByteLevel",
        "Metaspace",
        "Replace",
        "Strip",
        "Sequence",
        "Fuse",
        "ByteFallback",
        "WordPiece",
        "BPEDecoder",
        "CTC",
    ]
)
_decoders = st.recursive(
    st.fixed_dictionaries(
        {"type": _decoder_types},
        optional={
            "pattern": _json_values,
            "content": _json_values,
            "start": _json_values,
            "stop": _json_values,
        },
    ),
    lambda children: st.fixed_dictionaries(
        {"type": st.just("Sequence"), "decoders": st.lists(children, max_size=3)}
    ),
    max_leaves=6,
)
_vocabs = st.dictionaries(st.text(max_size=4), st.integers(-2, 40) | _json_values, max_size=8) | st.lists(
    st.lists(st.text(max_size=4) | _json_values, max_size=2) | _json_values, max_size=8
)
_added = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "id": st.integers(-1, 50) | _json_values,
            "content": st.text(max_size=5) | _json_values,
            "special": _json_values,
        },
    ),
    max_size=4,
)
_documents = st.fixed_dictionaries(
    {
        "model": st.fixed_dictionaries(
            {"vocab": _vocabs}, optional={"type": st.sampled_from(["BPE", "Unigram", "WordLevel", "X"])}
        )
    },
    optional={"added_tokens": _added | _json_values, "decoder": _decoders | _json_values},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents)
def test_fuzz_tokenizer_json(document: dict[str, Any]) -> None:
    try:
        loaded = parse_tokenizer_json(document)
    except VocabularyError:
        return
    assert all(type(t) is bytes for t in loaded.tokens)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "config": st.fixed_dictionaries(
                {},
                optional={
                    "default_num_special_tokens": st.integers(-1, 5) | _json_values,
                    "default_vocab_size": st.integers(-1, 12) | _json_values,
                },
            ),
            "vocab": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "rank": st.integers(-1, 8) | _json_values,
                        "token_bytes": st.sampled_from(["YQ==", "", "!!", "YWI="]) | _json_values,
                    },
                ),
                max_size=8,
            ),
        },
        optional={
            "special_tokens": _json_values
            | st.lists(
                st.fixed_dictionaries({}, optional={"rank": st.integers(-1, 6), "token_str": _json_values}),
                max_size=3,
            )
        },
    )
)
def test_fuzz_tekken(document: dict[str, Any]) -> None:
    try:
        parse_tekken(document)
    except VocabularyError:
        pass


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_sentencepiece(data: bytes) -> None:
    try:
        parse_sentencepiece(data)
    except VocabularyError:
        pass
