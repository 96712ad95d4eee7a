"""Per-vocabulary precomputation shared by every grammar compiled for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from ..vocab.trie import TokenTrie
from .blank_copies import LeadingBlanks
from .long_tokens import LongTokens
from .shared_masks import SHARE_DEPTH
from .token_masks import TokenMaskBuilder
from .unit_needs import UnitNeeds

if TYPE_CHECKING:
    from ..automata.layers import Unit
    from ..vocab import TokenizerInfo

__all__ = ["mask_builder_for", "unit_needs_for"]

_MAX_VOCABS = 8
_cache: OrderedDict[tuple[str, int], TokenMaskBuilder] = OrderedDict()
_lock = threading.Lock()


def mask_builder_for(info: TokenizerInfo) -> TokenMaskBuilder:
    """The :class:`TokenMaskBuilder` of a vocabulary, built once and kept.

    The token trie is the expensive part (about 0.4 s for a 131k vocabulary);
    it is keyed by the vocabulary's hash, so equal vocabularies share it. The
    other per-vocabulary tables the walks use (which subtrees are well-formed
    UTF-8, the chain each subtree needs, the tokens longer than the sharing
    depth, the tokens by their leading run of blanks) are built here too, so
    that no grammar's first masks pay for them.
    """
    key = (info.hash, info.vocab_size)
    with _lock:
        builder = _cache.get(key)
        if builder is not None:
            _cache.move_to_end(key)
            return builder
    trie = TokenTrie(info.decoded_vocab, exclude=list(info.special_token_ids) + list(info.stop_token_ids))
    builder = TokenMaskBuilder(trie, info.vocab_size, info.stop_token_ids)
    builder.long_tokens = LongTokens(info.decoded_vocab, info.special_token_ids, builder.num_words, SHARE_DEPTH)
    builder.leading_blanks = LeadingBlanks(
        info.decoded_vocab, [*info.special_token_ids, *info.stop_token_ids], builder.num_words
    )
    with _lock:
        _cache[key] = builder
        while len(_cache) > _MAX_VOCABS:
            _cache.popitem(last=False)
    return builder


_units_lock = threading.Lock()
#: units remembered per vocabulary (every JSON string shares one)
_MAX_UNITS = 8
#: and the bytes they may hold together when one more is remembered (a unit of 256 counted places
#: that most tokens are read from holds 67 MB for 131k tokens; a string's 0.4 MB, an e-mail's 8 MB)
_MAX_UNIT_BYTES = 128 << 20


def unit_needs_for(builder: TokenMaskBuilder, unit: Unit) -> UnitNeeds:
    """The :class:`UnitNeeds` of ``unit`` over ``builder``'s vocabulary, built once (per process).

    Kept on the builder (``builder.unit_needs``, counted in its ``nbytes``):
    the :data:`_MAX_UNITS` most recent, fewer when they would hold more than
    :data:`_MAX_UNIT_BYTES` with the new one (a grammar keeps those it uses).
    """
    known = builder.unit_needs
    with _units_lock:
        hit = known.get(unit.key)
    if hit is not None:
        return hit
    made = UnitNeeds(builder.trie, unit, builder.vocab_size, builder.num_words)
    with _units_lock:
        hit = known.get(unit.key)
        if hit is not None:
            return hit
        held = made.nbytes + sum(u.nbytes for u in known.values())
        while known and (len(known) >= _MAX_UNITS or held > _MAX_UNIT_BYTES):
            held -= known.pop(next(iter(known))).nbytes
        known[unit.key] = made
        return made
