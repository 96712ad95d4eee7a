"""SentencePiece ``.model`` files (a serialized ``ModelProto``), read without ``sentencepiece``.

The fields used (from ``sentencepiece_model.proto``)::

    ModelProto   { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2; ... }
    SentencePiece { string piece = 1; float score = 2; Type type = 3 [default = NORMAL]; }
    TrainerSpec  { ... int32 unk_id = 40; int32 bos_id = 41; int32 eos_id = 42; int32 pad_id = 43; }

Piece types map to bytes as the SentencePiece decoder does: NORMAL and
USER_DEFINED pieces are their text with ``▁`` as a space (kept when leading, see
:mod:`tokensieve.vocab.pieces`), BYTE pieces ``<0xNN>`` are the single byte NN.
CONTROL, UNKNOWN and UNUSED pieces are special (``b""``): control pieces decode
to nothing, ``<unk>`` only stands for input the model could not encode (the
decoder renders it as `` ⁇ ``), and unused pieces are never produced by the
encoder, so a model has never been trained to emit them.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import VocabularyError
from .common import LoadedVocab, PathLike
from .pieces import byte_fallback_value, decode_metaspace
from .protobuf import FIXED32, LENGTH_DELIMITED, VARINT, ProtobufError, as_int32, iter_fields

__all__ = ["load_sentencepiece", "parse_sentencepiece"]

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_TYPE_NAMES = {1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}

_PIECES, _TRAINER_SPEC = 1, 2
_PIECE_TEXT, _PIECE_SCORE, _PIECE_TYPE = 1, 2, 3
_UNK_ID, _BOS_ID, _EOS_ID, _PAD_ID = 40, 41, 42, 43


def load_sentencepiece(path: PathLike) -> LoadedVocab:
    """Read a SentencePiece ``.model`` file.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When the file cannot be read or is not a SentencePiece model.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise VocabularyError(f"{p}: cannot read SentencePiece model: {e}") from e
    return parse_sentencepiece(data, source=str(p), name=p.name)


def parse_sentencepiece(data: bytes, *, source: str = "<SentencePiece model>", name: str = "") -> LoadedVocab:
    """Decode a serialized SentencePiece ``ModelProto``.

    Parameters
    ----------
    data
        The serialized model (the content of a ``.model`` file, or
        ``SentencePieceProcessor.serialized_model_proto()``).
    source
        Where the bytes come from, for error messages.
    name
        The vocabulary's name.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When the bytes do not parse as a model with at least one piece, a piece
        has an unknown type or a malformed ``<0xNN>`` text, or an id in the
        trainer spec is out of range.
    """
    try:
        pieces, eos_id = _read_model(bytes(data))
    except ProtobufError as e:
        raise VocabularyError(f"{source}: not a SentencePiece model (protobuf does not parse: {e})") from e
    except UnicodeDecodeError as e:
        raise VocabularyError(f"{source}: not a SentencePiece model (a piece is not UTF-8: {e})") from e
    if not pieces:
        raise VocabularyError(f"{source}: not a SentencePiece model (no pieces)")

    tokens: list[bytes] = []
    special: set[int] = set()
    special_text: dict[int, str] = {}
    for i, (text, kind) in enumerate(pieces):
        if kind == NORMAL or kind == USER_DEFINED:
            tokens.append(decode_metaspace(text))
        elif kind == BYTE:
            value = byte_fallback_value(text)
            if value is None:
                raise VocabularyError(
                    f"{source}: piece {i} has type BYTE but its text {text!r} is not <0xNN>"
                )
            tokens.append(bytes((value,)))
        elif kind in (CONTROL, UNKNOWN, UNUSED):
            tokens.append(b"")
            special.add(i)
            special_text[i] = text
        else:
            raise VocabularyError(f"{source}: piece {i} ({text!r}) has unknown type {kind}")

    loaded = LoadedVocab(tokens, special, [], special_text, source=source, name=name)
    if eos_id is not None:
        if eos_id >= 0:
            loaded.add_eos([eos_id], "trainer_spec.eos_id")
    elif len(pieces) > 2 and pieces[2][1] == CONTROL:
        loaded.add_eos([2], "trainer_spec.eos_id (default)")
    return loaded


def _read_model(data: bytes) -> tuple[list[tuple[str, int]], int | None]:
    pieces: list[tuple[str, int]] = []
    eos_id: int | None = None
    for number, wire, a, b in iter_fields(data):
        if number == _PIECES and wire == LENGTH_DELIMITED:
            pieces.append(_read_piece(data, a, b))
        elif number == _TRAINER_SPEC and wire == LENGTH_DELIMITED:
            for field, fwire, value, _ in iter_fields(data, a, b):
                if field == _EOS_ID and fwire == VARINT:
                    eos_id = as_int32(value)
        elif number in (_PIECES, _TRAINER_SPEC):
            raise ProtobufError(f"field {number} has wire type {wire}, expected a message")
    return pieces, eos_id


def _read_piece(data: bytes, start: int, end: int) -> tuple[str, int]:
    text = ""
    kind = NORMAL
    for number, wire, a, b in iter_fields(data, start, end):
        if number == _PIECE_TEXT and wire == LENGTH_DELIMITED:
            text = data[a:b].decode("utf-8")
        elif number == _PIECE_TYPE and wire == VARINT:
            kind = as_int32(a)
        elif number == _PIECE_SCORE and wire != FIXED32:
            raise ProtobufError(f"piece score has wire type {wire}, expected fixed32")
    return text, kind
