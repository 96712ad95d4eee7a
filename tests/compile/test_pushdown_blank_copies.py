"""Recursive grammars: the walks of the states that count a run of blanks are derived from their
chain's first state, and equal both a walk of their own and the Earley oracle."""

from __future__ import annotations

import numpy as np
import pytest
from support.cfg_grammars import NUMBER, STRING, check_random_walks
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, TokenizerInfo
from tokensieve.bitmask import bitmask_to_bool
from tokensieve.compile.pushdown import CompiledPushdownGrammar
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import RuleRef, alt, char_class, concat, literal, optional, repeat, star

R = RuleRef
#: a run of at most four JSON blanks (all four: the automaton counts them along a chain)
WS = repeat(char_class(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))), 0, 4)

JSON = Grammar(
    {
        "root": concat(WS, R("value"), WS),
        "value": alt(
            concat(
                literal("{"),
                WS,
                optional(
                    concat(
                        STRING, WS, literal(":"), WS, R("value"), WS,
                        star(concat(literal(","), WS, STRING, WS, literal(":"), WS, R("value"), WS)),
                    )
                ),
                literal("}"),
            ),
            concat(
                literal("["), WS, optional(concat(R("value"), WS, star(concat(literal(","), WS, R("value"), WS)))),
                literal("]"),
            ),
            STRING,
            NUMBER,
        ),
    }
)  # fmt: skip

#: a called rule that starts with blanks of its own: a token's blanks may run on into it
BLANK_CALLEE = Grammar(
    {
        "root": concat(literal("["), WS, R("item"), WS, literal("]")),
        "item": alt(concat(WS, literal("x"), optional(concat(literal(","), R("item")))), literal("y")),
    }
)


@pytest.fixture(scope="module")
def blank_info() -> TokenizerInfo:
    vocab = make_tiny_vocab(seed=3, extra=200)
    runs = [" ", "  ", "   ", "    ", "     ", "      ", "\n", "\n  ", "\r\n", " \t", "\t\t\t\t"]
    vocab += [r.encode() for r in runs]
    vocab += [
        (r + tail).encode()
        for r in runs
        for tail in ("{", "[", "]", "}", ",", ":", '"', "1", "x", "y", ' "a')
    ]
    vocab += [(head + r).encode() for head in ("{", "[", ",", ":", '"', "1", "x", '":') for r in runs]
    vocab += [
        (head + r + tail).encode() for head in (",", ":", "[") for r in runs[:6] for tail in ('"', "1", "x")
    ]
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


def _compiled(info: TokenizerInfo, grammar: Grammar, **options) -> CompiledPushdownGrammar:
    compiled = GrammarCompiler(info, cache_enabled=False, **options).compile_grammar(grammar)
    assert isinstance(compiled, CompiledPushdownGrammar)
    return compiled


def _derived(compiled: CompiledPushdownGrammar) -> list[int]:
    head, _ = compiled._copies()
    return [g for g, h in enumerate(head) if h >= 0]


def _allowed(mask: np.ndarray, vocab_size: int) -> set[int]:
    return set(np.flatnonzero(bitmask_to_bool(mask[None, :], vocab_size)[0]).tolist())


def test_derived_walks_equal_their_own_walks(blank_info) -> None:
    compiled = _compiled(blank_info, JSON, precompute=False)
    derived = _derived(compiled)
    # every run but its first state: 4 blanks, so 4 derived states per place (of which there are many)
    assert len(derived) >= 4 * 8
    vocab, trie = blank_info.decoded_vocab, compiled._builder.trie
    for g in derived:
        mask, nodes = compiled._level((g,))
        own_mask, own_nodes = compiled._frame_walks([g], None, True)[0]
        assert np.array_equal(mask, own_mask), g
        assert own_nodes is not None and nodes is not None
        # a walk may skip escape nodes inside a subtree it allows whole (the tokens below
        # one add nothing then): the two sets may differ there only
        allowed = _allowed(mask, blank_info.vocab_size)
        for node in set(nodes.tolist()) ^ set(own_nodes.tolist()):
            path = bytearray()
            n = node
            while n:
                path.append(int(trie.node_byte[n]))
                n = int(trie.node_parent[n])
            prefix = bytes(reversed(path))
            below = {t for t, data in enumerate(vocab) if len(data) > len(prefix) and data.startswith(prefix)}
            assert below <= allowed, (g, prefix)


@pytest.mark.parametrize("walks", ["auto", "lazy", "eager"])
@pytest.mark.parametrize("name", ["json", "blank_callee"])
def test_masks_equal_earley_oracle(blank_info, name: str, walks: str) -> None:
    options = {"auto": {}, "lazy": {"auto_precompute_budget_s": 0}, "eager": {"precompute": True}}[walks]
    grammar = {"json": JSON, "blank_callee": BLANK_CALLEE}[name]
    compiled = _compiled(blank_info, grammar, **options)
    checked = check_random_walks(compiled, grammar, blank_info, seed=11, walks=6, steps=12, eos=EOS)
    assert checked >= 6


def test_runs_before_a_rule_that_reads_blanks_are_walked(blank_info) -> None:
    compiled = _compiled(blank_info, BLANK_CALLEE, precompute=False)
    net = compiled.network
    root = net.names.index("root")
    item_start = int(compiled._offsets[net.names.index("item")]) + net.starts[net.names.index("item")]
    derived = set(_derived(compiled))
    callers = {
        g
        for g in range(int(compiled._offsets[root]), int(compiled._offsets[root + 1]))
        if any(start == item_start for start, _ in compiled._gcalls[g])
    }
    assert callers and not callers & derived  # the run after "[" calls item, whose blanks would run on
    assert derived  # the run before "]" calls nothing: derived


def test_a_long_run_derives_its_last_state_in_one_step(blank_info) -> None:
    """A run far longer than Python's recursion limit: the last state's walk still comes out, and
    equals its own walk (each state derives from the chain's first, not the one before it)."""
    long_ws = repeat(char_class(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))), 0, 1500)
    grammar = Grammar(
        {
            "root": concat(literal("["), long_ws, R("item"), long_ws, literal("]")),
            "item": alt(concat(literal("x"), optional(concat(literal(","), R("item")))), literal("y")),
        }
    )
    compiled = _compiled(blank_info, grammar, precompute=False)
    head, room = compiled._copies()
    derived = _derived(compiled)
    assert len(derived) >= 1500  # the two equal runs may be one rule of their own (see _split_heavy)
    last = min(derived, key=lambda g: room[g])
    assert room[last] == 0
    mask, _ = compiled._level((last,))
    assert np.array_equal(mask, compiled._frame_walks([last], None, True)[0][0])
