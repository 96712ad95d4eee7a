"""The vocabulary of the model vLLM serves, as a :class:`~tokensieve.TokenizerInfo`.

The tokenizer is the one vLLM itself loaded for the model
(``vllm.tokenizers.cached_tokenizer_from_config``): a Hugging Face tokenizer
(byte-level BPE, SentencePiece) is read by
:meth:`~tokensieve.TokenizerInfo.from_huggingface`, a Mistral tokenizer
(Tekken or SentencePiece, through ``mistral-common``) from the bytes it gives
for each id. The vocabulary is as wide as the model's logits (the ids past the
tokenizer's are padding, never allowed), and its stop tokens are the ones vLLM
stops on by default: the tokenizer's EOS and the ``eos_token_id`` of the
model's generation config. One :class:`TokenizerInfo` and one
:class:`~tokensieve.GrammarCompiler` are kept per tokenizer.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Iterable
from typing import Any

from ..compile import GrammarCompiler
from ..errors import VocabularyError
from ..vocab import TokenizerInfo

__all__ = ["compiler_for", "stop_ids_from", "tokenizer_info_from", "tokenizer_info_for_config"]

_LOCK = threading.Lock()
_INFOS: dict[tuple[Any, ...], TokenizerInfo] = {}
_COMPILERS: dict[str, GrammarCompiler] = {}


def stop_ids_from(tokenizer: Any, generation_config: dict[str, Any] | None) -> list[int]:
    """The ids vLLM ends a request on by default: the tokenizer's EOS and the generation config's.

    Parameters
    ----------
    tokenizer
        The tokenizer vLLM loaded.
    generation_config
        The model's generation config as a dict (``eos_token_id``: an id or a list), or ``None``.

    Returns
    -------
    list of int
        Sorted, without repeats.
    """
    ids: set[int] = set()
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    value = (generation_config or {}).get("eos_token_id")
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, int) and not isinstance(item, bool):
            ids.add(item)
    return sorted(ids)


def tokenizer_info_from(tokenizer: Any, *, vocab_size: int, stop_token_ids: Iterable[int]) -> TokenizerInfo:
    """Read the vocabulary of a tokenizer that vLLM loaded.

    Parameters
    ----------
    tokenizer
        A Hugging Face tokenizer (or vLLM's cached wrapper of one), or vLLM's
        ``MistralTokenizer``.
    vocab_size
        The width of the model's logits.
    stop_token_ids
        The ids that end a request.

    Returns
    -------
    TokenizerInfo

    Raises
    ------
    VocabularyError
        For a tokenizer of no known kind, or a vocabulary wider than the logits.
    """
    stops = list(stop_token_ids)
    if getattr(tokenizer, "IS_MISTRAL_TOKENIZER", False):
        inner = tokenizer.tokenizer
        if getattr(tokenizer, "is_tekken", False):
            count = int(inner.n_words)
            tokens = [inner.id_to_byte_piece(i) for i in range(count)]
            special = [i for i in range(count) if inner.is_special(i)]
            return TokenizerInfo(
                tokens, vocab_size=vocab_size, stop_token_ids=stops, special_token_ids=special, name="tekken"
            )
        model = getattr(inner, "_model", None)
        if model is None:
            raise VocabularyError(f"cannot read the vocabulary of a {type(inner).__name__}")
        shim = types.SimpleNamespace(sp_model=model, all_special_ids=list(tokenizer.all_special_ids))
        return TokenizerInfo.from_huggingface(shim, vocab_size=vocab_size, stop_token_ids=stops)
    return TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops)


def tokenizer_info_for_config(model_config: Any) -> TokenizerInfo:
    """The vocabulary of the model a vLLM ``ModelConfig`` names, built once per tokenizer.

    Parameters
    ----------
    model_config
        ``vllm_config.model_config``.

    Returns
    -------
    TokenizerInfo

    Raises
    ------
    VocabularyError
        When vLLM was started without a tokenizer (``skip_tokenizer_init``) or
        the tokenizer cannot be read.
    """
    if getattr(model_config, "skip_tokenizer_init", False):
        raise VocabularyError(
            "tokensieve needs the model's tokenizer; vLLM was started with skip_tokenizer_init"
        )
    vocab_size = int(model_config.get_vocab_size())
    key = (
        str(model_config.tokenizer),
        str(getattr(model_config, "tokenizer_mode", "")),
        str(getattr(model_config, "tokenizer_revision", "")),
        vocab_size,
    )
    with _LOCK:
        info = _INFOS.get(key)
        if info is None:
            from vllm.tokenizers import cached_tokenizer_from_config

            tokenizer = cached_tokenizer_from_config(model_config=model_config)
            try:
                generation = model_config.try_get_generation_config()
            except Exception:  # a missing or unreadable generation config: the tokenizer's EOS alone
                generation = None
            info = tokenizer_info_from(
                tokenizer, vocab_size=vocab_size, stop_token_ids=stop_ids_from(tokenizer, generation)
            )
            _INFOS[key] = info
        return info


def compiler_for(info: TokenizerInfo) -> GrammarCompiler:
    """The :class:`~tokensieve.GrammarCompiler` shared by every processor of one vocabulary.

    Parameters
    ----------
    info
        The vocabulary.

    Returns
    -------
    GrammarCompiler
        Its cache of compiled grammars is shared, so a constraint that comes
        back is not compiled again.
    """
    with _LOCK:
        compiler = _COMPILERS.get(info.hash)
        if compiler is None:
            compiler = GrammarCompiler(info)
            _COMPILERS[info.hash] = compiler
        return compiler
