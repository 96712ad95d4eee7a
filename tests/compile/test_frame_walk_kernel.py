"""The frame walks of the JIT kernel against the level-by-level numpy walk: the same masks.

The two walks differ in where they stop early (a subtree allowed whole is not
descended, and the numpy walk's plain-Python tail does not take those
shortcuts), so their escape nodes may differ below such subtrees; the masks
of matcher states, the union over the levels, must be the same, and both
must agree with the Earley oracle.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.cfg_grammars import GRAMMARS, check_random_walks
from support.tiny_vocab import EOS

from tokensieve import GrammarCompiler, Limits, TokenizerInfo
from tokensieve.compile.frame_walk import load_kernel
from tokensieve.compile.pushdown import CompiledPushdownGrammar
from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import EMPTY, RuleRef, alt, concat, literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from grammar_workloads import GRAMMAR_WORKLOADS  # noqa: E402


@pytest.fixture(autouse=True)
def _kernel_loaded() -> None:
    """Walks use the kernel once it is loaded (in a background thread); here, from the first one."""
    load_kernel()


def _pair(info: TokenizerInfo, compiled: CompiledPushdownGrammar) -> tuple[CompiledPushdownGrammar, ...]:
    """Fresh copies of ``compiled`` walked by the kernel and by the numpy walk."""
    kernel = CompiledPushdownGrammar(compiled.network, info, compiled.limits)
    numpy_walk = CompiledPushdownGrammar(compiled.network, info, compiled.limits)
    numpy_walk.walk_kernel = False
    return kernel, numpy_walk


def _allowed(mask: np.ndarray, size: int) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:size])


def _compare_walks(info: TokenizerInfo, compiled: CompiledPushdownGrammar, seed: int, walks: int, steps: int,
                   texts: tuple[bytes, ...] = ()) -> int:
    """Walk random allowed tokens (and ``texts``, greedily tokenised) with both walks; returns masks compared."""
    kernel, numpy_walk = _pair(info, compiled)
    vocab = info.decoded_vocab
    skip = set(info.stop_token_ids) | set(info.special_token_ids)
    rng = random.Random(seed)
    compared = 0
    plans: list[bytes | None] = [*texts, *([None] * walks)]
    for text in plans:
        a, b = kernel.start_state, numpy_walk.start_state
        pos = 0
        for _ in range(steps):
            got, want = kernel.token_mask(a), numpy_walk.token_mask(b)
            assert np.array_equal(got, want), (text, _allowed(got ^ want, info.vocab_size)[:5])
            compared += 1
            choices = [t for t in _allowed(got, info.vocab_size).tolist() if t not in skip and vocab[t]]
            if text is not None:
                choices = [t for t in choices if text.startswith(vocab[t], pos)]
                if not choices:
                    break
                token = max(choices, key=lambda t: len(vocab[t]))
                pos += len(vocab[token])
            elif not choices:
                break
            else:
                token = rng.choice(choices)
            a, b = kernel.step_bytes(a, vocab[token]), numpy_walk.step_bytes(b, vocab[token])
            assert a >= 0 and b >= 0
    return compared


@pytest.mark.slow
@pytest.mark.parametrize("workload", GRAMMAR_WORKLOADS, ids=lambda w: w.name)
def test_benchmark_workloads_same_masks_as_numpy_walk(real_info: TokenizerInfo, workload) -> None:
    compiled = GrammarCompiler(real_info, precompute=False).compile_grammar(workload.gbnf, syntax="gbnf")
    texts = tuple(ex.encode() for ex in workload.examples[:2])
    assert _compare_walks(real_info, compiled, seed=len(workload.name), walks=2, steps=12, texts=texts) >= 20


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_test_grammars_same_masks_as_numpy_walk_and_oracle(tiny_info, name: str) -> None:
    compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(GRAMMARS[name])
    assert compiled.walk_kernel
    check_random_walks(compiled, GRAMMARS[name], tiny_info, seed=7, walks=2, steps=6, eos=EOS)
    assert _compare_walks(tiny_info, compiled, seed=3, walks=3, steps=8) >= 3


@st.composite
def grammars(draw: st.DrawFn) -> Grammar:
    """Small grammars in plain BNF: each rule a few alternatives of up to three symbols (literals, rule
    references, the empty string), plus an alternative without references so that every rule ends."""
    names = ["root", "r1", "r2"][: draw(st.integers(1, 3))]
    symbol = st.one_of(
        st.sampled_from(["a", "b", "(", ")", "ab", "ba", ""]).map(lambda text: literal(text) if text else EMPTY),
        st.sampled_from(names).map(RuleRef),
    )
    alternative = st.lists(symbol, min_size=1, max_size=3).map(lambda xs: concat(*xs) if len(xs) > 1 else xs[0])
    rules = {}
    for i, name in enumerate(names):
        alternatives = draw(st.lists(alternative, min_size=1, max_size=3))
        rules[name] = alt(*alternatives, literal("ab"[i % 2]))
    return Grammar(rules)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(grammar=grammars(), seed=st.integers(0, 1000))
def test_random_grammars_same_masks_as_numpy_walk(tiny_info, grammar: Grammar, seed: int) -> None:
    assume(_compared_unless_refused(tiny_info, grammar, seed))


def _compared_unless_refused(info: TokenizerInfo, grammar: Grammar, seed: int) -> bool:
    """Compare the two walks on ``grammar``; False when it is refused by design (too ambiguous, or left
    recursion the rewrite does not take), or is regular (a plain automaton, no frame walks)."""
    try:
        compiled = GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar)
        if not isinstance(compiled, CompiledPushdownGrammar):
            return False
        _compare_walks(info, compiled, seed=seed, walks=2, steps=6)
    except LimitExceeded as exc:
        if exc.limit == "max_stacks":
            return False
        raise
    except GrammarError as exc:
        if "left recursion" in str(exc):
            return False
        raise
    return True


def test_calls_deeper_than_the_bound_inside_one_token_are_refused() -> None:
    # ``((((`` pushes a frame per byte: inside one token it goes past a bound of two frames
    vocab = [b"", b"(", b")", b"x", b"((((", b"))))"]
    info = TokenizerInfo(vocab, vocab_size=len(vocab), stop_token_ids=[0], special_token_ids=[0])
    grammar = Grammar({"root": alt(concat(literal("("), RuleRef("root"), literal(")")), literal("x"))})
    compiled = GrammarCompiler(info, cache_enabled=False, precompute=False).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    for walk_kernel in (True, False):
        small = CompiledPushdownGrammar(compiled.network, info, Limits(max_stack_depth=2))
        small.walk_kernel = walk_kernel
        with pytest.raises(LimitExceeded, match="max_stack_depth"):
            small.token_mask(small.start_state)
        roomy = CompiledPushdownGrammar(compiled.network, info, Limits(max_stack_depth=8))
        roomy.walk_kernel = walk_kernel
        assert set(_allowed(roomy.token_mask(roomy.start_state), len(vocab)).tolist()) == {1, 3, 4}


def test_walks_use_the_specialisation_the_load_compiled(tiny_info) -> None:
    """The load's warm-up call passes arguments of the types real walks pass: numba compiles (or loads
    from its cache) one machine-code version, at load time, not a second one on the first real walk."""
    from tokensieve.compile import _frame_kernel

    compiled = GrammarCompiler(tiny_info, cache_enabled=False, precompute=True).compile_grammar(GRAMMARS["json"])
    assert isinstance(compiled, CompiledPushdownGrammar) and compiled.walk_kernel
    assert len(_frame_kernel.walk_kernel.signatures) == 1


def test_strings_of_a_dot_pattern_same_masks_as_numpy_walk() -> None:
    """A rule network whose string body loops over a ``pattern``'s ``.`` (every character but the line
    separators): the kernel closes subtrees there that the numpy walk descends into; the same masks,
    on Tekken's multilingual tokens, along a text that goes through the string."""
    from support.real_vocabs import tekken_240911_json

    info = TokenizerInfo.from_file(tekken_240911_json())
    schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": "^.*$"}}}
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema(schema, strict=False)
    assert isinstance(compiled, CompiledPushdownGrammar)
    assert (compiled._view().utf8_kind == 2).any()  # the shortcut this test is for is there to take
    text = '{"note": "Zoë says 日本語 and \\u2028 is escaped", "other": [1, "x"]}'.encode()
    assert _compare_walks(info, compiled, seed=5, walks=2, steps=10, texts=(text,)) >= 20
