"""The later layers of a counted JSON string take their base layer's mask less the tokens that begin too many characters.

Oracles: for the masks, brute force (every token's bytes run through the
automaton's table from every state); for the characters a token begins, the
counted automaton itself: the least room from which the token's bytes do not
die inside the repetition (leaving it at a boundary counts as alive).
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from tokensieve import GrammarCompiler
from tokensieve.automata import ByteDFA
from tokensieve.automata.blank_runs import bound_blank_runs
from tokensieve.automata.counted import counted_repeat
from tokensieve.automata.layered_product import layered_intersection
from tokensieve.automata.layers import Unit, layers_of
from tokensieve.automata.ops import stored_dfa
from tokensieve.compile import unit_needs, vocab_cache
from tokensieve.compile.token_masks import AutomatonView
from tokensieve.compile.unit_needs import unit_counts
from tokensieve.compile.vocab_cache import mask_builder_for, unit_needs_for
from tokensieve.grammar import json_strings, parse_regex
from tokensieve.vocab import TokenizerInfo

EOS, SPECIAL = 0, 1


def _vocab(seed: int) -> list[bytes]:
    """Single bytes, and words of string characters in every spelling, cut anywhere, some with a quote."""
    rng = random.Random(seed)
    vocab = [b"", b""] + [bytes([b]) for b in range(256)]
    pieces = [
        "a",
        "b",
        " ",
        "é",
        "€",
        "😀",
        "\\n",
        '\\"',
        "\\\\",
        "\\u00e9",
        "\\ud83d\\ude00",
        '"',
        ", ",
        "]",
    ]
    seen = set(vocab)
    while len(vocab) < 1200:
        word = "".join(rng.choice(pieces) for _ in range(rng.choice([1, 2, 3, 5, 9, 20, 30]))).encode()
        roll = rng.random()
        if roll < 0.25 and len(word) > 2:
            word = word[rng.randint(1, len(word) - 1) :]  # may start inside a character or an escape
        elif roll < 0.5 and len(word) > 2:
            word = word[: rng.randint(1, len(word) - 1)]  # may end inside one
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    vocab += [b"x" * 40, "é".encode() * 38, b"\\u0041" * 12, b'"x"', b"\\", b"\\u", b"\\ud83d"]
    return vocab


def _info(seed: int, vocab: list[bytes] | None = None) -> TokenizerInfo:
    vocab = _vocab(seed) if vocab is None else vocab
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 5, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


def _brute_force(dfa: ByteDFA, info: TokenizerInfo) -> np.ndarray:
    table = dfa.transitions
    every = np.arange(table.shape[0])
    out = np.zeros((table.shape[0], info.vocab_size), dtype=bool)
    for t, data in enumerate(info.decoded_vocab):
        if t in info.special_token_ids or not data:
            continue
        cur = every
        for byte in data:
            cur = np.where(cur >= 0, table[np.maximum(cur, 0), byte], -1)
        out[:, t] = cur >= 0
    for t in info.stop_token_ids:
        out[:, t] = np.asarray(dfa.accepting, dtype=bool)
    return out


def _bits(mask: np.ndarray, size: int) -> np.ndarray:
    return np.unpackbits(mask.view(np.uint8), bitorder="little")[:size].astype(bool)


def _string(**bounds: int) -> dict:
    return {"type": "string", **{("minLength" if k == "lo" else "maxLength"): v for k, v in bounds.items()}}


SCHEMAS = [
    _string(hi=40),  # no least length: the base is the first layer past the start
    _string(lo=3, hi=36),
    {"type": "array", "items": _string(lo=1, hi=34), "maxItems": 3},  # several copies, and the way out
    {
        "type": "object",
        "properties": {"a": _string(hi=35), "b": _string(hi=35), "n": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    },
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_masks_of_the_later_layers_match_brute_force(index: int) -> None:
    """Every state, derived or walked, met in a random order; through ``fill_row`` on a fresh grammar too,
    the derived states first (their bases not computed yet), then again once they are."""
    info = _info(index)
    compiled, fresh, layers, derived = _layered(info, SCHEMAS[index], 1 / 3)
    # rooms under and over the most characters a token begins: both the AND and the base's mask itself
    rooms = layers.room.take(derived)
    assert rooms.min() == 0 and rooms.max() > 20
    _check_every_mask(compiled, fresh, info, index)


def _layered(info: TokenizerInfo, schema: dict, share: float) -> tuple:
    """``(compiled, fresh, layer_copies, derived states)``: ``schema`` compiled twice without masks
    ahead, more than ``share`` of its states derived."""
    compile_ = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema
    compiled = compile_(schema, strict=False)
    layers = compiled.dfa.layer_copies
    assert layers is not None
    derived = np.flatnonzero(layers.base >= 0)
    assert derived.size > compiled.num_states * share
    return compiled, compile_(schema, strict=False), layers, derived


def _check_every_mask(compiled, fresh, info: TokenizerInfo, seed: int) -> None:
    """Every state's mask is brute force's, met in a random order; and through ``fill_row`` on ``fresh``
    (the same grammar, compiled again), the derived states first, then again once their bases are known."""
    expected = _brute_force(compiled.dfa, info)
    order = list(range(compiled.num_states))
    random.Random(seed).shuffle(order)
    for s in order:
        got = _bits(compiled.token_mask(s), info.vocab_size)
        bad = np.flatnonzero(got != expected[s])
        assert not bad.size, (s, [info.decoded_vocab[t] for t in bad[:5] if t < len(info.decoded_vocab)])
    base = fresh.dfa.layer_copies.base
    row = np.empty(fresh.num_words, dtype=np.int32)
    first = np.flatnonzero(base >= 0).tolist() + np.flatnonzero(base < 0).tolist()
    for _ in range(2):
        for s in first:
            row.fill(-1)
            fresh.fill_row(s, row)
            np.testing.assert_array_equal(_bits(row, info.vocab_size), expected[s], err_msg=str(s))


LONG_SCHEMAS = [
    _string(hi=260),
    {
        "type": "object",
        "properties": {"a": _string(lo=2, hi=230), "b": _string(hi=200)},
        "required": ["a"],
        "additionalProperties": False,
    },
]


@pytest.mark.parametrize("index", range(len(LONG_SCHEMAS)))
@pytest.mark.parametrize("precompute", [False, True])
def test_layers_that_no_walk_reaches_are_left_out_of_the_walks_arrays(index: int, precompute: bool) -> None:
    """Strings long enough that their last layers are more than the longest token and the longest chain
    past their base: the walk's arrays leave those rows out, and every state's mask is still brute force's."""
    # the longest tokens are one layer per byte: a walk from a base goes as far as any
    longest = [b"x" * 24, b"ab" * 12, b"a" * 23 + b'"']
    info = _info(0, [word for word in _vocab(20 + index) if len(word) < 24] + longest)
    compiled = GrammarCompiler(info, precompute=precompute, cache_enabled=False).compile_json_schema(
        LONG_SCHEMAS[index], strict=False
    )
    view = compiled.automaton
    rows = view._copy_rows
    assert rows is not None and rows.unread.size > 1000  # the test reaches the rows left out
    assert not view.outdeg.take(rows.unread).any()
    # the walked states read what the whole automaton's arrays say: the same chains and class jumps
    whole = AutomatonView.of(compiled.dfa)
    walked = np.flatnonzero(compiled.dfa.layer_copies.base < 0)
    for name in ("jump_depth", "close_len", "outdeg", "permissive"):
        np.testing.assert_array_equal(getattr(view, name)[walked], getattr(whole, name)[walked], err_msg=name)
    for got, full in zip(view.chains, whole.chains, strict=True):
        np.testing.assert_array_equal(got[walked], full[walked])
    expected = _brute_force(compiled.dfa, info)
    order = list(range(compiled.num_states))
    random.Random(index).shuffle(order)
    for s in order:
        got = _bits(compiled.token_mask(s), info.vocab_size)
        np.testing.assert_array_equal(got, expected[s], err_msg=str(s))


@pytest.mark.parametrize("precompute", [False, True])
def test_pickled_and_precomputed_grammars_derive_the_same_masks(precompute: bool) -> None:
    info = _info(7)
    compiled = GrammarCompiler(info, precompute=precompute, cache_enabled=False).compile_json_schema(
        SCHEMAS[1], strict=False
    )
    if precompute:  # the units' counts are ready before decoding: no derived mask waits for them
        assert compiled._needs is not None and len(compiled._needs) == len(compiled.dfa.layer_copies.units)
    again = pickle.loads(pickle.dumps(compiled))
    assert again.dfa.layer_copies is not None
    for a, b in zip(
        (compiled.dfa.layer_copies.base, compiled.dfa.layer_copies.room),
        (again.dfa.layer_copies.base, again.dfa.layer_copies.room),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    expected = _brute_force(compiled.dfa, info)
    for s in range(compiled.num_states):
        np.testing.assert_array_equal(
            _bits(again.token_mask(s), info.vocab_size), expected[s], err_msg=str(s)
        )


def _string_unit() -> Unit:
    """The unit of a JSON string of at most 3 characters: one character."""
    node = counted_repeat(json_strings.json_string_char(), 0, 3)
    layers = layers_of(node)
    assert node is not None and layers is not None
    return Unit.of(node, layers)


def test_the_vocabulary_memory_counts_the_units_tables() -> None:
    """The units' counts live as long as the vocabulary's builder: its ``nbytes`` says so."""
    info = _info(13)
    builder = mask_builder_for(info)
    unit = _string_unit()
    before = builder.nbytes
    unit_needs_for(builder, unit)
    rows, _, _ = unit_counts(builder.trie, unit)
    listed = np.bincount(rows, minlength=unit.counted.size)
    assert listed.max() * 3 > info.vocab_size and listed.min() * 3 <= info.vocab_size  # kept both ways
    # a count per token (2 bytes), or a token id and its count per token listed (6 bytes)
    held = np.minimum(info.vocab_size * 2, listed * 6).sum()
    assert builder.nbytes - before >= held


def test_no_state_is_derived_when_every_layer_is_needed() -> None:
    """``minLength == maxLength``: the base layer would be the last; every state is walked."""
    info = _info(3)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema(
        _string(lo=33, hi=33), strict=False
    )
    layers = compiled.dfa.layer_copies
    assert layers is None or not (layers.base >= 0).any()


def test_blank_runs_keep_the_derived_states() -> None:
    """Bounding the runs of blanks adds states after the automaton's: they are walked, the others keep theirs."""
    info = _info(4)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema(
        SCHEMAS[3], strict=False
    )
    assert compiled.dfa.blank_chains is not None and compiled.dfa.layer_copies is not None
    chains = compiled.dfa.blank_chains
    assert not (compiled.dfa.layer_copies.base[chains.first :] >= 0).any()
    assert bound_blank_runs(compiled.dfa, 5) is not None  # places loop no more: nothing to bound


def _oracle_counts(max_count: int, info: TokenizerInfo) -> tuple[np.ndarray, int]:
    """Per place and token: the least room from which the counted automaton lets the token through
    (-1: from none); and the width of a layer. A byte that no unit begins with, read at a boundary,
    leaves the repetition: the token is let through whatever follows."""
    node = counted_repeat(json_strings.json_string_char(), 0, max_count)
    assert node is not None
    layers = layers_of(node)
    assert layers is not None
    dfa = stored_dfa(node)
    width = layers.width
    table = dfa.transitions
    out = np.full((width, len(info.decoded_vocab)), -1, dtype=np.int64)
    for t, data in enumerate(info.decoded_vocab):
        if t in info.special_token_ids or not data:
            continue
        for place in range(width):
            for room in range(max_count):
                # the state at ``place`` with ``room`` units still to begin (one already begun inside)
                q = (max_count - room - (place != 0)) * width + place
                for byte in data:
                    nxt = int(table[q, byte])
                    if nxt < 0:
                        if q % width or table[0, byte] >= 0:  # inside a unit, or a unit with no room: dead
                            q = -1
                        break  # at a boundary, a byte no unit begins with: the token leaves the repetition
                    q = nxt
                if q >= 0:
                    out[place, t] = room
                    break
    return out, width


def test_units_begun_match_the_counted_automaton() -> None:
    info = _info(11)
    builder = mask_builder_for(info)
    unit = _string_unit()
    rows, positions, found = unit_counts(builder.trie, unit)
    expected, width = _oracle_counts(48, info)  # more room than any token of the vocabulary begins
    np.testing.assert_array_equal(unit.counted, np.arange(width))
    assert (found > 0).all()  # only the counts over 0 are listed, each (place, token) once
    assert np.unique(rows * builder.trie.num_tokens + positions).size == rows.size
    counts = np.zeros((width, builder.trie.num_tokens), dtype=np.int64)
    counts[rows, positions] = found
    ids = builder.trie.sorted_tokens
    alive = expected[:, ids] >= 0
    assert alive[0].sum() > 1000 and alive[1:].any()  # most tokens from a boundary, some from inside
    np.testing.assert_array_equal(counts[alive], expected[:, ids][alive])
    assert expected.max() > 30  # long tokens are counted as far as they go


#: strings in a format or with a pattern, bounded in length: the layers of a product (automata/layered_product.py)
PRODUCT_SCHEMAS = [
    {"type": "string", "format": "email", "maxLength": 40},
    {
        "type": "array",
        "items": {"type": "string", "pattern": "^[a-c]+@[a-c]+$", "minLength": 2, "maxLength": 30},
        "maxItems": 2,
    },
    {"type": "string", "pattern": "^(a|b)*c(a|b){0,3}$", "minLength": 3, "maxLength": 36},
    # ten units at least to end from the head: layers with room for 16 more units and less than 26
    {"type": "string", "pattern": "^[ab]+@[ab]+\\.[ab]{6,}$", "maxLength": 40},
    {
        "type": "array",
        "items": {"type": "string", "pattern": "^[ab]+@[ab]{9,}$", "maxLength": 30},
        "maxItems": 3,
    },
    # the literal's places at the base layer already too near the bound (derived from their free state),
    # and far layers folded into their base when the masks' classes are refined
    {"type": "string", "format": "email", "minLength": 5, "maxLength": 60},
]
#: words an e-mail address is made of
_ADDRESS_WORDS = b"@ a@b ab@ @a . a.b [ ] [1.2.3.4] IPv6: ::1 c abc".split() + [
    word
    for n in range(2, 21)
    for word in (b"a" * n, b"ab" * (n // 2) + b"a" * (n % 2), b"b" * (n - 1) + b"@")
]


@pytest.mark.parametrize("index", range(len(PRODUCT_SCHEMAS)))
def test_masks_of_the_later_layers_of_a_product_match_brute_force(index: int) -> None:
    info = _info(30 + index, _vocab(30 + index) + _ADDRESS_WORDS)
    compiled, fresh, layers, _ = _layered(info, PRODUCT_SCHEMAS[index], 1 / 5)
    assert any(u.begins.sum() > 1 for u in layers.units)  # several boundaries: a product's places
    _check_every_mask(compiled, fresh, info, index)


@pytest.mark.parametrize("precompute", [False, True])
def test_far_layers_of_a_product_are_left_out_of_the_walks_arrays(precompute: bool) -> None:
    longest = [b"x" * 24, b"ab" * 12, b"a" * 23 + b'"']
    vocab = [word for word in _vocab(40) + _ADDRESS_WORDS if len(word) < 24] + longest
    info = _info(0, vocab)
    compiled = GrammarCompiler(info, precompute=precompute, cache_enabled=False).compile_json_schema(
        {"type": "string", "format": "email", "maxLength": 254}, strict=False
    )
    rows = compiled.automaton._copy_rows
    assert rows is not None and rows.unread.size > 500
    expected = _brute_force(compiled.dfa, info)
    for s in range(compiled.num_states):
        np.testing.assert_array_equal(
            _bits(compiled.token_mask(s), info.vocab_size), expected[s], err_msg=str(s)
        )


def _product_unit(pattern: str) -> Unit:
    """The unit of a JSON string of at most 20 characters matching ``pattern``, built by layers."""
    product = layered_intersection(
        counted_repeat(json_strings.json_string_char(), 0, 20),
        json_strings.json_string_content(parse_regex(pattern)),
    )
    assert product is not None
    layers = layers_of(product)
    assert layers is not None
    return layers.unit(product)


def test_the_units_remembered_are_bounded_in_bytes(monkeypatch) -> None:
    """A vocabulary forgets its oldest units' counts when the new one would take them past the bound."""
    info = _info(14)
    builder = mask_builder_for(info)
    builder.unit_needs.clear()
    string = _string_unit()
    other = _product_unit("[a-c]+@[a-c]+")
    first = unit_needs_for(builder, string)
    monkeypatch.setattr(vocab_cache, "_MAX_UNIT_BYTES", first.nbytes + 1)
    second = unit_needs_for(builder, other)
    assert list(builder.unit_needs) == [other.key]  # the string's counts are forgotten
    assert unit_needs_for(builder, other) is second
    again = unit_needs_for(builder, string)
    assert again is not first and list(builder.unit_needs) == [string.key]
    monkeypatch.setattr(vocab_cache, "_MAX_UNIT_BYTES", 1 << 40)
    assert unit_needs_for(builder, other) is not second
    assert list(builder.unit_needs) == [string.key, other.key]


def test_units_counted_in_batches_give_the_same_rows(monkeypatch) -> None:
    """The places of a unit are counted a batch at a time, bounded in the pairs followed: one place
    per batch gives the rows that one batch for all gives."""
    info = _info(15)
    builder = mask_builder_for(info)
    unit = _product_unit("[a-c]+@(\\[[0-9]{1,3}\\]|[a-c]+)")
    assert unit.counted.size > 3
    whole = unit_needs.UnitNeeds(builder.trie, unit, builder.vocab_size, builder.num_words)
    monkeypatch.setattr(unit_needs, "_MAX_PAIRS", 1)
    assert len(unit_needs._batches(builder.trie, unit)) == unit.counted.size
    apart = unit_needs.UnitNeeds(builder.trie, unit, builder.vocab_size, builder.num_words)
    for place in unit.counted.tolist():
        for room in range(12):
            a, b = whole.at_most(place, room), apart.at_most(place, room)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)
