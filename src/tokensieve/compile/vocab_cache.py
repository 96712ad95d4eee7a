"""Per-vocabulary precomputation shared by every grammar compiled for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from ..vocab.trie import TokenTrie
from .token_masks import TokenMaskBuilder

if TYPE_CHECKING:
    from ..vocab import TokenizerInfo

__all__ = ["mask_builder_for"]

_MAX_VOCABS = 8
_cache: OrderedDict[tuple[str, int], TokenMaskBuilder] = OrderedDict()
_lock = threading.Lock()


def mask_builder_for(info: TokenizerInfo) -> TokenMaskBuilder:
    """The :class:`TokenMaskBuilder` of a vocabulary, built once and kept.

    The token trie is the expensive part (about 0.4 s for a 131k vocabulary);
    it is keyed by the vocabulary's hash, so equal vocabularies share it.
    """
    key = (info.hash, info.vocab_size)
    with _lock:
        builder = _cache.get(key)
        if builder is not None:
            _cache.move_to_end(key)
            return builder
    trie = TokenTrie(info.decoded_vocab, exclude=list(info.special_token_ids) + list(info.stop_token_ids))
    builder = TokenMaskBuilder(trie, info.vocab_size, info.stop_token_ids)
    with _lock:
        _cache[key] = builder
        while len(_cache) > _MAX_VOCABS:
            _cache.popitem(last=False)
    return builder
