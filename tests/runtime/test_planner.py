"""Budgeted sampling on a tiny vocabulary: outputs are complete for every seed and budget.

A fake model with random logits (biased against stopping, so that it would
run long) drives :func:`tokensieve.runtime.stream_constrained`; every output
must fully match its pattern and fit ``max_tokens``, or the call must refuse
the budget up front because the shortest output needs more tokens.
"""

from __future__ import annotations

import pytest
from support.regex_oracle import complete_by_regex
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, TokenizerInfo
from tokensieve.runtime import planner_for, stream_constrained

torch = pytest.importorskip("torch")

PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",
    r"[a-z]+( [a-z]+)*\.",
    r"(abc|abd|x)+",
    r"[^a-c]{1,3}é?",
    r"\w+@\w+\.(com|org)",
    r"😀|€+|\u00e9x",
    r"a{0,30}b{12}",
    r"(yes|no), because [a-z ]{3,40}\.",
]


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    vocab = make_tiny_vocab()
    info = TokenizerInfo(
        vocab, vocab_size=len(vocab) + 13, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )
    return GrammarCompiler(info)


def _fake_model(width: int, seed: int, bias: torch.Tensor | None = None):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(seed)

    def next_logits(token: int | None) -> torch.Tensor:
        logits = torch.randn(width, generator=gen) * 3.0
        logits[EOS] -= 8.0  # rarely stop of its own accord
        if bias is not None:
            logits += bias
        return logits

    return next_logits


@pytest.mark.parametrize("pattern", PATTERNS)
def test_completion_tokens_finish_every_visited_state(compiler: GrammarCompiler, pattern: str) -> None:
    compiled = compiler.compile_regex(pattern)
    planner = planner_for(compiled)
    assert planner.exhaustive
    vocab = compiler.tokenizer_info.decoded_vocab
    for state in range(compiled.num_states):
        data = planner.completion(state)
        tokens = planner.completion_tokens(state)
        assert data is not None and tokens is not None
        assert b"".join(vocab[t] for t in tokens) == data
        assert planner.tokens_needed(state) == len(tokens) <= len(data)
        assert compiled.is_accepting(compiled.step_bytes(state, data))
        # no shorter byte string completes the state: its distance is the minimum
        assert planner.completion_length(state) == len(data)
    start = planner.completion(compiled.start_state)
    assert start is not None and complete_by_regex(pattern, start)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_outputs_are_complete_for_every_budget(compiler: GrammarCompiler, pattern: str) -> None:
    compiled = compiler.compile_regex(pattern)
    width = compiler.tokenizer_info.vocab_size
    needed = planner_for(compiled).tokens_needed(compiled.start_state)
    assert needed is not None
    for max_tokens in (1, 2, 3, 5, 8, 13):
        for seed in range(4):
            temperature = (0.0, 0.7, 1.0, 2.0)[seed]
            stream = stream_constrained(
                _fake_model(width, seed * 100 + max_tokens),
                compiled,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            )
            if needed > max_tokens:
                with pytest.raises(LimitExceeded, match="max_tokens"):
                    stream.read()
                continue
            text = stream.read()
            assert complete_by_regex(pattern, text.encode("utf-8")), (pattern, max_tokens, seed, text)
            assert len(stream.token_ids) <= max_tokens
            assert stream.finish_reason in ("stop", "length")


def test_budget_end_forces_the_shortest_completion(compiler: GrammarCompiler) -> None:
    pattern = r"(yes|no), because [a-z ]{3,40}\."
    compiled = compiler.compile_regex(pattern)
    vocab = compiler.tokenizer_info.decoded_vocab
    width = compiler.tokenizer_info.vocab_size
    # a model that loves words and hates full stops: it would never end the sentence
    bias = torch.zeros(width)
    for token, data in enumerate(vocab):
        if data and all(b == 0x20 or 0x61 <= b <= 0x7A for b in data):
            bias[token] = 20.0
        elif b"." in data:
            bias[token] = -20.0
    forced = 0
    for seed in range(4):
        stream = stream_constrained(
            _fake_model(width, seed, bias),
            compiled,
            max_tokens=20,
            temperature=(0.0, 1.0)[seed % 2],
            seed=seed,
        )
        text = stream.read()
        assert complete_by_regex(pattern, text.encode("utf-8")), text
        assert len(stream.token_ids) <= 20
        assert stream.finish_reason == "length"
        forced += stream.forced_tokens
    assert forced > 0


def test_same_seed_same_output(compiler: GrammarCompiler) -> None:
    compiled = compiler.compile_regex(r"[a-z]+( [a-z]+)*\.")
    width = compiler.tokenizer_info.vocab_size
    runs = [
        stream_constrained(_fake_model(width, 7), compiled, max_tokens=12, temperature=1.0, seed=3).read()
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_pieces_are_whole_characters(compiler: GrammarCompiler) -> None:
    # tokens of the tiny vocabulary split 😀 and é across tokens; pieces must never hold halves
    compiled = compiler.compile_regex(r"(😀|é|€){6}")
    width = compiler.tokenizer_info.vocab_size
    for seed in range(5):
        stream = stream_constrained(
            _fake_model(width, seed), compiled, max_tokens=30, temperature=1.0, seed=seed
        )
        pieces = list(stream)
        assert all("\ufffd" not in p for p in pieces)
        assert "".join(pieces) == stream.text
        assert complete_by_regex(r"(😀|é|€){6}", stream.text.encode("utf-8"))


def test_recursive_grammar_planned_by_search(compiler: GrammarCompiler) -> None:
    compiled = compiler.compile_grammar('root ::= "(" root ")" | "x"', syntax="gbnf")
    planner = planner_for(compiled)
    assert not planner.exhaustive
    state = compiled.step_bytes(compiled.start_state, b"(((")
    assert planner.completion(state) == b"x)))"
    matcher = GrammarMatcher(compiled)
    assert matcher.accept_string("(((")
    for token in planner.completion_tokens(state) or []:
        assert matcher.accept_token(token)
    assert matcher.is_completed()
    width = compiler.tokenizer_info.vocab_size
    for seed in range(4):
        text = stream_constrained(
            _fake_model(width, seed), compiled, max_tokens=9, temperature=1.0, seed=seed
        ).read()
        depth = text.count("(")
        assert text == "(" * depth + "x" + ")" * depth


def test_bad_arguments(compiler: GrammarCompiler) -> None:
    compiled = compiler.compile_regex("a")
    width = compiler.tokenizer_info.vocab_size
    with pytest.raises(ValueError, match="max_tokens"):
        stream_constrained(_fake_model(width, 0), compiled, max_tokens=0)
    with pytest.raises(ValueError, match="temperature"):
        stream_constrained(_fake_model(width, 0), compiled, temperature=-1.0)


def test_planners_do_not_keep_grammars_alive(compiler: GrammarCompiler) -> None:
    import gc
    import weakref

    from tokensieve.runtime import planner as planner_module

    compiled = GrammarCompiler(compiler.tokenizer_info, cache_enabled=False).compile_regex("q+z")
    planner_for(compiled)
    ref = weakref.ref(compiled)
    before = len(planner_module._planners)
    del compiled
    gc.collect()
    assert ref() is None and len(planner_module._planners) == before - 1
