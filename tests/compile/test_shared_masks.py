"""States equivalent up to the longest token share one mask; the masks stay exact.

Oracle: the mask of every state computed on its own by a walk of the token trie
(``TokenMaskBuilder.compute`` of that one state), and, independently, the set
of tokens whose bytes keep the automaton alive from that state.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve import GrammarCompiler
from tokensieve.compile import compiled_grammar, shared_masks
from tokensieve.compile import long_tokens as long_tokens_module
from tokensieve.compile.char_chains import MAX_CHAIN
from tokensieve.compile.shared_masks import mask_representatives
from tokensieve.compile.token_masks import TokenMaskBuilder
from tokensieve.compile.vocab_cache import mask_builder_for
from tokensieve.vocab import TokenizerInfo

PATTERNS = [
    r'"[a-z ]{0,300}"(,[0-9]{1,3})?',
    r"[0-9]{3,400}",
    r"( {0,40}x){1,12}",
    r"(ab|a){0,200}c",
    f"( {{0,{MAX_CHAIN + 22}}}x){{1,4}}",
    f"([ -~]{{5,{MAX_CHAIN + 72}}}\\n){{1,3}}",
]


def _alive_tokens(dfa, state: int, vocab: list[bytes]) -> set[int]:
    out = set()
    for t, data in enumerate(vocab):
        if data and dfa.step(state, data) >= 0:
            out.add(t)
    return out


@pytest.fixture(scope="module")
def long_info() -> TokenizerInfo:
    """The tiny vocabulary plus tokens longer than the sharing depth (16 bytes)."""
    from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

    vocab = make_tiny_vocab(seed=3)
    vocab += (
        [b"a" * n for n in (17, 20, 33)] + [b" " * n for n in (18, 40)] + [b"1" * 25, b'abc"' + b"x" * 15]
    )
    vocab += [b"ab" * 12, b"0123456789" * 3, b'"' + b" " * 20 + b"x", b"x" * 16 + b'",1']
    # longer than any chain: their first MAX_CHAIN bytes hold, the rest runs from the chain's end
    vocab += [b"a" * (MAX_CHAIN + 12), b" " * (MAX_CHAIN + 7), b"b" + b"c" * 50 + b"\n", b"bcd" * 7]
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 5, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


def _check_every_state(info: TokenizerInfo, pattern: str) -> None:
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(pattern)
    assert compiled.num_states > 256
    reps = compiled._representatives()
    assert reps is not None and np.unique(reps).size < compiled.num_states  # sharing happens
    builder = mask_builder_for(info)
    vocab = info.decoded_vocab
    special = set(info.special_token_ids)
    order = list(range(compiled.num_states))
    np.random.default_rng(7).shuffle(order)  # representatives are not always met first
    for s in order:
        got = compiled.token_mask(s)
        np.testing.assert_array_equal(got, builder.compute(compiled.automaton, [s]).mask(0))
        bits = np.unpackbits(got.view(np.uint8), bitorder="little")[: info.vocab_size]
        allowed = {int(t) for t in np.flatnonzero(bits)} - set(info.stop_token_ids)
        assert allowed == _alive_tokens(compiled.dfa, s, vocab) - special, s


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("which", ["tiny", "long"])
def test_every_state_gets_its_own_exact_mask(tiny_info, long_info, pattern: str, which: str) -> None:
    _check_every_state(tiny_info if which == "tiny" else long_info, pattern)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("few", [0, 3])
def test_long_tokens_run_in_numpy_steps_then_one_by_one(long_info, monkeypatch, pattern: str, few: int) -> None:
    # the vocabulary has about a dozen long tokens: with fewer left to the plain-Python end, the
    # numpy steps over byte positions (from the state, and from the end of a chain) do the work
    monkeypatch.setattr(long_tokens_module, "_FEW_LONG", few)
    _check_every_state(long_info, pattern)


def test_precompute_then_lookups_agree(long_info) -> None:
    eager = GrammarCompiler(long_info, precompute=True, cache_enabled=False).compile_regex(PATTERNS[0])
    lazy = GrammarCompiler(long_info, precompute=False, cache_enabled=False).compile_regex(PATTERNS[0])
    for s in range(eager.num_states):
        np.testing.assert_array_equal(eager.token_mask(s), lazy.token_mask(s))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("few, many", [(16, 256), (0, 256), (0, 0)])
def test_long_token_survivors_are_those_alive_after_the_sharing_depth(
    long_info, monkeypatch, pattern: str, few: int, many: int
) -> None:
    # (16, 256): the dozen long tokens are run one by one to the depth, exactly; (0, 256): those
    # alive after the first bytes are kept (a superset); (0, 0): more than that many gives None
    monkeypatch.setattr(long_tokens_module, "_FEW_LONG", few)
    monkeypatch.setattr(long_tokens_module, "_MANY_SURVIVORS", many)
    compiled = GrammarCompiler(long_info, precompute=False, cache_enabled=False).compile_regex(pattern)
    long_tokens = mask_builder_for(long_info).long_tokens
    assert long_tokens is not None and long_tokens.ids.size
    reps = compiled._representatives()
    assert reps is not None
    table = compiled.dfa.transitions
    listed = 0
    for s in range(compiled.num_states):
        got = long_tokens.survivors(table, s)
        if got is None:
            continue
        listed += 1
        alive, alive_early = set(), set()
        for i, t in enumerate(long_tokens.ids.tolist()):
            data = long_info.decoded_vocab[t]
            if compiled.dfa.step(s, data[: long_tokens.depth]) >= 0:
                alive.add(i)
            if compiled.dfa.step(s, data[: long_tokens_module._SURVIVOR_BYTES]) >= 0:
                alive_early.add(i)
        assert got.tolist() == sorted(got.tolist()), s  # apply's runs need them sorted
        if few:
            assert set(got.tolist()) == alive, s
        else:
            assert alive <= set(got.tolist()) <= alive_early, s
            assert len(got) <= many, s
        # any state of the class may stand for it: its own run of the survivors gives its exact mask
        base = compiled.token_mask(int(reps[s]))
        with_survivors = long_tokens.apply(base, table, s, None, long_tokens.survivors(table, int(reps[s])))
        np.testing.assert_array_equal(with_survivors, long_tokens.apply(base, table, s))
    assert listed  # the short list applies somewhere


def test_long_tokens_of_looping_states_by_their_own_loop_bytes(long_info) -> None:
    # states of two families loop on different bytes; what one family's loop bytes let pass is
    # remembered per set of loop bytes and must not be reused for the other
    compiled = GrammarCompiler(long_info, precompute=False, cache_enabled=False).compile_regex(
        r"(a[b-z]*){0,40};(c[0-9]*){0,40}"
    )
    table = compiled.dfa.transitions
    builder = mask_builder_for(long_info)
    fresh = long_tokens_module.LongTokens(
        long_info.decoded_vocab, long_info.special_token_ids, builder.num_words, shared_masks.SHARE_DEPTH
    )
    looping = [s for s in range(compiled.num_states) if (table[s] == s).any()]
    loop_sets = {tuple(np.flatnonzero(table[s] == s)) for s in looping}
    assert len(loop_sets) >= 2
    zero = np.zeros(builder.num_words, dtype=np.int32)
    vocab = long_info.decoded_vocab
    for s in looping[::-1] + looping:
        got = fresh.apply(zero, table, s)
        bits = np.unpackbits(got.view(np.uint8), bitorder="little")
        want = {t for t in fresh.ids.tolist() if compiled.dfa.step(s, vocab[t]) >= 0}
        assert {int(t) for t in np.flatnonzero(bits)} == want, s


def _random_dfa(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    table = np.full((n, 256), -1, dtype=np.int32)
    for b in (97, 98, 99):
        table[:, b] = rng.integers(-1, n, size=n)
    return table, rng.random(n) < 0.4


def _future(table: np.ndarray, acc: np.ndarray, s: int, depth: int) -> tuple:
    """Brute force: acceptance and the set of alive strings over {a, b, c} up to ``depth``."""
    alive = []
    frontier = [(s, "")]
    for _ in range(depth):
        nxt = []
        for q, w in frontier:
            for b, ch in ((97, "a"), (98, "b"), (99, "c")):
                t = int(table[q, b])
                if t >= 0:
                    alive.append(w + ch)
                    nxt.append((t, w + ch))
        frontier = nxt
    return bool(acc[s]), frozenset(alive)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(0, 5))
def test_representatives_agree_with_brute_force(seed: int, n: int, depth: int) -> None:
    table, acc = _random_dfa(np.random.default_rng(seed), n)
    reps = mask_representatives(table, acc, depth)
    futures = [_future(table, acc, s, depth) for s in range(n)]
    for s in range(n):
        r = int(reps[s])
        assert r <= s and reps[r] == r
        assert futures[s] == futures[r]  # sound: same future up to depth
    # and complete: states with the same future share a representative
    for s in range(n):
        for q in range(s):
            if futures[s] == futures[q]:
                assert reps[s] == reps[q]


def _reference(table: np.ndarray, acc: np.ndarray, depth: int) -> np.ndarray:
    """Moore's refinement written plainly: a dictionary of successor-label tuples per round."""
    n = table.shape[0]
    columns = table[:, (table >= 0).any(axis=0)].tolist()  # a column that is always missing tells nothing
    label = [0] * n
    count = 1
    for _ in range(depth):
        seen: dict[tuple, int] = {}
        new = [
            seen.setdefault(tuple(label[t] if t >= 0 else -1 for t in columns[s]), len(seen))
            for s in range(n)
        ]
        if len(seen) == count:
            break
        label, count = new, len(seen)
    first: dict[tuple, int] = {}
    return np.asarray([first.setdefault((label[s], bool(acc[s])), s) for s in range(n)], dtype=np.int64)


def _chains(rng: np.random.Generator, num_chains: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Counted runs like a string of bounded length: each position steps to the next on a
    class of bytes; some positions may stop (a quote) or branch to a few shared states."""
    n = num_chains * length + 4
    table = np.full((n, 256), -1, dtype=np.int32)
    content = np.r_[32:34, 35:92, 93:127]
    for c in range(num_chains):
        base = 4 + c * length
        ends = rng.integers(0, length, size=rng.integers(0, 3))
        for i in range(length):
            s = base + i
            if i + 1 < length:
                table[s, content] = s + 1
            if i >= length // 3 or i in ends:
                table[s, 34] = rng.integers(0, 4)  # '"': one of the shared states
            if rng.random() < 0.05:
                table[s, 92] = rng.integers(base, base + length)  # '\\': anywhere in the run
    table[:4, 44] = rng.integers(4, n, size=4)
    table[:4, 125] = rng.integers(0, 4, size=4)
    return table, rng.random(n) < 0.1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth", [1, 2, 3, 16])
def test_counted_runs_agree_with_plain_refinement(seed: int, depth: int) -> None:
    rng = np.random.default_rng(seed)
    table, acc = _chains(rng, int(rng.integers(3, 40)), int(rng.integers(20, 120)))
    np.testing.assert_array_equal(mask_representatives(table, acc, depth), _reference(table, acc, depth))


def _with_copies(rng: np.random.Generator, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``table`` with about a third of its transitions led to extra states past its rows that stand
    for their targets (the states of a larger table that ``fold`` reads back), and that ``fold``."""
    n = table.shape[0]
    redirect = (table >= 0) & (rng.random(table.shape) < 0.3)
    fold = table[redirect].astype(np.int64)
    bigger = np.concatenate([table, np.full((fold.size, 256), 7, dtype=np.int32)])  # rows never read
    bigger[:n][redirect] = n + rng.permutation(fold.size)
    fold_of = np.empty(fold.size, dtype=np.int64)
    fold_of[bigger[:n][redirect] - n] = fold
    return bigger, fold_of


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", ["random", "chains"])
def test_folded_targets_read_as_the_states_they_stand_for(seed: int, shape: str) -> None:
    """The leading rows of a table whose other states fold back onto them: the classes of the folded table."""
    rng = np.random.default_rng(seed)
    if shape == "random":
        table, acc = _random_dfa(rng, int(rng.integers(20, 300)))
    else:  # enough states for the rounds on candidates only
        table, acc = _chains(rng, 40, 60)
    bigger, fold = _with_copies(rng, table)
    n = table.shape[0]
    for depth in (3, 16):
        relabel = np.concatenate([np.arange(n), fold, [-1]])
        got = mask_representatives(bigger[:n], acc, depth, relabel=relabel)
        np.testing.assert_array_equal(got, _reference(table, acc, depth))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", ["random", "chains"])
@pytest.mark.parametrize("weights", ["random", "by_first_row"])
def test_a_subset_of_rows_relabelled_reads_as_that_table(
    monkeypatch, seed: int, shape: str, weights: str
) -> None:
    """Rows picked from a larger table, every target read through a relabelling onto them (as the
    far layers of counted strings read as their base): the classes of the table written out."""
    rng = np.random.default_rng(seed)
    if shape == "random":
        table, acc = _random_dfa(rng, int(rng.integers(20, 300)))
    else:  # more rows than one block, and enough for the rounds on candidates only
        table, acc = _chains(rng, 40, 100)
    n = table.shape[0]
    rows = np.flatnonzero(rng.random(n) < 0.6)
    relabel = np.append(rng.integers(0, rows.size, size=n), -1).astype(np.int32)
    relabel[rows] = np.arange(rows.size, dtype=np.int32)
    written = relabel.take(table[rows])
    if weights == "by_first_row":  # columns alike on the first row kept only: the exact fallback

        def column_weights(count: int) -> np.ndarray:
            w = np.zeros(count, dtype=np.int32)
            w[0] = 1
            return w

        monkeypatch.setattr(shared_masks, "_column_weights", column_weights)
    for depth in (3, 16):
        got = mask_representatives(table, acc[rows], depth, rows=rows, relabel=relabel)
        np.testing.assert_array_equal(got, _reference(written, acc[rows], depth))


def test_schema_classes_from_the_unrolled_automaton_read_as_the_looping_one() -> None:
    """The places' copies fold back onto the places: the classes of the automaton before unrolling."""
    from tokensieve.automata.blank_runs import bound_blank_runs
    from tokensieve.automata.pushdown import compile_grammar_automaton
    from tokensieve.grammar.json_schema import schema_to_grammar

    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "maxLength": 30}, "b": {"type": "array", "items": {"type": "integer"}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    grammar, _ = schema_to_grammar(schema, blank_runs="automaton")
    looping = compile_grammar_automaton(grammar)
    bounded = bound_blank_runs(looping, 32)
    assert bounded is not None and bounded.blank_chains is not None
    first = bounded.blank_chains.first
    assert first == looping.num_states and bounded.num_states > first
    as_places = np.append(bounded.blank_chains.places_of(np.arange(bounded.num_states)), -1)
    got = mask_representatives(bounded.transitions[:first], bounded.accepting[:first], 16, relabel=as_places)
    np.testing.assert_array_equal(got, mask_representatives(looping.transitions, looping.accepting, 16))
    np.testing.assert_array_equal(got, _reference(looping.transitions, looping.accepting, 16))


@pytest.mark.parametrize("n", [600, 70_000])
def test_many_classes_agree_with_plain_refinement(n: int) -> None:
    """More classes than fit a byte (and than 16 bits): the labels are stored wider."""
    rng = np.random.default_rng(n)
    table = np.full((n, 256), -1, dtype=np.int32)
    for b in (97, 98, 99):
        table[:, b] = np.where(rng.random(n) < 0.3, -1, rng.integers(0, n, size=n))
    table[:, 100] = table[:, 97]  # bytes that are never told apart
    acc = rng.random(n) < 0.4
    depth = 16 if n < 1000 else 12
    reps = mask_representatives(table, acc, depth)
    assert np.unique(reps).size > (255 if n < 1000 else 65_535)
    np.testing.assert_array_equal(reps, _reference(table, acc, depth))


@pytest.mark.parametrize("columns", ["alike", "by_first_row"])
def test_hash_collisions_are_split_exactly(monkeypatch, columns: str) -> None:
    """Every row hashed alike, and every column (or columns by their first entry only):
    the exact fallbacks give the same classes."""
    def column_weights(rows: int) -> np.ndarray:
        w = np.zeros(rows, dtype=np.int32)
        if columns == "by_first_row":
            w[0] = 1  # equal first entries, far apart, unequal further down
        return w

    cases = [_random_dfa(np.random.default_rng(s), 30 + s) for s in range(6)]
    cases.append(_chains(np.random.default_rng(9), 6, 40))
    cases.append(_chains(np.random.default_rng(10), 30, 60))  # large enough for incremental rounds
    odd = np.full((4, 256), -1, dtype=np.int32)
    odd[0, [97, 98, 99]] = [1, 2, 1]  # bytes 97 and 99 agree here, not two columns apart
    odd[1, [97, 99]] = [2, 0]  # but not here: 1 and 3 differ on byte 99 only
    odd[3, 97] = 2
    cases.append((odd, np.array([False, False, True, False])))
    want = [mask_representatives(t, a, 6) for t, a in cases]
    monkeypatch.setattr(shared_masks, "_weights", lambda width: np.zeros(width, dtype=np.int64))
    monkeypatch.setattr(shared_masks, "_column_weights", column_weights)
    for (table, acc), expected in zip(cases, want, strict=True):
        got = mask_representatives(table, acc, 6)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, _reference(table, acc, 6))


def test_a_relabelled_state_without_predecessors_ends_the_rounds() -> None:
    """States 0, 1 and 2 have no predecessors; 0 splits off from 1 and 2 in the third round,
    and no state is left to look at (among enough states for rounds on candidates only)."""
    n = 1500
    table = np.full((n, 256), -1, dtype=np.int32)
    table[[0, 1, 2, 3, 4], 97] = [3, 4, 4, 5, 6]
    table[5, 98] = 7
    acc = np.zeros(n, dtype=bool)
    reps = mask_representatives(table, acc, 16)
    np.testing.assert_array_equal(reps, _reference(table, acc, 16))
    assert reps[0] == 0 and reps[1] == reps[2] == 1


def test_auto_precompute_walks_one_state_per_class_within_its_budget(long_info) -> None:
    pattern = PATTERNS[0]  # a string of up to 300 characters: 307 states, above the threshold below
    eager = GrammarCompiler(long_info, precompute=True, cache_enabled=False).compile_regex(pattern)
    timed = GrammarCompiler(
        long_info,
        cache_enabled=False,
        auto_precompute_max_states=100,
        auto_precompute_budget_s=60,
        precompute_in_background=False,
    ).compile_regex(pattern)
    none = GrammarCompiler(
        long_info, cache_enabled=False, auto_precompute_max_states=100, auto_precompute_budget_s=0
    ).compile_regex(pattern)
    assert timed.num_states > 100
    reps = timed._representatives()
    assert reps is not None
    classes = np.unique(reps)
    assert timed._known[classes].all()  # every class's mask, at compile time
    assert not none._known[classes[classes != none.start_state]].any()  # only the start state's
    assert not none.precompute(budget_s=0.0)  # out of time before the first walk
    for s in range(eager.num_states):
        np.testing.assert_array_equal(timed.token_mask(s), eager.token_mask(s))
        np.testing.assert_array_equal(none.token_mask(s), eager.token_mask(s))


#: twenty loops on distinct 21-byte ranges: twenty permissive states, walked a few at a time
_LOOPS = "".join(f"[\\x{0x41 + i:02x}-\\x{0x55 + i:02x}]+{i % 10}" for i in range(20))


def _budgeted(info: TokenizerInfo, work: int | None, seconds: float = 60.0):
    compiler = GrammarCompiler(
        info,
        cache_enabled=False,
        auto_precompute_max_states=10,
        auto_precompute_work=work,
        auto_precompute_budget_s=seconds,
        precompute_in_background=False,
    )
    return compiler.compile_regex(_LOOPS)


def test_a_work_budget_computes_the_same_masks_ahead_however_slow_the_walks(long_info, monkeypatch) -> None:
    # the numpy walk's work (the kernel's, when it is loaded, walks permissive states for less)
    monkeypatch.setattr(compiled_grammar, "dfa_walk", lambda *args: None)
    eager = GrammarCompiler(long_info, precompute=True, cache_enabled=False).compile_regex(_LOOPS)
    quick = _budgeted(long_info, 5000)
    slowed = TokenMaskBuilder.compute

    def slow_compute(self, *args, **kwargs):
        time.sleep(0.05)
        return slowed(self, *args, **kwargs)

    monkeypatch.setattr(TokenMaskBuilder, "compute", slow_compute)
    slow = _budgeted(long_info, 5000)
    timed = _budgeted(long_info, None, seconds=0.01)  # a time budget: fewer states when walks are slow
    monkeypatch.undo()
    view = quick.automaton
    assert quick.num_states == eager.num_states and view.permissive.sum() >= 20
    np.testing.assert_array_equal(quick._known, slow._known)
    assert quick._known[~view.permissive].all()  # restrictive states come first
    assert 0 < quick._known[view.permissive].sum() < view.permissive.sum()  # the budget stopped the walks
    assert timed._known.sum() < quick._known.sum()
    for s in range(eager.num_states):
        np.testing.assert_array_equal(slow.token_mask(s), eager.token_mask(s))


def test_work_is_counted_per_thread(long_info) -> None:
    builder = mask_builder_for(long_info)
    compiled = GrammarCompiler(long_info, precompute=False, cache_enabled=False).compile_regex(_LOOPS)
    before = builder.work_done()
    elsewhere: list[int] = []

    def walk_elsewhere() -> None:
        start = builder.work_done()
        compiled.precompute()
        elsewhere.append(builder.work_done() - start)

    thread = threading.Thread(target=walk_elsewhere)
    thread.start()
    thread.join()
    assert elsewhere[0] >= compiled.num_states  # at least one pair per state walked
    assert builder.work_done() == before
    compiled.token_mask(compiled.num_states - 1)  # cached: no walk
    assert builder.work_done() == before


def test_a_negative_precompute_budget_is_refused(long_info) -> None:
    with pytest.raises(ValueError, match="auto_precompute_budget_s"):
        GrammarCompiler(long_info, auto_precompute_budget_s=-1)
    with pytest.raises(ValueError, match="auto_precompute_work"):
        GrammarCompiler(long_info, auto_precompute_work=-1)
