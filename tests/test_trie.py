"""TokenTrie against a brute-force prefix oracle."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.vocab.trie import TokenTrie


def _paths(trie: TokenTrie) -> list[bytes]:
    paths = [b""] * trie.num_nodes
    for n in range(1, trie.num_nodes):
        paths[n] = paths[trie.node_parent[n]] + bytes([trie.node_byte[n]])
    return paths


def _check(tokens: list[bytes], exclude: set[int]) -> None:
    trie = TokenTrie(tokens, sorted(exclude))
    included = [i for i, b in enumerate(tokens) if b and i not in exclude]
    prefixes = {b""} | {b[:k] for i in included for b in [tokens[i]] for k in range(len(b) + 1)}
    paths = _paths(trie)
    assert set(paths) == prefixes
    assert len(paths) == len(prefixes)  # one node per distinct prefix
    assert sorted(trie.sorted_tokens.tolist()) == sorted(included)
    depths = [len(p) for p in paths]
    assert trie.node_depth.tolist() == depths
    for n in range(trie.num_nodes):
        p = paths[n]
        kids = trie.children(n).tolist()
        assert [paths[k] for k in kids] == sorted(
            q for q in prefixes if len(q) == len(p) + 1 and q.startswith(p)
        )
        sub = set(range(n, trie.subtree_end[n]))
        assert sub == {m for m in range(trie.num_nodes) if paths[m].startswith(p)}
        under = {int(t) for t in trie.sorted_tokens[trie.token_lo[n] : trie.token_hi[n]]}
        assert under == {i for i in included if tokens[i].startswith(p)}
        exact = {int(t) for t in trie.sorted_tokens[trie.token_lo[n] : trie.token_mid[n]]}
        assert exact == {i for i in included if tokens[i] == p}
        below = {b for m in sub if m != n for b in [paths[m][-1]]}
        words = trie.subtree_bytes[n]
        got = {b for b in range(256) if (int(words[b >> 6]) >> (b & 63)) & 1}
        assert got == below
    for p in list(prefixes)[:50]:
        assert paths[trie.find(p)] == p
    assert trie.find(b"\xff\xfe\xfd\xfc\xfb") in (
        -1,
        paths.index(b"\xff\xfe\xfd\xfc\xfb") if b"\xff\xfe\xfd\xfc\xfb" in paths else -1,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(min_size=0, max_size=6).map(lambda b: bytes(x % 4 + 97 for x in b)), max_size=40),
    st.sets(st.integers(0, 39), max_size=5),
)
def test_trie_matches_prefix_oracle(tokens: list[bytes], exclude: set[int]) -> None:
    _check(tokens, exclude)


def test_trie_random_bytes_with_duplicates() -> None:
    rng = random.Random(7)
    tokens = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5))) for _ in range(300)]
    tokens += tokens[:20] + [b""] * 3
    _check(tokens, {5, 17})


def test_empty_vocabulary() -> None:
    trie = TokenTrie([b"", b""])
    assert trie.num_nodes == 1
    assert trie.num_tokens == 0
    assert trie.children(0).size == 0
    assert np.all(trie.subtree_bytes == 0)


@pytest.mark.parametrize("n", [1, 2])
def test_single_byte_tokens(n: int) -> None:
    tokens = [bytes([i]) for i in range(256)] * n
    trie = TokenTrie(tokens)
    assert trie.num_nodes == 257
    assert trie.num_tokens == 256 * n
