"""TokenizerInfo built directly: padding, special tokens, hash, pickling, argument errors."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve import VocabularyError
from tokensieve.vocab import TokenizerInfo

VOCAB = [b"", b"<s>", b"a", b"b", b"ab", b" a", "é".encode(), "é".encode()[:1]]


def test_basic_attributes() -> None:
    info = TokenizerInfo(VOCAB, vocab_size=12, stop_token_ids=[0], special_token_ids=[1], name="tiny")
    assert info.vocab_size == len(info) == 12
    assert info.num_real_tokens == len(VOCAB)
    assert len(info.decoded_vocab) == 12
    assert info.decoded_vocab[1] == b""  # declared special: blanked
    assert info.decoded_vocab[2:8] == VOCAB[2:8]
    assert info.decoded_vocab[8:] == [b""] * 4  # padding
    assert info.stop_token_ids == [0]
    assert info.special_token_ids == [0, 1, 8, 9, 10, 11]
    assert info.name == "tiny"
    assert info.token_lengths.dtype == np.int32
    assert info.token_lengths.tolist() == [len(t) for t in info.decoded_vocab]
    assert not info.token_lengths.flags.writeable
    assert "tiny" in repr(info)


def test_empty_tokens_are_special_and_only_they() -> None:
    info = TokenizerInfo([b"x", b"", b"y"], special_token_ids=[2])
    assert info.special_token_ids == [1, 2]
    assert [i for i, t in enumerate(info.decoded_vocab) if not t] == info.special_token_ids
    assert info.special_token_set == {1, 2}
    assert info.stop_token_set == frozenset()


def test_ids_are_sorted_and_deduplicated() -> None:
    info = TokenizerInfo(VOCAB, stop_token_ids=[3, 0, 3], special_token_ids=np.array([1, 1]))
    assert info.stop_token_ids == [0, 3]
    assert info.special_token_ids == [0, 1]
    # a stop token that is not special keeps its bytes (excluded from text by the consumer)
    assert info.decoded_vocab[3] == b"b"


def test_attribute_lists_are_copies() -> None:
    info = TokenizerInfo(VOCAB, stop_token_ids=[0])
    info.stop_token_ids.append(5)
    info.special_token_ids.clear()
    assert info.stop_token_ids == [0]
    assert info.special_token_ids == [0]


def test_bytes_like_tokens_are_accepted() -> None:
    info = TokenizerInfo([bytearray(b"ab"), memoryview(b"c")])  # type: ignore[list-item]
    assert info.decoded_vocab == [b"ab", b"c"]
    assert all(type(t) is bytes for t in info.decoded_vocab)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"decoded_vocab": []}, "at least one token"),
        ({"decoded_vocab": ["a"]}, "token 0 must be bytes"),
        ({"decoded_vocab": [b"a", None]}, "token 1 must be bytes"),
        ({"vocab_size": 3}, "smaller than"),
        ({"vocab_size": "9"}, "vocab_size must be an integer"),
        ({"vocab_size": 1 << 30}, "more than the supported"),
        ({"stop_token_ids": [8]}, "stop token id 8 is out of range"),
        ({"special_token_ids": [-1]}, "special token id -1 is out of range"),
        ({"stop_token_ids": [1.5]}, "stop token id must be an integer"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"decoded_vocab": VOCAB, **kwargs}
    vocab = args.pop("decoded_vocab")
    with pytest.raises(VocabularyError, match=message):
        TokenizerInfo(vocab, **args)  # type: ignore[arg-type]


def test_hash_identifies_the_vocabulary() -> None:
    base = TokenizerInfo(VOCAB, vocab_size=10, stop_token_ids=[0], special_token_ids=[1])
    same = TokenizerInfo(list(VOCAB), vocab_size=10, stop_token_ids=[0], special_token_ids=[1], name="other")
    assert base.hash == same.hash and base == same and hash(base) == hash(same)
    assert len(base.hash) == 64 and int(base.hash, 16) >= 0
    changed_token = list(VOCAB)
    changed_token[4] = b"ba"
    variants = [
        TokenizerInfo(changed_token, vocab_size=10, stop_token_ids=[0], special_token_ids=[1]),
        TokenizerInfo(VOCAB, vocab_size=11, stop_token_ids=[0], special_token_ids=[1]),
        TokenizerInfo(VOCAB, vocab_size=10, stop_token_ids=[0, 2], special_token_ids=[1]),
        TokenizerInfo(VOCAB, vocab_size=10, stop_token_ids=[0], special_token_ids=[1, 2]),
        # same concatenated bytes, different split between tokens
        TokenizerInfo(
            [*VOCAB[:4], b"a", b"b a", *VOCAB[6:]], vocab_size=10, stop_token_ids=[0], special_token_ids=[1]
        ),
    ]
    hashes = {base.hash} | {v.hash for v in variants}
    assert len(hashes) == 1 + len(variants)
    assert all(v != base for v in variants)


def test_hash_is_stable_across_processes() -> None:
    code = (
        "from tokensieve.vocab import TokenizerInfo;"
        f"print(TokenizerInfo({VOCAB!r}, vocab_size=10, stop_token_ids=[0], special_token_ids=[1]).hash)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == TokenizerInfo(VOCAB, vocab_size=10, stop_token_ids=[0], special_token_ids=[1]).hash


def test_pickle_round_trip() -> None:
    info = TokenizerInfo(VOCAB, vocab_size=10, stop_token_ids=[0], special_token_ids=[1], name="tiny")
    _ = info.token_lengths, info.hash
    copy = pickle.loads(pickle.dumps(info))
    assert copy == info
    assert copy.decoded_vocab == info.decoded_vocab
    assert copy.stop_token_ids == info.stop_token_ids
    assert copy.special_token_ids == info.special_token_ids
    assert copy.stop_token_set == {0}
    assert copy.special_token_set == {1} | {i for i, t in enumerate(copy.decoded_vocab) if not t}
    assert copy.name == "tiny"
    assert copy.token_lengths.tolist() == info.token_lengths.tolist()


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(st.binary(max_size=6), min_size=1, max_size=30),
    padding=st.integers(0, 5),
    data=st.data(),
)
def test_invariants(tokens: list[bytes], padding: int, data: st.DataObject) -> None:
    size = len(tokens) + padding
    ids = st.lists(st.integers(0, size - 1), max_size=5)
    stops, specials = data.draw(ids), data.draw(ids)
    info = TokenizerInfo(tokens, vocab_size=size, stop_token_ids=stops, special_token_ids=specials)
    assert len(info.decoded_vocab) == info.vocab_size == size
    assert info.stop_token_ids == sorted(set(stops))
    special = set(info.special_token_ids)
    assert set(specials) <= special
    for i, t in enumerate(info.decoded_vocab):
        assert (t == b"") == (i in special)
        if i not in special:
            assert t == tokens[i]
    again = TokenizerInfo(tokens, vocab_size=size, stop_token_ids=stops[::-1], special_token_ids=specials)
    assert again.hash == info.hash
