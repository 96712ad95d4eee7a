"""What every tokenizer loader produces, and the rules they share.

Each loader (``tokenizer.json``, GGUF, Tekken, SentencePiece) reads its format
into a :class:`LoadedVocab`; :meth:`LoadedVocab.stop_ids` then applies one rule
for end-of-generation tokens to all of them, so the same vocabulary loaded from
two formats gets the same stop tokens.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

from ..errors import VocabularyError

__all__ = [
    "PathLike",
    "END_OF_GENERATION_TOKENS",
    "MAX_VOCAB_SIZE",
    "LoadedVocab",
    "check_token_id",
]

#: A file or folder path.
PathLike: TypeAlias = "str | os.PathLike[str]"

#: Text of special tokens that end a generation in widely used chat models.
#: A special token whose text is listed here is a stop token even where the
#: tokenizer's metadata names another end-of-sequence token (SmolLM2 and Qwen
#: mark ``<|im_end|>`` as EOS and still end documents with ``<|endoftext|>``).
#: llama.cpp applies a similar list of end-of-generation tokens.
END_OF_GENERATION_TOKENS: frozenset[str] = frozenset(
    {
        "</s>",
        "<eos>",
        "<|eos|>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<|im_end|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<end_of_turn>",
        "<|return|>",
        "<EOT>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
    }
)

#: Largest vocabulary accepted from a file; a token id beyond it is treated as
#: a corrupt file rather than allocated.
MAX_VOCAB_SIZE = 1 << 24


def check_token_id(value: object, size: int, source: str, what: str) -> int:
    """Validate a token id read from a file.

    Parameters
    ----------
    value
        The id as read (any JSON or metadata value).
    size
        Number of tokens; the id must lie in ``[0, size)``.
    source
        The file (or object) the id comes from, for the error message.
    what
        What the id is (``"eos_token_id"``), for the error message.

    Returns
    -------
    int
        The id.

    Raises
    ------
    VocabularyError
        When the value is not an integer or is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise VocabularyError(f"{source}: {what} must be an integer, got {value!r}")
    if not 0 <= value < size:
        raise VocabularyError(f"{source}: {what} {value} is out of range for a vocabulary of {size} tokens")
    return value


@dataclass
class LoadedVocab:
    """A vocabulary as read from one tokenizer format.

    Attributes
    ----------
    tokens
        ``tokens[i]`` is the exact bytes token ``i`` adds to the text
        (``b""`` for special tokens).
    special_ids
        Ids of control/special tokens, never produced as text.
    eos_ids
        End-of-sequence (and end-of-turn) ids named by the tokenizer's metadata.
    special_text
        The text of special tokens (``{id: "<|im_end|>"}``), used to recognise
        end-of-generation tokens by name.
    source
        The file or object the vocabulary was read from.
    name
        A short name for the vocabulary (usually the file name).
    model_vocab_size
        The size of the model's logits where the files say it (``config.json``
        ``vocab_size``, GGUF ``<arch>.vocab_size``); it may exceed the number
        of tokens (padding).
    """

    tokens: list[bytes]
    special_ids: set[int] = field(default_factory=set)
    eos_ids: list[int] = field(default_factory=list)
    special_text: dict[int, str] = field(default_factory=dict)
    source: str = ""
    name: str = ""
    model_vocab_size: int | None = None

    def add_eos(self, ids: Iterable[object], what: str) -> None:
        """Record end-of-sequence ids after checking they are in range.

        Parameters
        ----------
        ids
            The ids as read.
        what
            Where they come from (``"config.json eos_token_id"``), for errors.
        """
        for value in ids:
            token_id = check_token_id(value, len(self.tokens), self.source, what)
            if token_id not in self.eos_ids:
                self.eos_ids.append(token_id)

    def stop_ids(self) -> list[int]:
        """End-of-generation ids: the metadata's EOS/EOT ids plus special tokens named in
        :data:`END_OF_GENERATION_TOKENS`.

        Returns
        -------
        list of int
            Sorted, without duplicates.
        """
        stops = set(self.eos_ids)
        stops.update(i for i, text in self.special_text.items() if text in END_OF_GENERATION_TOKENS)
        return sorted(stops)
