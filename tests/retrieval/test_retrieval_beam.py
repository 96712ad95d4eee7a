"""Constrained beam search: validity, distinctness, short catalogs, exactness.

The model is a deterministic function of each row's prefix, so every item has
a well-defined score (the sum of its tokens' log-probabilities). With at least
as many beams as unique items the search keeps every hypothesis, so its result
must be every (allowed) item, ranked exactly as a brute-force scoring ranks
them.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve.retrieval import CatalogError, StaticIndex, constrained_beam_search


def prefix_logits(prefix: tuple[int, ...], query: int, columns: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(repr((query, prefix)).encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(columns) * 2.0


def make_model(index: StaticIndex, beam: int, calls: list | None = None):
    columns = index.num_columns + 2  # models may have more columns than the index

    def step(prefix_tokens: np.ndarray, step: int) -> np.ndarray:
        assert prefix_tokens.shape[1] == step
        if calls is not None:
            calls.append(prefix_tokens.copy())
        rows = prefix_tokens.shape[0]
        out = np.empty((rows, columns))
        for r in range(rows):
            prefix = tuple(t for t in prefix_tokens[r].tolist() if t != index.eos_token)
            out[r] = prefix_logits(prefix, r // beam, columns)
        return out

    return step


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def brute_force(
    index: StaticIndex, items, query: int, normalize: bool
) -> list[tuple[tuple[int, ...], float]]:
    columns = index.num_columns + 2
    scored = []
    for s in set(items):
        ext = s + ((index.eos_token,) if index.eos_token is not None else ())
        total = sum(log_softmax(prefix_logits(ext[:k], query, columns))[ext[k]] for k in range(len(ext)))
        scored.append((s, total / len(s) if normalize else total))
    return sorted(scored, key=lambda x: -x[1])


@st.composite
def catalogs(draw):
    vocab = draw(st.sampled_from([2, 3, 5, 33]))
    variable = draw(st.booleans())
    max_len = draw(st.integers(1, 4))
    n = draw(st.integers(1, 12))
    token = st.integers(0, vocab - 1)
    items = [
        tuple(draw(st.lists(token, min_size=1 if variable else max_len, max_size=max_len))) for _ in range(n)
    ]
    if variable:
        items += [s[:-1] for s in items[:2] if len(s) > 1]
    return items, vocab, (draw(st.integers(0, 3)), draw(st.sampled_from([0.0, 100.0])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.booleans(), st.integers(1, 6))
def test_results_are_distinct_catalog_items(cat, normalize, beam):
    items, vocab, dense = cat
    index = StaticIndex.from_sequences(
        [list(s) for s in items], vocab, dense_depth=dense[0], dense_budget=dense[1]
    )
    batch = 3
    res = constrained_beam_search(
        make_model(index, beam), index, batch_size=batch, beam_width=beam, length_normalize=normalize
    )
    members = set(items)
    assert len(res.sequences) == batch
    for q in range(batch):
        seqs = res.sequences[q]
        assert len(seqs) == len(set(seqs)) == len(res.scores[q]) == len(res.log_probs[q])
        assert all(s in members for s in seqs)
        assert len(seqs) <= beam
        assert np.all(np.diff(res.scores[q]) <= 1e-12)
        assert np.all(np.isfinite(res.scores[q]))
    # once pruning starts every step has at least beam_width candidates, so the
    # search returns min(beam_width, number of items) results
    assert res.num_results.tolist() == [min(beam, len(members))] * batch


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.booleans())
def test_exhaustive_search_equals_brute_force(cat, normalize):
    items, vocab, dense = cat
    index = StaticIndex.from_sequences(
        [list(s) for s in items], vocab, dense_depth=dense[0], dense_budget=dense[1]
    )
    beam = len(set(items)) + 1
    res = constrained_beam_search(
        make_model(index, beam), index, batch_size=2, beam_width=beam, length_normalize=normalize
    )
    for q in range(2):
        expect = brute_force(index, items, q, normalize)
        assert sorted(res.sequences[q]) == sorted(s for s, _ in expect)
        got = dict(zip(res.sequences[q], res.scores[q].tolist(), strict=True))
        for s, score in expect:
            assert got[s] == pytest.approx(score, rel=1e-9, abs=1e-9)
        assert np.all(np.diff(res.scores[q]) <= 1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.data())
def test_filtered_search_returns_only_allowed_items(cat, data):
    items, vocab, dense = cat
    index = StaticIndex.from_sequences(
        [list(s) for s in items], vocab, dense_depth=dense[0], dense_budget=dense[1]
    )
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=len(items), max_size=len(items))))
    ok = {s for s, a in zip(items, allowed, strict=True) if a}
    beam = len(set(items)) + 1
    res = constrained_beam_search(
        make_model(index, beam), index, batch_size=2, beam_width=beam, item_filter=index.make_filter(allowed)
    )
    for q in range(2):
        assert sorted(res.sequences[q]) == sorted(ok)


def test_first_step_has_no_duplicate_beams_and_fewer_results():
    index = StaticIndex.from_sequences([[1, 2], [1, 3], [4, 5]], 8)
    calls: list = []
    res = constrained_beam_search(make_model(index, 6, calls), index, batch_size=2, beam_width=6)
    for q in range(2):
        assert sorted(res.sequences[q]) == [(1, 2), (1, 3), (4, 5)]
    # step 1 saw two live beams per query, (1,) and (4,), once each
    live = calls[1][:6, 0].tolist()
    assert sorted(live[:2]) == [1, 4]


def test_single_item_catalog_with_many_beams():
    index = StaticIndex.from_sequences([[3, 1, 4]], 5)
    res = constrained_beam_search(make_model(index, 8), index, batch_size=4, beam_width=8)
    assert res.sequences == [[(3, 1, 4)]] * 4


def test_empty_filter_gives_no_results():
    index = StaticIndex.from_sequences([[1, 2], [3]], 5)
    res = constrained_beam_search(
        make_model(index, 3), index, batch_size=2, beam_width=3, item_filter=np.zeros(2, dtype=bool)
    )
    assert res.sequences == [[], []]
    assert [len(s) for s in res.scores] == [0, 0]


def test_variable_lengths_end_token_and_finished_rows():
    items = [(1,), (1, 2), (1, 2, 3), (2,)]
    index = StaticIndex.from_sequences([list(s) for s in items], 4)
    assert index.eos_token == 4 and index.num_columns == 5
    calls: list = []
    res = constrained_beam_search(make_model(index, 4, calls), index, batch_size=1, beam_width=4)
    assert sorted(res.sequences[0]) == sorted(items)
    # rows that finished carry the end token in later prefixes
    assert (calls[-1] == index.eos_token).any()


def test_nan_and_inf_logits_never_crash():
    index = StaticIndex.from_sequences([[1, 2], [1, 3], [2, 2]], 4)

    def bad(prefix, step):
        out = np.full((prefix.shape[0], index.num_columns), np.nan)
        out[::2] = np.inf
        return out

    res = constrained_beam_search(bad, index, batch_size=2, beam_width=3)
    members = {(1, 2), (1, 3), (2, 2)}
    for seqs in res.sequences:
        assert set(seqs) <= members


def test_bad_arguments():
    index = StaticIndex.from_sequences([[1, 2]], 4)
    model = make_model(index, 2)
    for kwargs in (
        {"batch_size": 0, "beam_width": 2},
        {"batch_size": 1, "beam_width": 0},
        {"batch_size": 1.5, "beam_width": 2},
    ):
        with pytest.raises(CatalogError):
            constrained_beam_search(model, index, **kwargs)
    with pytest.raises(CatalogError, match="backend"):
        constrained_beam_search(model, index, batch_size=1, beam_width=2, backend="jax")
    with pytest.raises(CatalogError, match="shape"):
        constrained_beam_search(lambda p, s: np.zeros((2, 3)), index, batch_size=1, beam_width=2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.booleans())
def test_logits_without_the_end_column_make_ending_free(cat, backend_torch):
    """A model with ``vocab_size`` columns: the end token costs nothing, items score their own tokens."""
    items, vocab, dense = cat
    items = items + [items[0] + (0,)]  # lengths vary, so the end token is the extra column
    index = StaticIndex.from_sequences(
        [list(s) for s in items], vocab, dense_depth=dense[0], dense_budget=dense[1]
    )
    assert index.eos_token == vocab and index.num_columns == vocab + 1
    beam = len(set(items)) + 1

    def step(prefix_tokens, step):
        rows = prefix_tokens.shape[0]
        out = np.empty((rows, vocab))
        for r in range(rows):
            prefix = tuple(t for t in np.asarray(prefix_tokens[r]).tolist() if t != vocab)
            out[r] = prefix_logits(prefix, r // beam, vocab)
        return out

    kwargs = {"backend": "torch"} if backend_torch else {}
    if backend_torch:
        pytest.importorskip("torch")
    res = constrained_beam_search(step, index, batch_size=2, beam_width=beam, **kwargs)
    for q in range(2):
        expect = {
            s: sum(log_softmax(prefix_logits(s[:k], q, vocab))[s[k]] for k in range(len(s)))
            for s in set(items)
        }
        assert sorted(res.sequences[q]) == sorted(expect)
        for s, score in zip(res.sequences[q], res.scores[q].tolist(), strict=True):
            assert score == pytest.approx(expect[s], rel=1e-9, abs=1e-9)
