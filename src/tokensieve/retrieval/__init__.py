"""Constrained decoding over a fixed catalog of ID sequences (generative retrieval).

The STATIC layout: the prefix trie of the catalog flattened into a CSR
transition matrix, packed per-node masks for the first levels, and a step that
works on every (batch x beam) row at once — on numpy arrays or torch tensors.

>>> import numpy as np
>>> from tokensieve.retrieval import StaticIndex
>>> index = StaticIndex.from_sequences(np.array([[1, 2], [1, 3], [4, 0]]), vocab_size=8)
>>> nodes = np.zeros(2, dtype=np.int64)                  # two rows at the root
>>> nodes = index.next_nodes(nodes, np.array([1, 4]), 0)
>>> index.contains([1, 3]), index.contains([1, 4])
(True, False)
"""

from __future__ import annotations

from ._errors import CatalogError
from .beam import BeamSearchResult, constrained_beam_search
from .filter import ItemFilter
from .index import StaticIndex

__all__ = [
    "BeamSearchResult",
    "CatalogError",
    "ItemFilter",
    "StaticIndex",
    "constrained_beam_search",
]
