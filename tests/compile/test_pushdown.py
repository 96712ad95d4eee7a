"""Recursive grammars: masks against an Earley recogniser, runtime features, limits."""

from __future__ import annotations

import pickle
import random
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.cfg_grammars import GRAMMARS, allowed_tokens, check_random_walks
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarError, GrammarMatcher, LimitExceeded, Limits, TokenizerInfo
from tokensieve.compile import shared_walks, stack_walks
from tokensieve.compile.pushdown import CompiledPushdownGrammar, walk_classes
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import EMPTY, RuleRef, alt, concat, literal, optional, repeat, star


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@pytest.mark.parametrize("walks", ["auto", "sync", "lazy", "eager"])
def test_masks_equal_earley_oracle(tiny_info, name: str, walks: str) -> None:
    # auto: the frames' walks within the default budget in the background thread, while the walks
    # below decode; sync: the same walks before compile returns; lazy: none (each on the first mask
    # that needs it, with its neighbours'); eager: every one, in batches of several
    options = {
        "auto": {},
        "sync": {"precompute_in_background": False},
        "lazy": {"auto_precompute_budget_s": 0},
        "eager": {"precompute": True},
    }[walks]
    grammar = GRAMMARS[name]
    compiled = GrammarCompiler(tiny_info, cache_enabled=False, **options).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    if walks == "eager":  # every class's walk is known before the first step
        reps = {q for classes in compiled._walk_reps.values() for q in classes}
        assert reps and all((q, 0, b"") in compiled._walks for q in reps)
    checked = check_random_walks(
        compiled, grammar, tiny_info, seed=zlib.crc32(name.encode()), walks=4, steps=10, eos=EOS
    )
    assert checked >= 4


@pytest.mark.parametrize("bounds", [(6, 10_000), (10_000, 8)], ids=["walks", "levels"])
@pytest.mark.parametrize("name", ["parens", "json", "mutual"])
def test_walk_memo_stays_bounded_and_masks_stay_exact(tiny_info, monkeypatch, name: str, bounds) -> None:
    """With a tiny memo bound, deep stacks keep forgetting walks and levels: masks still equal the oracle's,
    the memo stays within its bound (plus one neighbourhood's walks), and its bytes are counted."""
    max_walks, max_levels = bounds
    monkeypatch.setattr(stack_walks, "_MAX_MEMO_WALKS", max_walks)
    monkeypatch.setattr(stack_walks, "_MAX_MEMO_LEVELS", max_levels)
    grammar = GRAMMARS[name]
    compiled = GrammarCompiler(tiny_info, cache_enabled=False, auto_precompute_budget_s=0).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    checked = check_random_walks(compiled, grammar, tiny_info, seed=zlib.crc32(name.encode()), walks=4, steps=14, eos=EOS)
    assert checked >= 4
    slack = stack_walks._PREFETCH_STATES  # one neighbourhood walk stores this many at once
    assert len(compiled._levels) <= max_levels + slack and len(compiled._walks) <= max_walks + slack
    distinct = {id(a): a for _, mask, nodes in compiled._walks.values() for a in (mask, nodes) if a is not None}
    distinct.update((id(a), a) for mask, nodes in compiled._levels.values() for a in (mask, nodes) if a is not None)
    held = sum(a.nbytes for a in distinct.values())
    assert compiled.memory_size_bytes >= held + compiled._mask_bytes
    before = compiled.memory_size_bytes
    compiled._forget_walks()
    assert compiled.memory_size_bytes <= before - sum(
        a.nbytes for a in distinct.values() if not any(a is m for m in compiled._masks.values())
    )


def _atoms() -> st.SearchStrategy:
    return st.sampled_from([literal("a"), literal("b"), literal("("), literal(")"), literal("ab"), EMPTY])


def _body(names: list[str]) -> st.SearchStrategy:
    leaf = st.one_of(_atoms(), st.sampled_from([RuleRef(n) for n in names]))
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: concat(*xs)),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: alt(*xs)),
            inner.map(optional),
            inner.map(star),
            inner.map(lambda x: repeat(x, 1, 2)),
        ),
        max_leaves=6,
    )


@st.composite
def grammars(draw: st.DrawFn) -> Grammar:
    names = ["root", "r1", "r2"][: draw(st.integers(1, 3))]
    rules = {}
    for i, n in enumerate(names):
        body = draw(_body(names))
        # every rule derives some string without recursion, so the oracle's "viable" is exact
        rules[n] = alt(body, literal("ab"[i % 2] + ")"))
    return Grammar(rules)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(grammar=grammars(), seed=st.integers(0, 1000))
def test_random_grammars_equal_earley_oracle(tiny_info, grammar: Grammar, seed: int) -> None:
    _walk_random_grammar(tiny_info, grammar, seed)


def _walk_random_grammar(tiny_info, grammar: Grammar, seed: int) -> None:
    """Compile ``grammar`` and compare random walks with the Earley oracle, skipping what is refused by design."""
    try:
        compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(grammar)
        check_random_walks(compiled, grammar, tiny_info, seed=seed, walks=2, steps=6, eos=EOS)
    except LimitExceeded as exc:
        # a grammar so ambiguous that one position has more than max_stacks parses is
        # refused by design (bounded work per token); nothing to compare there
        assume(exc.limit != "max_stacks")
        raise
    except GrammarError as exc:
        assume("left recursion" not in str(exc))
        raise


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_shared_walks_equal_earley_oracle(tiny_info, name: str, monkeypatch) -> None:
    # every rule looks for states with the same walks, however small
    monkeypatch.setattr(shared_walks, "_SHARE_MIN_STATES", 0)
    grammar = GRAMMARS[name]
    compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(grammar)
    check_random_walks(compiled, grammar, tiny_info, seed=zlib.crc32(name.encode()) + 1, walks=2, steps=8, eos=EOS)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(grammar=grammars(), seed=st.integers(0, 1000))
def test_shared_walks_in_random_grammars_equal_earley_oracle(tiny_info, grammar: Grammar, seed: int) -> None:
    saved = shared_walks._SHARE_MIN_STATES
    shared_walks._SHARE_MIN_STATES = 0
    try:
        _walk_random_grammar(tiny_info, grammar, seed)
    finally:
        shared_walks._SHARE_MIN_STATES = saved


def test_long_bounded_runs_in_a_recursive_rule_share_walks(tiny_info) -> None:
    # "(" then up to 60 letters, an optional nested group, ")": far from the end of the
    # run, positions read the same next bytes, so their walks are shared
    grammar = Grammar({"root": concat(literal("("), repeat(literal("a"), 0, 60), optional(RuleRef("root")), literal(")"))})
    compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    net = compiled.network
    reps = walk_classes(
        net.transitions[0], net.accepting[0], net.calls[0], [False], int(max(len(t) for t in tiny_info.decoded_vocab))
    )
    assert len(set(reps.tolist())) < net.transitions[0].shape[0] // 2
    check_random_walks(compiled, grammar, tiny_info, seed=7, walks=4, steps=25, eos=EOS)


def test_regular_grammar_compiles_to_a_plain_automaton(tiny_info) -> None:
    g = Grammar({"root": concat(RuleRef("a"), RuleRef("a")), "a": alt(literal("x"), literal("yz"))})
    compiled = GrammarCompiler(tiny_info).compile_grammar(g)
    assert not isinstance(compiled, CompiledPushdownGrammar)
    m = GrammarMatcher(compiled)
    assert m.accept_string("xyz") and m.is_completed()


def test_rollback_restores_masks(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_grammar(GRAMMARS["parens"])
    m = GrammarMatcher(compiled)
    before = allowed_tokens(m, tiny_info.vocab_size)
    assert m.accept_string("((")
    assert m.accept_string("()")
    mid = allowed_tokens(m, tiny_info.vocab_size)
    assert not m.is_completed()
    assert not m.accept_string(")))")  # would close more than is open
    m.rollback(1)
    m.rollback(1)
    assert allowed_tokens(m, tiny_info.vocab_size) == before
    assert m.accept_string("((") and m.accept_string("()")
    assert allowed_tokens(m, tiny_info.vocab_size) == mid
    assert m.accept_string("))") and m.is_completed()


def test_jump_forward_string(tiny_info) -> None:
    g = Grammar({"root": alt(concat(literal("begin("), RuleRef("root"), literal(")end")), literal("x"))})
    m = GrammarMatcher(GrammarCompiler(tiny_info).compile_grammar(g))
    assert m.accept_string("begin(x")
    assert m.find_jump_forward_string() == ")end"


def test_pickle_round_trip(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_grammar(GRAMMARS["arith_left_recursive"])
    clone = pickle.loads(pickle.dumps(compiled))
    a, b = GrammarMatcher(compiled), GrammarMatcher(clone)
    for text in ["(1+2", "*3)", "-4"]:
        assert a.accept_string(text) and b.accept_string(text)
        assert allowed_tokens(a, tiny_info.vocab_size) == allowed_tokens(b, tiny_info.vocab_size)


def test_grammar_without_finite_sentence_is_reported(tiny_info) -> None:
    g = Grammar({"root": concat(literal("("), RuleRef("root"), literal(")"))})
    with pytest.raises(GrammarError, match="no finite string"):
        GrammarCompiler(tiny_info).compile_grammar(g)


def test_deep_nesting_hits_the_stack_limit(tiny_info) -> None:
    limits = Limits(max_stack_depth=50)
    compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(GRAMMARS["parens"])
    m = GrammarMatcher(compiled)
    with pytest.raises(LimitExceeded, match="max_stack_depth"):
        for _ in range(60):
            m.accept_string("(")


def test_exploding_ambiguity_hits_the_stack_count_limit(tiny_info) -> None:
    # root ::= a* with a ::= "x" | "xx" | "xxx" ... nested: many parses of a run of x
    g = Grammar(
        {
            "root": star(RuleRef("a")),
            "a": alt(
                literal("x"),
                concat(literal("x"), RuleRef("a"), optional(literal("y"))),
                concat(RuleRef("b"), literal("q")),
            ),
            "b": alt(literal("x"), concat(literal("x"), RuleRef("b"))),
        }
    )
    limits = Limits(max_stacks=16)
    with pytest.raises(LimitExceeded, match="max_stacks"):
        compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(g)
        m = GrammarMatcher(compiled)
        for _ in range(40):
            m.accept_string("x")


def test_fork_is_independent(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_grammar(GRAMMARS["parens"])
    m = GrammarMatcher(compiled)
    assert m.accept_string("((")
    f = m.fork()
    assert f.accept_string("))") and f.is_completed()
    assert not m.is_completed() and m.accept_string(")")
    assert allowed_tokens(m, tiny_info.vocab_size) != allowed_tokens(f, tiny_info.vocab_size)


def test_forced_tokens_follow_the_only_continuation(tiny_info) -> None:
    vocab = tiny_info.decoded_vocab
    g = Grammar({"root": alt(concat(literal("é"), RuleRef("root")), literal("€"))})
    m = GrammarMatcher(GrammarCompiler(tiny_info).compile_grammar(g))
    # several tokens can start "é", so nothing is forced at the start
    assert m.forced_tokens() == []
    # after "€" the only continuation is a stop token
    assert m.accept_string("€")
    assert m.forced_tokens() == [EOS]
    # a state where one token is the only way on: inside "€" after its first byte
    m2 = GrammarMatcher(GrammarCompiler(tiny_info).compile_grammar(g))
    first = vocab.index("€".encode()[:1])
    assert m2.accept_token(first)
    forced = m2.forced_tokens()
    assert forced and b"".join(vocab[t] for t in forced if t != EOS) == "€".encode()[1:]


def test_batch_matcher_fills_rows_like_single_matchers(tiny_info) -> None:
    import numpy as np

    from tokensieve import BatchGrammarMatcher, allocate_token_bitmask

    compiler = GrammarCompiler(tiny_info)
    ms = [GrammarMatcher(compiler.compile_grammar(GRAMMARS[n])) for n in ("parens", "json", "mutual")]
    ms[0].accept_string("(()")
    ms[1].accept_string('{"a": [1')
    batch = allocate_token_bitmask(5, tiny_info.vocab_size)
    with BatchGrammarMatcher(max_threads=2) as bm:
        bm.fill_next_token_bitmask(ms, batch, indices=[4, 0, 2])
    for m, row in zip(ms, [4, 0, 2], strict=True):
        one = allocate_token_bitmask(1, tiny_info.vocab_size)
        m.fill_next_token_bitmask(one)
        assert np.array_equal(batch[row], one[0])
    assert (batch[1] == -1).all() and (batch[3] == -1).all()  # rows not named are left as allocated


def _chain_vocab_info():
    """Single bytes, blank runs of every length up to 40, plain runs, and tokens that cross a call or a return."""
    vocab = make_tiny_vocab(seed=3, extra=120)
    for n in range(2, 41):
        vocab += [b" " * n, b" " * (n - 1) + b"\n", b" " * n + b"[", b" " * n + b"[a"]
    for n in range(2, 30, 3):
        vocab += [b"a" * n, b"ab" * n, b"a" * n + b'"', b"a" * n + b'"]', b'"' + b"b" * n]
    vocab += [b"[[", b"]]", b"],", b'",', b'"]', b'"],', b", [", b",[", b"[ ", b'["', b'["a', b"]] ", b", ", b" ]"]
    return TokenizerInfo(vocab, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])


def test_calls_inside_blank_runs_and_counted_strings_equal_earley_oracle() -> None:
    # value ::= "[" ws (value (ws "," ws value)*)? ws "]" | '"' [ab]{0,24} '"' with ws = " "{0,32}:
    # every blank of a run may be followed by a call, strings are counted chains, and
    # many tokens cross a call ("[a", ' [') or a return ('a"]'), so the frame walks meet
    # calls and returns inside chains and runs, with and without escape nodes
    info = _chain_vocab_info()
    ws = repeat(literal(" "), 0, 32)
    string = concat(literal('"'), repeat(alt(literal("a"), literal("b")), 0, 24), literal('"'))
    items = optional(concat(RuleRef("value"), star(concat(ws, literal(","), ws, RuleRef("value")))))
    grammar = Grammar(
        {
            "root": RuleRef("value"),
            "value": alt(concat(literal("["), ws, items, ws, literal("]")), string),
        }
    )
    compiled = GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    checked = check_random_walks(compiled, grammar, info, seed=11, walks=12, steps=14, eos=EOS, fast=True)
    assert checked >= 40


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_stepping_byte_by_byte_reaches_the_stacks_the_filled_rows_do(tiny_info, name: str) -> None:
    """``step_bytes`` finds a state's successors byte by byte unless its row is filled; along random
    walks, one grammar stepped that way and one whose every row is filled first reach the same parse
    stacks and masks, and refuse the same bytes."""
    compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(GRAMMARS[name])
    assert isinstance(compiled, CompiledPushdownGrammar)
    lazy = CompiledPushdownGrammar(compiled.network, tiny_info, compiled.limits)
    filled = CompiledPushdownGrammar(compiled.network, tiny_info, compiled.limits)
    vocab = tiny_info.decoded_vocab
    rng = random.Random(11)
    compared = 0
    for _ in range(4):
        a, b = lazy.start_state, filled.start_state
        for _ in range(12):
            filled.row(b)  # the row of 256 filled: step_bytes then reads it
            assert lazy.stacks(a) == filled.stacks(b)
            assert (lazy.token_mask(a) == filled.token_mask(b)).all()
            compared += 1
            for byte in rng.sample(range(256), 8):  # bytes refused and allowed alike
                assert (lazy.step_bytes(a, bytes([byte])) < 0) == (filled.step_bytes(b, bytes([byte])) < 0)
            bits = np.unpackbits(lazy.token_mask(a).view(np.uint8), bitorder="little")[: len(vocab)]
            ids = [t for t in np.flatnonzero(bits).tolist() if vocab[t] and t not in (EOS, SPECIAL)]
            if not ids:
                break
            token = vocab[rng.choice(ids)]
            a, b = lazy.step_bytes(a, token), filled.step_bytes(b, token)
            assert a >= 0 and b >= 0
    assert compared >= 8
