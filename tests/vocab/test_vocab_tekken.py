"""Tekken files against ``tiktoken`` built from the same ranks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tokensieve import VocabularyError
from tokensieve.vocab import TokenizerInfo

tiktoken = pytest.importorskip("tiktoken")

PATTERN = r"""[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
TEXTS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "Héllo wörld: café, naïve, € 12.50 — 日本語のテキスト, 中文, русский текст 😀🎉",
    '{"name": "tokensieve", "ok": true, "n": [1, 2, 3]}\n\tindented  two  spaces\n',
]


def _tiny_ranks() -> list[bytes]:
    ranks = [bytes([b]) for b in range(256)]
    ranks += [
        b"he",
        b"ll",
        b"hell",
        b"hello",
        b" w",
        b" wo",
        b"\xc3\xa9",
        b"\xe2\x82",
        b"\xe2\x82\xac",
        b"  ",
    ]
    return ranks


def _tekken(
    ranks: list[bytes], num_special: int, vocab_size: int, special: list[dict[str, Any]] | None
) -> dict:
    data: dict[str, Any] = {
        "config": {
            "pattern": PATTERN,
            "num_vocab_tokens": len(ranks),
            "default_vocab_size": vocab_size,
            "default_num_special_tokens": num_special,
            "version": "v3",
        },
        "vocab": [
            {
                "rank": r,
                "token_bytes": base64.b64encode(b).decode(),
                "token_str": b.decode("utf-8", "replace"),
            }
            for r, b in enumerate(ranks)
        ],
    }
    if special is not None:
        data["special_tokens"] = special
    return data


def _encoding(ranks: list[bytes], count: int) -> Any:
    return tiktoken.Encoding(
        name="tekken-test",
        pat_str=PATTERN,
        mergeable_ranks={b: r for r, b in enumerate(ranks[:count])},
        special_tokens={},
    )


def _check_against_tiktoken(info: TokenizerInfo, enc: Any, num_special: int, texts: list[str]) -> None:
    assert info.vocab_size == num_special + enc.n_vocab
    for i in range(num_special):
        assert info.decoded_vocab[i] == b"" and i in info.special_token_ids
    for rank in range(enc.n_vocab):
        assert info.decoded_vocab[num_special + rank] == enc.decode_single_token_bytes(rank), rank
    for text in texts:
        ids = [num_special + r for r in enc.encode(text)]
        assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode()


def test_tiny_with_default_special_tokens(tmp_path: Path) -> None:
    ranks = _tiny_ranks()
    path = tmp_path / "tekken_tiny.json"
    path.write_text(json.dumps(_tekken(ranks, 30, 30 + len(ranks) - 2, None)))
    info = TokenizerInfo.from_file(path)
    # default_vocab_size cuts the last two ranks
    _check_against_tiktoken(info, _encoding(ranks, len(ranks) - 2), 30, ["hello world", "héllo € 😀"])
    assert info.stop_token_ids == [2]  # "</s>" among mistral-common's default special tokens
    assert info.name == "tekken_tiny"
    assert TokenizerInfo.from_tekken(path).hash == info.hash


def test_tiny_with_listed_special_tokens(tmp_path: Path) -> None:
    ranks = _tiny_ranks()
    special = [
        {"rank": 0, "token_str": "<unk>", "is_control": True},
        {"rank": 1, "token_str": "<s>", "is_control": True},
        {"rank": 4, "token_str": "</s>", "is_control": True},
        {"rank": 3, "token_str": "[INST]", "is_control": True},
    ]
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_tekken(ranks, 8, 8 + len(ranks), special)))
    info = TokenizerInfo.from_file(tmp_path)  # folder holding tekken.json
    _check_against_tiktoken(info, _encoding(ranks, len(ranks)), 8, ["hello  world"])
    assert info.stop_token_ids == [4]
    assert info.special_token_ids == list(range(8))


def test_ranks_out_of_order_are_placed_by_rank(tmp_path: Path) -> None:
    ranks = _tiny_ranks()
    data = _tekken(ranks, 5, 5 + len(ranks), None)
    data["vocab"].reverse()
    path = tmp_path / "tekken_rev.json"
    path.write_text(json.dumps(data))
    info = TokenizerInfo.from_file(path)
    assert info.decoded_vocab[5:] == ranks


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["vocab"][3].update(rank=2), "rank 2 appears twice"),
        (lambda d: d["vocab"][3].update(rank=10_000), "rank 10000"),
        (lambda d: d["vocab"][3].pop("token_bytes"), "lacks 'rank' or 'token_bytes'"),
        (lambda d: d["vocab"][3].update(token_bytes="###"), "invalid base64"),
        (lambda d: d["config"].pop("default_num_special_tokens"), "default_num_special_tokens is missing"),
        (lambda d: d["config"].update(default_vocab_size=10**6), "does not fit"),
        (lambda d: d.update(special_tokens=[{"rank": 99, "token_str": "x"}]), "outside the 5 special ids"),
        (
            lambda d: d.update(special_tokens=[{"rank": 1, "token_str": "a"}, {"rank": 1, "token_str": "b"}]),
            "twice",
        ),
    ],
)
def test_broken_tekken(mutate: Any, message: str, tmp_path: Path) -> None:
    data = _tekken(_tiny_ranks(), 5, 5 + 260, None)
    mutate(data)
    path = tmp_path / "tekken_bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(VocabularyError, match=message) as err:
        TokenizerInfo.from_file(path)
    assert str(path) in str(err.value)


@pytest.mark.slow
def test_real_tekken(tekken_path: Path) -> None:
    info = TokenizerInfo.from_file(tekken_path)
    data = json.loads(tekken_path.read_text())
    config = data["config"]
    num_special = config["default_num_special_tokens"]
    inner = config["default_vocab_size"] - num_special
    assert (num_special, inner) == (1000, 130072)
    ranks = [base64.b64decode(e["token_bytes"]) for e in data["vocab"]]
    enc = tiktoken.Encoding(
        name="tekken",
        pat_str=config["pattern"],
        mergeable_ranks={b: r for r, b in enumerate(ranks[:inner])},
        special_tokens={},
    )
    _check_against_tiktoken(info, enc, num_special, TEXTS)
    assert info.vocab_size == 131072
    assert info.stop_token_ids == [2]
    assert info.special_token_ids == list(range(1000))
