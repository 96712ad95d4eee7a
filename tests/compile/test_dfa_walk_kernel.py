"""The DFA walk of the JIT kernel (``frame_walk.dfa_walk``) against the numpy walk and brute force.

A mask first needed while decoding is walked by the kernel, once it is
loaded; the precomputed ones by the numpy walk of ``TokenMaskBuilder``. Both
must give every state the same tokens, and those of running each token's
bytes through the automaton.
"""

from __future__ import annotations

import numpy as np
import pytest
from support import real_vocabs

from tokensieve import GrammarCompiler, TokenizerInfo
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.compile.frame_walk import dfa_walk, load_kernel
from tokensieve.compile.pushdown import CompiledPushdownGrammar


@pytest.fixture(autouse=True)
def _kernel_loaded() -> None:
    load_kernel()


@pytest.fixture(scope="module")
def tekken() -> TokenizerInfo:
    return TokenizerInfo.from_file(real_vocabs.tekken_240911_json())


#: automata with the features the walk's shortcut reads: loops, UTF-8 characters taken back to a
#: state, counted strings, blank runs counted in copies of layout places, accepting states
CONSTRAINTS = {
    "regex_utf8": ("regex", r"[^\"\\]*\"(\w|é|日本)+\s?[0-9]{2,4}"),
    "regex_free_text": ("regex", r"[\s\S]{0,40}"),
    "regex_dot": ("regex", r"[a-z]+: .*"),  # a state of the second kind of UTF-8 loop (all but U+2028, U+2029)
    "choices": ("choices", ["yes", "no", "maybe not", "日本語"]),  # no table: not the kernel's
    "schema_loose": (
        "schema",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 12},
                "tags": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
                "size": {"type": "number"},
                "kind": {"enum": ["a", "b", "ç"]},
                "line": {"type": "string", "pattern": "^.*$"},
            },
            "required": ["name"],
            "additionalProperties": False,  # else any JSON value: a rule network
        },
    ),
}


def _compile(info: TokenizerInfo, key: str) -> CompiledGrammar:
    kind, source = CONSTRAINTS[key]
    compiler = GrammarCompiler(info, precompute=False, cache_enabled=False)
    if kind == "regex":
        out = compiler.compile_regex(source)  # type: ignore[arg-type]
    elif kind == "choices":
        out = compiler.compile_choices(source)  # type: ignore[arg-type]
    else:
        out = compiler.compile_json_schema(source, strict=False)
    assert isinstance(out, CompiledGrammar)
    return out


@pytest.mark.parametrize("key", sorted(CONSTRAINTS))
def test_kernel_walk_equals_numpy_walk_on_every_state(tekken: TokenizerInfo, key: str) -> None:
    compiled = _compile(tekken, key)
    view = compiled.automaton
    builder = compiled._builder
    states = np.arange(view.num_states)
    if states.size > 400:
        rng = np.random.default_rng(7)
        states = np.unique(np.concatenate([rng.choice(states, 300, replace=False), np.flatnonzero(view.permissive)]))
    if key in ("regex_dot", "schema_loose"):
        assert (view.utf8_kind == 2).any()  # the shortcut the numpy walk does not take is there
    if view.trans is None:  # a choice list's edges only: walked by numpy
        assert dfa_walk(builder, view, compiled.start_state) is None
        return
    checked = 0
    for state in states.tolist():
        kernel = dfa_walk(builder, view, state)
        assert kernel is not None
        numpy_walk = builder.compute(view, [state]).mask(0)
        assert np.array_equal(kernel, numpy_walk), f"state {state}"
        checked += 1
    assert checked >= min(view.num_states, 50)


def test_kernel_walk_equals_brute_force(tekken: TokenizerInfo) -> None:
    """Every token's bytes run through the automaton from a few states, the stop tokens where it accepts."""
    compiled = _compile(tekken, "regex_utf8")
    view = compiled.automaton
    vocab = tekken.decoded_vocab
    stops = set(tekken.stop_token_ids)
    specials = set(tekken.special_token_ids)
    for state in range(min(view.num_states, 6)):
        mask = dfa_walk(compiled._builder, view, state)
        assert mask is not None
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: len(vocab)]
        expected = np.zeros(len(vocab), dtype=np.uint8)
        for token, data in enumerate(vocab):
            if token in stops:
                expected[token] = compiled.is_accepting(state)
            elif token not in specials and data:
                expected[token] = compiled.step_bytes(state, data) >= 0
        assert np.array_equal(bits, expected), f"state {state}"


def test_decoding_misses_use_the_kernel_and_match_precomputed_masks(tekken: TokenizerInfo) -> None:
    """A lazily compiled grammar (masks walked by the kernel on first use) and a precomputed one
    (numpy batches) give the same mask in every state a walk through the automaton meets."""
    kind, schema = CONSTRAINTS["schema_loose"]
    lazy = GrammarCompiler(tekken, precompute=False, cache_enabled=False).compile_json_schema(schema, strict=False)
    eager = GrammarCompiler(tekken, precompute=True, cache_enabled=False).compile_json_schema(schema, strict=False)
    assert isinstance(lazy, CompiledGrammar) and isinstance(eager, CompiledGrammar)
    text = b'{ "name": "Zo\xc3\xab", "tags": [1, -20], "size": -1.5e3, "kind": "\xc3\xa7"}'
    state = lazy.start_state
    assert eager.start_state == state
    for byte in text:
        assert np.array_equal(lazy.token_mask(state), eager.token_mask(state)), f"at {bytes([byte])!r}"
        state = lazy.step_bytes(state, bytes([byte]))
        assert state >= 0
    assert lazy.is_accepting(state)


def test_walks_use_the_specialisation_the_load_compiled(tekken: TokenizerInfo) -> None:
    """The load's warm-up passes the argument types of real walks: one machine-code version."""
    from tokensieve.compile import _dfa_kernel

    compiled = _compile(tekken, "regex_free_text")
    assert dfa_walk(compiled._builder, compiled.automaton, compiled.start_state) is not None
    assert dfa_walk(compiled._builder, compiled.automaton, compiled.start_state, aside=True) is not None
    assert len(_dfa_kernel.dfa_walk_kernel.signatures) == 1
    assert len(_dfa_kernel.dfa_walk_kernel_gil.signatures) == 1


def _separator_vocab() -> TokenizerInfo:
    """Every byte, and multi-byte tokens with and without the line separators U+2028 and U+2029 (the real
    vocabularies here have none): where the two kinds of UTF-8 loop differ."""
    words = ["\u2028", "a\u2029", "é\u2028x", "éa", "é日本", "日本", "ab: ", "x\u2028", "\u2029é", "ü"]
    vocab = [b"", *(bytes([b]) for b in range(256)), *(w.encode() for w in words)]
    return TokenizerInfo(vocab, stop_token_ids=[0], special_token_ids=[0])


def test_kernel_walks_keep_out_the_line_separators_a_dot_refuses() -> None:
    """Brute force on a vocabulary with line separators inside tokens, for a DFA (the DFA walk) and a
    rule network (the frame walk, against the numpy walk, which never takes that shortcut)."""
    info = _separator_vocab()
    vocab = info.decoded_vocab
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(r"[a-z]+: .*")
    assert isinstance(compiled, CompiledGrammar)
    view = compiled.automaton
    assert (view.utf8_kind == 2).any()
    for state in range(view.num_states):
        mask = dfa_walk(compiled._builder, view, state)
        assert mask is not None
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: len(vocab)]
        expected = [compiled.is_accepting(state) if t == 0 else compiled.step_bytes(state, data) >= 0
                    for t, data in enumerate(vocab)]
        assert bits.tolist() == [int(e) for e in expected], state
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^.*$"}}}
    network = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema(schema, strict=False)
    assert isinstance(network, CompiledPushdownGrammar)
    assert (network._view().utf8_kind == 2).any()
    numpy_walk = CompiledPushdownGrammar(network.network, info, network.limits)
    numpy_walk.walk_kernel = False
    state = network.step_bytes(network.start_state, b'{"a": "')
    assert state >= 0
    inside = numpy_walk.step_bytes(numpy_walk.start_state, b'{"a": "')
    for prefix in (b"", b"\xc3\xa9", b"x", "日".encode()):
        a, b = network.step_bytes(state, prefix), numpy_walk.step_bytes(inside, prefix)
        assert np.array_equal(network.token_mask(a), numpy_walk.token_mask(b)), prefix
        allowed = np.unpackbits(network.token_mask(a).view(np.uint8), bitorder="little")[: len(vocab)]
        assert not any(allowed[t] for t, data in enumerate(vocab) if b"\xe2\x80\xa8" in data or b"\xe2\x80\xa9" in data)
