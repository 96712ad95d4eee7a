"""Left recursion through a nullable prefix or a repetition, and ambiguous nullable grammars.

Such grammars were refused; the rules are now rewritten without the empty string
in leading positions (``automata/rule_graph.py``: ``without_empty``) before the
left recursion is removed. Each grammar's masks are compared, step by step on
random walks, with an Earley parser of the original grammar (``support.earley``),
and every short string over its alphabet is accepted exactly when the parser
accepts it.
"""

from __future__ import annotations

import itertools

import pytest
from support.cfg_grammars import check_random_walks
from support.earley import Earley
from support.tiny_vocab import EOS

from tokensieve import GrammarCompiler, GrammarMatcher, TokenizerInfo
from tokensieve.grammar.cfg import Grammar
from tokensieve.ir.nodes import RuleRef, alt, concat, literal, optional

GRAMMARS = {
    # ambiguous, nullable, left-recursive in every way
    "pairs_and_triples": ('root ::= a\na ::= a a | a a a | "x" | ""', "xy"),
    # left recursion behind a nullable rule
    "nullable_prefix": ('root ::= s\ns ::= b s "a" | "c"\nb ::= "" | "d"', "acd"),
    # ... which may itself lead back to the rule
    "nullable_cycle": ('root ::= s\ns ::= b s "a" | "c"\nb ::= "" | "d" | s', "acd"),
    # behind an optional or a repeated reference to the rule itself
    "optional_self": ('root ::= l\nl ::= l? "x"', "xy"),
    "repeated_self": ('root ::= l\nl ::= l* "x" | "y"', "xy"),
    # a nullable root whose left recursion goes through another rule
    "mutual": ('root ::= a\na ::= b "x" | ""\nb ::= a "y" | a', "xy"),
}


def _byte_tokens(info: TokenizerInfo) -> dict[int, int]:
    vocab = info.decoded_vocab
    return {vocab[i][0]: i for i in range(info.vocab_size) if len(vocab[i]) == 1}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_strings_are_accepted_as_an_earley_parser_accepts_them(name: str, tiny_info: TokenizerInfo) -> None:
    source, alphabet = GRAMMARS[name]
    compiled = GrammarCompiler(tiny_info).compile_grammar(source)
    earley = Earley(Grammar.from_gbnf(source))
    tokens = _byte_tokens(tiny_info)
    verdicts = []
    for length in range(6):
        for letters in itertools.product(alphabet, repeat=length):
            text = "".join(letters)
            matcher = GrammarMatcher(compiled)
            got = all(matcher.accept_token(tokens[b]) for b in text.encode()) and matcher.accept_token(EOS)
            assert got == earley.complete(text), text
            verdicts.append(got)
    assert any(verdicts) and not all(verdicts)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_match_an_earley_parser_on_random_walks(name: str, tiny_info: TokenizerInfo) -> None:
    source, _ = GRAMMARS[name]
    compiled = GrammarCompiler(tiny_info).compile_grammar(source)
    # the parse stacks of the exponentially ambiguous cycle outgrow Limits.max_stacks past a few
    # tokens (the matcher then raises LimitExceeded): its walks are short
    steps = 5 if name == "nullable_cycle" else 10
    checked = check_random_walks(compiled, Grammar.from_gbnf(source), tiny_info, seed=3, walks=4, steps=steps, eos=EOS)
    assert checked >= 4


def test_left_recursion_through_an_optional_prefix(tiny_info: TokenizerInfo) -> None:
    # root ::= "x"? root "y" | "z": x^k z y^(k+m), built as IR
    g = Grammar({"root": alt(concat(optional(literal("x")), RuleRef("root"), literal("y")), literal("z"))})
    compiled = GrammarCompiler(tiny_info).compile_grammar(g)
    tokens = _byte_tokens(tiny_info)

    def accepts(text: str) -> bool:
        matcher = GrammarMatcher(compiled)
        return all(matcher.accept_token(tokens[b]) for b in text.encode()) and matcher.accept_token(EOS)

    for text, want in [("z", True), ("zy", True), ("xzy", True), ("xxzyy", True), ("xzyyy", True)]:
        assert accepts(text) == want, text
    for text in ["xz", "xxzy", "y", "zx", ""]:
        assert not accepts(text), text
