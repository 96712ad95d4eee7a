"""SentencePiece ``.model`` files, read by our own protobuf reader, against the ``sentencepiece`` package."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from tokensieve.vocab import TokenizerInfo

spm = pytest.importorskip("sentencepiece")

CORPUS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "Héllo wörld: café, naïve, € 12.50 — 日本語のテキスト 😀🎉",
    "def f(x):\n    return x * 2  # comment\n",
]


def _train(**options: object) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 30),
        model_writer=out,
        minloglevel=2,
        hard_vocab_limit=False,
        **options,
    )
    return out.getvalue()


def check_against_sentencepiece(sp: object, info: TokenizerInfo, byte_token_checker) -> dict[str, int]:
    """Every piece: text pieces by decoding after a neutral piece, byte pieces in UTF-8 contexts."""
    n = sp.get_piece_size()  # type: ignore[attr-defined]
    assert info.num_real_tokens == n
    prefix = sp.piece_to_id("a")  # type: ignore[attr-defined]
    assert not sp.is_unknown(prefix)  # type: ignore[attr-defined]
    base = sp.decode([prefix])  # type: ignore[attr-defined]
    kinds = {"text": 0, "byte": 0, "special": 0}
    text_ids, byte_ids = [], {}
    for i in range(n):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):  # type: ignore[attr-defined]
            assert info.decoded_vocab[i] == b"" and i in info.special_token_ids
            kinds["special"] += 1
        elif sp.is_byte(i):  # type: ignore[attr-defined]
            piece = sp.id_to_piece(i)  # type: ignore[attr-defined]
            assert piece.startswith("<0x") and piece.endswith(">")
            byte_ids[int(piece[3:-1], 16)] = i
            kinds["byte"] += 1
        else:
            text_ids.append(i)
    decoded = sp.decode([[prefix, i] for i in text_ids])  # type: ignore[attr-defined]
    for i, text in zip(text_ids, decoded, strict=True):
        assert text.startswith(base)
        assert info.decoded_vocab[i] == text[len(base) :].encode(), (i, sp.id_to_piece(i))  # type: ignore[attr-defined]
    kinds["text"] = len(text_ids)

    def decode_mid_text(ids: list[int]) -> str:
        return sp.decode([prefix, *ids])[len(base) :]  # type: ignore[attr-defined]

    if byte_ids:
        assert len(byte_ids) == 256
        assert byte_token_checker(decode_mid_text, byte_ids, info.decoded_vocab) == 256 - 13
    assert info.stop_token_ids == ([sp.eos_id()] if sp.eos_id() >= 0 else [])  # type: ignore[attr-defined]
    return kinds


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_trained_model(model_type: str, tmp_path: Path, byte_token_checker) -> None:
    proto = _train(
        vocab_size=420,
        byte_fallback=True,
        user_defined_symbols=["<tool>", "▁yo"],
        control_symbols=["<|ctl|>"],
        model_type=model_type,
    )
    path = tmp_path / "tokenizer.model"
    path.write_bytes(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    info = TokenizerInfo.from_sentencepiece(path)
    kinds = check_against_sentencepiece(sp, info, byte_token_checker)
    assert kinds["special"] == 4 and kinds["byte"] == 256
    assert info.decoded_vocab[sp.piece_to_id("▁yo")] == b" yo"
    assert info.decoded_vocab[sp.piece_to_id("<tool>")] == b"<tool>"
    assert TokenizerInfo.from_file(path).hash == info.hash
    assert TokenizerInfo.from_file(tmp_path).hash == info.hash  # folder holding tokenizer.model


def test_without_byte_fallback_and_custom_ids(tmp_path: Path, byte_token_checker) -> None:
    proto = _train(vocab_size=300, model_type="unigram", eos_id=-1, bos_id=5, pad_id=3, unk_id=0)
    path = tmp_path / "m.model"
    path.write_bytes(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    info = TokenizerInfo.from_file(path)
    check_against_sentencepiece(sp, info, byte_token_checker)
    assert info.stop_token_ids == []


def test_from_transformers_style_object(tmp_path: Path) -> None:
    """An object exposing ``sp_model`` (slow transformers tokenizers) is read through its model proto."""
    proto = _train(vocab_size=420, byte_fallback=True, model_type="bpe")

    class SlowTokenizer:
        sp_model = spm.SentencePieceProcessor(model_proto=proto)
        eos_token_id = 2
        all_special_ids = [0, 1, 2]
        name_or_path = ""

    path = tmp_path / "t.model"
    path.write_bytes(proto)
    assert TokenizerInfo.from_huggingface(SlowTokenizer()).hash == TokenizerInfo.from_file(path).hash


# --- hand-made protos: piece types the trainer does not produce, unknown fields ---------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = _varint(number << 3 | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def _piece(text: str, kind: int | None = None, extra: bytes = b"") -> bytes:
    body = _field(1, 2, text.encode()) + _field(2, 5, struct.pack("<f", -1.5))
    if kind is not None:
        body += _field(3, 0, _varint(kind))
    return _field(1, 2, body + extra)


def test_hand_made_proto(tmp_path: Path) -> None:
    pieces = [
        _piece("<unk>", 2),
        _piece("<s>", 3),
        _piece("</s>", 3),
        _piece("▁hi"),  # type omitted: NORMAL
        _piece("<0x0A>", 6),
        _piece("[UNUSED]", 5),
        _piece("<user>", 4, extra=_field(99, 1, b"\x00" * 8)),  # unknown fixed64 field inside a piece
        _piece("a▁b", 1),
    ]
    trainer = _field(
        2, 2, _field(42, 0, _varint(2)) + _field(43, 0, _varint(-1)) + _field(1, 2, b"corpus.txt")
    )
    unknown = _field(77, 0, _varint(123)) + _field(3, 2, _field(3, 0, _varint(1)))
    path = tmp_path / "hand.model"
    path.write_bytes(b"".join(pieces) + trainer + unknown)
    info = TokenizerInfo.from_sentencepiece(path)
    assert info.decoded_vocab == [b"", b"", b"", b" hi", b"\n", b"", b"<user>", b"a b"]
    assert info.special_token_ids == [0, 1, 2, 5]
    assert info.stop_token_ids == [2]


def test_default_eos_without_trainer_spec(tmp_path: Path) -> None:
    path = tmp_path / "bare.model"
    path.write_bytes(_piece("<unk>", 2) + _piece("<s>", 3) + _piece("</s>", 3) + _piece("x"))
    assert TokenizerInfo.from_file(path).stop_token_ids == [2]


@pytest.mark.slow
def test_real_v1_model(sp_v1_path: Path, byte_token_checker) -> None:
    info = TokenizerInfo.from_file(sp_v1_path)
    sp = spm.SentencePieceProcessor(model_file=str(sp_v1_path))
    kinds = check_against_sentencepiece(sp, info, byte_token_checker)
    assert info.vocab_size == 32000
    assert kinds == {"text": 31741, "byte": 256, "special": 3}
    assert info.stop_token_ids == [2]
    assert info.special_token_ids == [0, 1, 2]


@pytest.mark.slow
def test_real_v7_model(sp_v7_path: Path, byte_token_checker) -> None:
    """v7 has 748 control pieces and user-defined pieces such as ``[REF]``."""
    info = TokenizerInfo.from_file(sp_v7_path)
    sp = spm.SentencePieceProcessor(model_file=str(sp_v7_path))
    kinds = check_against_sentencepiece(sp, info, byte_token_checker)
    assert kinds["special"] == 749 and kinds["byte"] == 256
    assert info.decoded_vocab[sp.piece_to_id("[REF]")] == b"[REF]"
