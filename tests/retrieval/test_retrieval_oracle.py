"""Masks, transitions, look-ups and filters against a set-of-prefixes oracle.

Random catalogs (hypothesis) cover vocabularies around the 32-bit word
boundaries, fixed and variable lengths, items that are prefixes of one
another, duplicates, single items, explicit end tokens inside the vocabulary
and every dense depth. For every prefix of every item the index's mask must
equal the oracle's, following every allowed token must lead to the node of the
longer prefix, and ``contains`` must agree with set membership.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve.bitmask import bitmask_to_bool
from tokensieve.retrieval import CatalogError, StaticIndex


@st.composite
def catalogs(draw):
    vocab = draw(st.sampled_from([1, 2, 3, 5, 31, 32, 33, 63, 64, 65]))
    variable = draw(st.booleans())
    max_len = draw(st.integers(1, 5))
    n = draw(st.integers(1, 25))
    token = st.integers(0, vocab - 1)
    items = [
        tuple(draw(st.lists(token, min_size=1 if variable else max_len, max_size=max_len))) for _ in range(n)
    ]
    if variable and draw(st.booleans()):  # prefixes of existing items
        for s in list(items)[:3]:
            if len(s) > 1:
                items.append(s[: draw(st.integers(1, len(s) - 1))])
    if draw(st.booleans()):  # duplicates
        items += draw(st.lists(st.sampled_from(items), max_size=4))
    eos_choice = draw(st.sampled_from(["auto", "vocab", "inside"]))
    used = {t for s in items for t in s}
    free = [t for t in range(vocab) if t not in used]
    if eos_choice == "vocab":
        eos = vocab
    elif eos_choice == "inside" and free:
        eos = draw(st.sampled_from(free))
    else:
        eos = None
    dense_depth = draw(st.integers(0, 3))
    budget = draw(st.sampled_from([0.0, 0.25, 100.0]))  # 0: exactly dense_depth dense levels
    return items, vocab, eos, (dense_depth, budget)


def children_oracle(items, eos, allowed=None):
    """prefix tuple -> set of tokens that keep it a prefix of an (allowed) extended item."""
    out = defaultdict(set)
    for i, s in enumerate(items):
        if allowed is not None and not allowed[i]:
            continue
        ext = tuple(s) + ((eos,) if eos is not None else ())
        for k in range(len(ext)):
            out[ext[:k]].add(ext[k])
    return out


def build(items, vocab, eos, dense):
    dense_depth, budget = dense if isinstance(dense, tuple) else (dense, 0.25)
    return StaticIndex.from_sequences(
        [list(s) for s in items], vocab, eos_token=eos, dense_depth=dense_depth, dense_budget=budget
    )


def walk_all(index, items, allowed=None, item_filter=None):
    """Check every prefix level by level; return the node id of every prefix."""
    eos = index.eos_token
    oracle = children_oracle(items, eos)
    allowed_oracle = oracle if allowed is None else children_oracle(items, eos, allowed)
    node_of = {(): index.root}
    rng = np.random.default_rng(0)
    for level in range(index.num_levels):
        prefixes = sorted(p for p in oracle if len(p) == level and p in node_of)
        if not prefixes:
            break
        nodes = np.array([node_of[p] for p in prefixes], dtype=np.int64)
        # masks (numpy bitmask, and a wider bitmask)
        bitmask = np.full((len(nodes), index.bitmask_words), -1, dtype=np.int32)
        index.fill_bitmask(nodes, level, bitmask, item_filter=item_filter)
        got = bitmask_to_bool(bitmask, index.num_columns)
        wide = np.full((len(nodes), index.bitmask_words + 2), -1, dtype=np.int32)
        index.fill_bitmask(nodes, level, wide, item_filter=item_filter)
        assert np.array_equal(bitmask_to_bool(wide, 32 * wide.shape[1])[:, : index.num_columns], got)
        assert not wide[:, index.bitmask_words :].any()
        for i, p in enumerate(prefixes):
            expect = np.zeros(index.num_columns, dtype=bool)
            expect[sorted(allowed_oracle.get(p, ()))] = True
            assert np.array_equal(got[i], expect), (level, p, np.flatnonzero(got[i]), np.flatnonzero(expect))
        # apply_mask_ agrees with the bitmask and keeps allowed values
        logits = rng.standard_normal((len(nodes), index.num_columns + 3))
        masked = logits.copy()
        index.apply_mask_(masked, nodes, level, item_filter=item_filter)
        keep = np.zeros_like(logits, dtype=bool)
        keep[:, : index.num_columns] = got
        assert np.array_equal(np.isfinite(masked), keep)
        assert np.array_equal(masked[keep], logits[keep])
        if eos is not None and eos == index.vocab_size:
            # logits without the end column: the same mask on the first V columns
            narrow = logits[:, : index.vocab_size].copy()
            index.apply_mask_(narrow, nodes, level, item_filter=item_filter)
            assert np.array_equal(np.isfinite(narrow), keep[:, : index.vocab_size])
            assert np.array_equal(
                narrow[np.isfinite(narrow)], logits[:, : index.vocab_size][keep[:, : index.vocab_size]]
            )
        # follow every token of the unfiltered catalog
        full = bitmask_to_bool(index.fill_bitmask(nodes, level, bitmask), index.num_columns)
        # right after a fill of the same rows, next_nodes reuses what the fill gathered
        first = full.argmax(axis=1)
        reused = index.next_nodes(nodes, first, level)
        assert np.array_equal(reused, index.next_nodes(nodes, first, level, check=False))
        rows, toks = np.nonzero(full)
        nxt = index.next_nodes(nodes[rows], toks, level)
        assert nxt.dtype == np.int64 and reused.dtype == np.int64
        pick = {(r, t): n for r, t, n in zip(rows.tolist(), toks.tolist(), nxt.tolist(), strict=True)}
        assert reused.tolist() == [pick[(r, t)] for r, t in enumerate(first.tolist())]
        for r, t, child in zip(rows.tolist(), toks.tolist(), nxt.tolist(), strict=True):
            if eos is not None and t == eos:
                assert child == index.end_node
            else:
                node_of[prefixes[r] + (t,)] = child
    # every prefix was reached and distinct prefixes got distinct nodes
    reached = {p: n for p, n in node_of.items()}
    assert len(set(reached.values())) == len(reached)
    return node_of


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs())
def test_masks_and_transitions_match_oracle(cat):
    items, vocab, eos, dense_depth = cat
    index = build(items, vocab, eos, dense_depth)
    assert index.num_sequences == len(items)
    assert index.num_unique == len(set(items))
    node_of = walk_all(index, items)
    prefixes = {tuple(s)[:k] for s in items for k in range(len(s) + 1)}
    assert set(node_of) == prefixes
    if index.end_node is not None:
        end = np.array([index.end_node, index.end_node], dtype=np.int64)
        for level in range(1, index.num_levels):
            mask = bitmask_to_bool(
                index.fill_bitmask(end, level, np.zeros((2, index.bitmask_words), np.int32)),
                index.num_columns,
            )
            assert np.flatnonzero(mask[0]).tolist() == [index.eos_token]
            nxt = index.next_nodes(end, np.full(2, index.eos_token), level)
            assert nxt.tolist() == [index.end_node] * 2


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.data())
def test_contains_matches_set_membership(cat, data):
    items, vocab, eos, dense_depth = cat
    index = build(items, vocab, eos, dense_depth)
    members = set(items)
    assert all(index.contains(list(s)) for s in members)
    queries = list(members)
    for s in list(members)[:10]:
        queries.append(s[:-1])
        queries.append(s + (data.draw(st.integers(0, vocab)),))
        queries.append(tuple(data.draw(st.integers(-1, vocab + 1)) for _ in s))
    for q in queries:
        expect = q in members
        assert index.contains(list(q)) == expect, q
    flat = [list(q) for q in queries if q]
    width = max(len(q) for q in flat)
    padded = np.array([q + [0] * (width - len(q)) for q in flat])
    got = index.contains_many(padded, lengths=[len(q) for q in flat])
    assert got.tolist() == [tuple(q) in members for q in flat]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.data())
def test_item_filter_matches_filtered_oracle(cat, data):
    items, vocab, eos, dense_depth = cat
    index = build(items, vocab, eos, dense_depth)
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=len(items), max_size=len(items))))
    filt = index.make_filter(allowed)
    assert filt.num_allowed == int(allowed.sum())
    walk_all(index, items, allowed=allowed, item_filter=filt)
    # a plain boolean vector works as well
    walk_all(index, items, allowed=allowed, item_filter=allowed)


def test_empty_filter_allows_nothing_but_end():
    items = [(1, 2), (1,), (3, 4, 5)]
    index = build(items, 8, None, 2)
    filt = index.make_filter(np.zeros(len(items), dtype=bool))
    root = np.zeros(1, dtype=np.int64)
    assert not index.fill_bitmask(root, 0, np.zeros((1, 1), np.int32), item_filter=filt).any()
    end = np.array([index.end_node])
    mask = index.fill_bitmask(end, 2, np.zeros((1, 1), np.int32), item_filter=filt)
    assert np.flatnonzero(bitmask_to_bool(mask, index.num_columns)).tolist() == [index.eos_token]


def test_single_item_and_duplicates():
    index = StaticIndex.from_sequences(np.array([[7, 7, 7]] * 5), 8)
    assert index.num_sequences == 5 and index.num_unique == 1
    walk_all(index, [(7, 7, 7)] * 5)
    assert index.contains([7, 7, 7]) and not index.contains([7, 7])


def test_vocab_of_one_token():
    index = StaticIndex.from_sequences([[0], [0, 0], [0, 0, 0]], 1)
    assert index.eos_token == 1 and index.num_columns == 2
    walk_all(index, [(0,), (0, 0), (0, 0, 0)])


def test_large_vocab_uses_int32_tokens():
    rng = np.random.default_rng(1)
    seqs = rng.integers(0, 70_000, (200, 3))
    seqs[:, 0] = rng.integers(65_530, 70_000, 200)
    index = StaticIndex.from_sequences(seqs, 70_000, dense_depth=1)
    assert index.edge_token.dtype == np.int32
    walk_all(index, [tuple(r) for r in seqs.tolist()])


def test_unary_levels_take_the_direct_path():
    """Levels where every node has exactly one child skip the CSR slice; masks still match."""
    rng = np.random.default_rng(3)
    heads = rng.integers(0, 40, (30, 2))
    tails = rng.integers(0, 40, (30, 3))
    items = [tuple(h) + tuple(t) for h, t in zip(heads.tolist(), tails.tolist(), strict=True)]
    index = StaticIndex.from_sequences([list(s) for s in items], 40, dense_depth=1, dense_budget=0.0)
    unary = [lv for lv in range(index.num_levels) if index._tables.unary_offset[lv] is not None]
    assert unary and unary[-1] == index.num_levels - 1
    walk_all(index, items)
    allowed = rng.random(len(items)) < 0.5
    walk_all(index, items, allowed=allowed, item_filter=index.make_filter(allowed))
    # a non-contiguous bitmask takes the copy path
    nodes = np.zeros(len(items), dtype=np.int64)
    for lv in range(index.num_levels - 1):
        nodes = index.next_nodes(nodes, np.array([s[lv] for s in items]), lv)
    lv = index.num_levels - 1
    wide = np.zeros((len(items), 2 * index.bitmask_words), dtype=np.int32)
    index.fill_bitmask(nodes, lv, wide[:, ::2])
    got = bitmask_to_bool(np.ascontiguousarray(wide[:, ::2]), index.num_columns)
    assert [np.flatnonzero(r).tolist() for r in got] == [[s[-1]] for s in items]
    # a token that is not the only child is refused
    bad = np.array([(s[-1] + 1) % 40 for s in items])
    with pytest.raises(CatalogError, match="not allowed"):
        index.next_nodes(nodes, bad, lv)


def _pattern_catalog(variable: bool, seed: int) -> tuple[list[tuple[int, ...]], int]:
    """Random 4-token items over 600 tokens whose third level is narrow but often branches.

    Two-token heads from a small range give about one item per head, so level 2
    has 1 to 8 children per node; a few planted heads also get children that
    share a mask byte (tokens ``8k`` and ``8k + 1 + j``). Variable catalogs add
    2- and 3-token prefixes of items, so levels 2 and 3 hold end tokens and
    END rows.
    """
    rng = np.random.default_rng(seed)
    vocab = 600
    heads = rng.integers(0, 40, (1500, 2))
    tails = rng.integers(0, vocab, (1500, 2))
    items = [tuple(h) + tuple(t) for h, t in zip(heads.tolist(), tails.tolist(), strict=True)]
    for k in range(2):
        head = (41 + k, 7)
        items += [head + (8 * (k + 3), 1), head + (8 * (k + 3) + 1 + k, 2), head + (500 - k, 3)]
    if variable:
        items += [s[: 2 + (i % 2)] for i, s in enumerate(items[:200])]
    return items, vocab


def _check_batch(index, oracle, level, nodes, prefixes, rng):
    """Mask and transitions of one batch against the oracle; return the node ids reached."""
    eos = index.eos_token
    bitmask = np.full((len(nodes), index.bitmask_words), -1, dtype=np.int32)
    got = bitmask_to_bool(index.fill_bitmask(nodes, level, bitmask), index.num_columns)
    for i, p in enumerate(prefixes):
        expect = np.zeros(index.num_columns, dtype=bool)
        expect[sorted(oracle[p] if p is not None else {eos})] = True
        assert np.array_equal(got[i], expect), (level, p, np.flatnonzero(got[i]))
    # one allowed token per row, followed right after the fill (reusing it) and without reuse
    choice = np.array([rng.choice(np.flatnonzero(r)) for r in got])
    nxt = index.next_nodes(nodes, choice, level)
    assert np.array_equal(nxt, index.next_nodes(nodes, choice, level, check=False))
    reached = []
    for i, p in enumerate(prefixes):
        if eos is not None and choice[i] == eos:
            assert nxt[i] == index.end_node
            reached.append(None)
        else:
            reached.append(p + (int(choice[i]),))
    # a token that is not a child of its row is refused right after the fill
    row = int(rng.integers(len(nodes)))
    allowed = set(np.flatnonzero(got[row]).tolist())
    for bad_token, match in (
        (next(t for t in range(index.num_columns) if t not in allowed), "not allowed"),
        (index.num_columns + 5, "outside"),
        (-3, "outside"),
    ):
        index.fill_bitmask(nodes, level, bitmask)
        bad = choice.copy()
        bad[row] = bad_token
        with pytest.raises(CatalogError, match=match):
            index.next_nodes(nodes, bad, level)
    return nxt, reached


@pytest.mark.parametrize("narrow", [None, 1, 2])
@pytest.mark.parametrize("variable", [False, True])
def test_slot_pattern_levels_match_oracle(variable, narrow, monkeypatch):
    """Levels served by slot patterns (V = 600) against the oracle.

    Batches of random rows take every table: the narrow first try (``narrow``
    forces its width; ``None`` keeps the chosen one), the full width, the
    table of rows whose children share a byte, and the general path for
    batches with END rows.
    """
    from tokensieve.retrieval import _numpy_step as nps

    if narrow is not None:
        monkeypatch.setattr(nps, "narrow_width", lambda histogram, rows: narrow)
    items, vocab = _pattern_catalog(variable, seed=11)
    index = StaticIndex.from_sequences([list(s) for s in items], vocab, dense_depth=2, dense_budget=0.0)
    pattern_levels = [2, 3] if variable else [2]
    for level in pattern_levels:
        assert level in index._tables.slot_patterns
        assert 2 <= index.level_width[level] <= nps.PATTERN_MAX_WIDTH
    node_of = walk_all(index, items)  # every node of a level in one batch: some rows share a byte
    oracle = children_oracle(items, index.eos_token)
    rng = np.random.default_rng(3)
    seen = {"narrow": 0, "wide": 0, "shared": 0, "end rows": 0}
    for _ in range(40):
        # rows walk from the root along random allowed tokens, through the public API
        rows = int(rng.integers(1, 40))
        prefixes = [()] * rows
        nodes = np.zeros(rows, dtype=np.int64)
        for level in range(max(pattern_levels) + 1):
            at_end = index.end_node is not None and bool(np.any(nodes == index.end_node))
            nxt, reached = _check_batch(index, oracle, level, nodes, prefixes, rng)
            if level in pattern_levels:
                index.fill_bitmask(nodes, level, np.zeros((rows, index.bitmask_words), np.int32))
                kind, slots = index._last.gathered[2:4]
                if at_end:  # the END node has no slot pattern: the general path serves the batch
                    assert kind != nps._PATTERN
                    seen["end rows"] += 1
                else:
                    assert kind == nps._PATTERN
                    plan = index._tables.plans[(rows, level)]
                    if narrow is not None:
                        assert plan.narrow.width == narrow
                    name = next(n for n in ("narrow", "wide", "shared") if getattr(plan, n) is slots)
                    seen[name] += 1
            nodes, prefixes = nxt, reached
    assert seen["narrow"] and seen["shared"], seen
    assert seen["wide"] or narrow is None, seen
    assert seen["end rows"] or not variable, seen
    # a non-contiguous bitmask gets the same rows
    level_nodes = np.arange(index.level_start[2], index.level_start[3])
    plain = index.fill_bitmask(level_nodes, 2, np.zeros((len(level_nodes), index.bitmask_words), np.int32))
    wide = np.full((len(level_nodes), 2 * index.bitmask_words), -1, dtype=np.int32)
    index.fill_bitmask(level_nodes, 2, wide[:, ::2])
    assert np.array_equal(wide[:, ::2], plain)
    # every node of the next level in one batch, the childless ones (items' ends) included
    prefix_of = {n: p for p, n in node_of.items()}
    level_nodes = np.arange(index.level_start[3], index.level_start[4])
    got = bitmask_to_bool(
        index.fill_bitmask(level_nodes, 3, np.zeros((len(level_nodes), index.bitmask_words), np.int32)),
        index.num_columns,
    )
    for row, node in enumerate(level_nodes.tolist()):
        expect = oracle[prefix_of[node]] if node in prefix_of else set()  # no prefix: an item's end
        assert set(np.flatnonzero(got[row]).tolist()) == expect


def test_narrow_width_trades_slots_for_retries():
    """Few wide nodes: a narrow first try; many rows make a wide node likely, so the full width."""
    from tokensieve.retrieval._numpy_step import narrow_width

    histogram = np.array([0, 100_000, 1_000, 10, 1])  # children 1..4
    assert narrow_width(histogram, 1) == 1
    assert 1 < narrow_width(histogram, 140) < 4
    assert narrow_width(histogram, 100_000) == 4
    assert narrow_width(np.array([0, 5, 5, 5]), 50) == 3
