"""``TokenizerInfo``: what a constraint engine needs to know about a vocabulary."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import VocabularyError
from .common import MAX_VOCAB_SIZE, LoadedVocab, PathLike
from .files import load_file
from .gguf_loader import load_gguf
from .huggingface import load_hf_object, load_tokenizer_json
from .sentencepiece_model import load_sentencepiece
from .tekken import load_tekken

__all__ = ["TokenizerInfo"]

_HASH_DOMAIN = b"tokensieve.TokenizerInfo/1\x00"


class TokenizerInfo:
    """A vocabulary as bytes: what each token id adds to the output text.

    Parameters
    ----------
    decoded_vocab
        ``decoded_vocab[i]`` is the exact bytes token ``i`` adds to the text
        when it is generated mid-text (``b""`` for special tokens). A
        SentencePiece ``▁world`` is ``b" world"`` (the leading space is kept;
        see :mod:`tokensieve.vocab.pieces`), a byte-fallback ``<0xE2>`` is
        ``b"\\xe2"``, a byte-level ``Ġworld`` is ``b" world"``.
    vocab_size
        The size of the model's logits, at least ``len(decoded_vocab)``;
        the ids beyond the tokenizer's tokens are padding (``b""``, special).
        Defaults to ``len(decoded_vocab)``.
    stop_token_ids
        Ids that end the generation (EOS, end-of-turn). A stop token is
        allowed exactly when the output is complete; its bytes are never part
        of the text.
    special_token_ids
        Control tokens that never produce text. Their bytes are set to ``b""``;
        every token with empty bytes (padding included) is special too.
    name
        A label for messages and ``repr`` (not part of :attr:`hash`).

    Raises
    ------
    VocabularyError
        When a token is not bytes, ``vocab_size`` is too small, or an id is
        out of range.

    Notes
    -----
    Instances are treated as immutable: the lists returned by the attributes
    must not be modified. They pickle compactly (caches are rebuilt).

    Examples
    --------
    >>> info = TokenizerInfo([b"", b"a", b"b", b"ab"], vocab_size=8, stop_token_ids=[0])
    >>> info.special_token_ids
    [0, 4, 5, 6, 7]
    >>> info.decoded_vocab[3]
    b'ab'
    """

    def __init__(
        self,
        decoded_vocab: Sequence[bytes],
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] = (),
        special_token_ids: Iterable[int] = (),
        name: str = "",
    ) -> None:
        tokens = list(decoded_vocab)
        for i in [i for i, t in enumerate(tokens) if type(t) is not bytes]:
            tokens[i] = _as_bytes(tokens[i], i)
        n = len(tokens)
        if n == 0:
            raise VocabularyError("a vocabulary needs at least one token")
        size = n if vocab_size is None else _index(vocab_size, "vocab_size")
        if size < n:
            raise VocabularyError(f"vocab_size {size} is smaller than the {n} tokens given")
        if size > MAX_VOCAB_SIZE:
            raise VocabularyError(f"vocab_size {size} is more than the supported {MAX_VOCAB_SIZE}")
        tokens.extend([b""] * (size - n))
        stops = _ids(stop_token_ids, size, "stop token id")
        declared = _ids(special_token_ids, size, "special token id")
        for i in declared:
            tokens[i] = b""
        special = sorted(set(declared).union(i for i, t in enumerate(tokens) if not t))

        self._tokens = tokens
        self._vocab_size = size
        self._num_real_tokens = n
        self._stop_token_ids = stops
        self._special_token_ids = special
        self._stop_token_set = frozenset(stops)
        self._special_token_set = frozenset(special)
        self._name = str(name)
        self._hash: str | None = None
        self._lengths: np.ndarray | None = None

    # --- attributes -----------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """The size of the model's logits (and of :attr:`decoded_vocab`)."""
        return self._vocab_size

    @property
    def num_real_tokens(self) -> int:
        """How many ids the tokenizer itself defines (the rest is padding)."""
        return self._num_real_tokens

    @property
    def decoded_vocab(self) -> list[bytes]:
        """``decoded_vocab[i]``: the bytes token ``i`` adds to the text; ``b""`` for special tokens.

        The list is shared, not copied: do not modify it.
        """
        return self._tokens

    @property
    def stop_token_ids(self) -> list[int]:
        """Sorted ids that end the generation (EOS, end-of-turn)."""
        return list(self._stop_token_ids)

    @property
    def special_token_ids(self) -> list[int]:
        """Sorted ids of tokens that never produce text (control tokens, padding, empty tokens)."""
        return list(self._special_token_ids)

    @property
    def stop_token_set(self) -> frozenset[int]:
        """:attr:`stop_token_ids` as a set, built once (a matcher is made per request)."""
        return self._stop_token_set

    @property
    def special_token_set(self) -> frozenset[int]:
        """:attr:`special_token_ids` as a set, built once."""
        return self._special_token_set

    @property
    def name(self) -> str:
        """The vocabulary's label (usually the file it was read from)."""
        return self._name

    @property
    def token_lengths(self) -> np.ndarray:
        """Read-only ``int32 (vocab_size,)`` array of the tokens' byte lengths."""
        if self._lengths is None:
            lengths = np.fromiter(map(len, self._tokens), dtype=np.int32, count=self._vocab_size)
            lengths.flags.writeable = False
            self._lengths = lengths
        return self._lengths

    @property
    def hash(self) -> str:
        """Hex SHA-256 of the vocabulary size, every token's bytes, and the stop and special ids.

        Identical across processes and platforms for equal vocabularies; the
        name is not included. Suitable as an on-disk cache key.
        """
        if self._hash is None:
            h = hashlib.sha256(_HASH_DOMAIN)
            counts = (self._vocab_size, len(self._stop_token_ids), len(self._special_token_ids))
            h.update(np.asarray(counts, dtype="<i8").tobytes())
            h.update(self.token_lengths.astype("<i4").tobytes())
            h.update(b"".join(self._tokens))
            h.update(np.asarray(self._stop_token_ids, dtype="<i8").tobytes())
            h.update(np.asarray(self._special_token_ids, dtype="<i8").tobytes())
            self._hash = h.hexdigest()
        return self._hash

    # --- loaders --------------------------------------------------------------------------------

    @classmethod
    def from_huggingface(
        cls, tokenizer: Any, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read the vocabulary of an in-memory Hugging Face tokenizer.

        Parameters
        ----------
        tokenizer
            A ``transformers`` tokenizer (``PreTrainedTokenizerFast`` or any
            tokenizer with a ``tokenizers`` backend or a SentencePiece
            ``sp_model``) or a ``tokenizers.Tokenizer``.
        vocab_size
            The model's logits size; defaults to ``config.json``'s
            ``vocab_size`` when the tokenizer was loaded from a local model
            folder holding one, else to the number of tokens.
        stop_token_ids
            Replaces the detected stop tokens (``eos_token_id``, the model
            folder's EOS ids, and special tokens named like
            end-of-generation tokens such as ``<|im_end|>``).

        Returns
        -------
        TokenizerInfo

        Raises
        ------
        VocabularyError
            For an unsupported object or an inconsistent vocabulary.
        """
        return cls._from_loaded(load_hf_object(tokenizer), vocab_size, stop_token_ids)

    @classmethod
    def from_file(
        cls, path: PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read a tokenizer file of any supported format, recognised by its content.

        Parameters
        ----------
        path
            A ``tokenizer.json`` (or a model folder holding one), a ``.gguf``
            model, a Tekken ``tekken_*.json``, or a SentencePiece ``.model``.
        vocab_size
            The model's logits size; defaults to the size the files state
            (``config.json`` ``vocab_size``, GGUF ``<arch>.vocab_size``) when
            it is at least the number of tokens, else to the number of tokens.
        stop_token_ids
            Replaces the detected stop tokens (the format's EOS/EOT ids and
            special tokens named like end-of-generation tokens).

        Returns
        -------
        TokenizerInfo

        Raises
        ------
        VocabularyError
            When the file is missing, unreadable, broken, or of no known format.
        """
        return cls._from_loaded(load_file(path), vocab_size, stop_token_ids)

    @classmethod
    def from_tokenizer_json(
        cls, path: PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read a Hugging Face ``tokenizer.json``, or the one in a model folder.

        EOS ids come from the folder's ``tokenizer_config.json``,
        ``generation_config.json`` and ``config.json`` where present. See
        :meth:`from_file` for the parameters.

        Returns
        -------
        TokenizerInfo
        """
        return cls._from_loaded(load_tokenizer_json(path), vocab_size, stop_token_ids)

    @classmethod
    def from_gguf(
        cls, path: PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read the tokenizer stored in a GGUF model file (``gpt2``, ``llama`` or ``t5`` models).

        See :meth:`from_file` for the parameters.

        Returns
        -------
        TokenizerInfo
        """
        return cls._from_loaded(load_gguf(path), vocab_size, stop_token_ids)

    @classmethod
    def from_tekken(
        cls, path: PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read a Mistral Tekken ``tekken_*.json`` file.

        The first ``default_num_special_tokens`` ids are control tokens, the
        byte-level ranks follow, cut at ``default_vocab_size``. See
        :meth:`from_file` for the parameters.

        Returns
        -------
        TokenizerInfo
        """
        return cls._from_loaded(load_tekken(path), vocab_size, stop_token_ids)

    @classmethod
    def from_sentencepiece(
        cls, path: PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> TokenizerInfo:
        """Read a SentencePiece ``.model`` file (no ``sentencepiece`` package needed).

        See :meth:`from_file` for the parameters.

        Returns
        -------
        TokenizerInfo
        """
        return cls._from_loaded(load_sentencepiece(path), vocab_size, stop_token_ids)

    @classmethod
    def _from_loaded(
        cls, loaded: LoadedVocab, vocab_size: int | None, stop_token_ids: Iterable[int] | None
    ) -> TokenizerInfo:
        n = len(loaded.tokens)
        if vocab_size is None:
            stated = loaded.model_vocab_size
            vocab_size = stated if stated is not None and stated >= n else n
        elif _index(vocab_size, "vocab_size") < n:
            raise VocabularyError(f"{loaded.source}: vocab_size {vocab_size} is smaller than its {n} tokens")
        stops = loaded.stop_ids() if stop_token_ids is None else stop_token_ids
        return cls(
            loaded.tokens,
            vocab_size=vocab_size,
            stop_token_ids=stops,
            special_token_ids=sorted(loaded.special_ids),
            name=loaded.name,
        )

    # --- protocol -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._vocab_size

    def __repr__(self) -> str:
        return (
            f"TokenizerInfo(name={self._name!r}, vocab_size={self._vocab_size}, "
            f"num_real_tokens={self._num_real_tokens}, stop_token_ids={self._stop_token_ids}, "
            f"special={len(self._special_token_ids)})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenizerInfo):
            return NotImplemented
        return self is other or (self._vocab_size == other._vocab_size and self.hash == other.hash)

    def __hash__(self) -> int:
        return int(self.hash[:16], 16)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_lengths"] = None
        del state["_stop_token_set"], state["_special_token_set"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stop_token_set = frozenset(self._stop_token_ids)
        self._special_token_set = frozenset(self._special_token_ids)


def _as_bytes(token: object, i: int) -> bytes:
    if isinstance(token, (bytearray, memoryview)):
        return bytes(token)
    raise VocabularyError(f"token {i} must be bytes, got {type(token).__name__} {token!r:.40}")


def _index(value: object, what: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError as e:
        raise VocabularyError(f"{what} must be an integer, got {value!r}") from e


def _ids(values: Iterable[int], size: int, what: str) -> list[int]:
    out = set()
    for value in values:
        i = _index(value, what)
        if not 0 <= i < size:
            raise VocabularyError(f"{what} {i} is out of range for vocab_size {size}")
        out.add(i)
    return sorted(out)
