"""Boolean operations on byte DFAs and the ``Automaton`` IR leaf.

Random patterns over a three-letter alphabet are built as trees; the oracle is
the set of strings up to length 6 each tree denotes, computed by brute force
from its structure (Python's ``re`` backtracks exponentially on the nested
quantifiers random trees produce; fixed patterns are checked with
``re.fullmatch``). Every string over the alphabet up to length 6 is checked: in
both / in one and not the other / not in one. Token masks are checked against
the ``regex`` module's partial matching and against the masks of an equivalent
compiled pattern.
"""

from __future__ import annotations

import json
import pickle
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.regex_oracle import complete_by_regex, mask_to_set, viable_by_regex
from support.regex_trees import OUTSIDE, STRINGS, accepted, brute, pattern_trees, render, to_ir
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarError, GrammarMatcher, LimitExceeded, Limits
from tokensieve.automata import choices_to_dfa, ir_to_dfa, ops
from tokensieve.automata.ops import (
    automaton_to_dfa,
    complement,
    dfa_to_ir,
    difference,
    intersect,
    ir_complement,
    ir_difference,
    ir_intersect,
    is_empty,
    is_empty_ir,
)
from tokensieve.bitmask import allocate_token_bitmask
from tokensieve.compile.pushdown import CompiledPushdownGrammar
from tokensieve.grammar import ir, parse_regex
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.regex import regex_to_dfa
from tokensieve.vocab import TokenizerInfo

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def language(pattern: str, strings: list[str] = STRINGS) -> set[str]:
    rx = re.compile(pattern)
    return {s for s in strings if rx.fullmatch(s)}


# ------------------------------------------------------------ DFA level
@SETTINGS
@given(x=pattern_trees(), y=pattern_trees())
def test_intersection_difference_complement_match_re(checks, x: tuple, y: tuple) -> None:
    a, b = ir_to_dfa(to_ir(x)), ir_to_dfa(to_ir(y))
    la, lb = brute(x), brute(y)

    try:
        both = intersect(a, b)
    except GrammarError:
        assert not la & lb
    else:
        checks.assert_trimmed(both)
        checks.assert_minimal(both)
        assert accepted(both) == la & lb
        assert not accepted(both, OUTSIDE)
        assert both.same_as(intersect(b, a))  # canonical numbering

    try:
        only_a = difference(a, b)
    except GrammarError:
        assert not la - lb
    else:
        checks.assert_trimmed(only_a)
        checks.assert_minimal(only_a)
        assert accepted(only_a) == la - lb
        assert not accepted(only_a, OUTSIDE)

    try:
        not_a = complement(a, regex_to_dfa("[abc]*"))
    except GrammarError:
        assert not set(STRINGS) - la
    else:
        checks.assert_trimmed(not_a)
        assert accepted(not_a) == set(STRINGS) - la
        assert not accepted(not_a, OUTSIDE)
    anything_but_a = complement(a)
    assert accepted(anything_but_a) == set(STRINGS) - la
    assert accepted(anything_but_a, OUTSIDE) == set(OUTSIDE)
    assert anything_but_a.accepts(b"\xff\xfe")  # every byte string, valid UTF-8 or not


@SETTINGS
@given(tree=pattern_trees())
def test_embedded_automaton_keeps_the_language(tree: tuple) -> None:
    node = to_ir(tree)
    dfa = ir_to_dfa(node)
    assert accepted(dfa) == brute(tree)
    # the same node around it: concat, alt, bounded and unbounded repetition
    outer = ir.concat(
        ir.literal("c"),
        ir.repeat(dfa_to_ir(dfa), 1, 2),
        ir.alt(dfa_to_ir(dfa), ir.literal("ba")),
        ir.star(dfa_to_ir(dfa)),
    )
    expected = brute(
        (
            "cat",
            ("chr", "c"),
            (
                "cat",
                ("rep", tree, 1, 2),
                ("cat", ("alt", tree, ("cat", ("chr", "b"), ("chr", "a"))), ("rep", tree, 0, None)),
            ),
        )
    )
    assert accepted(ir_to_dfa(outer)) == expected
    # round trip: the leaf compiles back to the identical minimal table
    assert ir_to_dfa(dfa_to_ir(dfa)).same_as(dfa)
    assert automaton_to_dfa(dfa_to_ir(dfa)).same_as(dfa)


@SETTINGS
@given(x=pattern_trees(), y=pattern_trees())
def test_ir_level_operations_match_re(x: tuple, y: tuple) -> None:
    nx, ny = to_ir(x), to_ir(y)
    la, lb = brute(x), brute(y)
    for result, expected in [
        (ir_intersect(nx, ny), la & lb),
        (ir_difference(nx, ny), la - lb),
        (ir_complement(nx, ir.star(ir.char_class([(0x61, 0x63)]))), set(STRINGS) - la),
    ]:
        if is_empty_ir(result):
            assert ir.is_nothing(result)
            assert not expected
            continue
        assert isinstance(result, ir.Automaton)
        assert accepted(ir_to_dfa(result)) == expected
        # the result is an ordinary leaf: it composes with the rest of the IR
        assert accepted(ir_to_dfa(ir.concat(ir.literal("a"), result))) == {
            "a" + s for s in expected if len(s) < 6
        }


def test_intersection_equals_the_equivalent_pattern() -> None:
    cases = [
        (r"[a-c]*", r"[\s\S]{0,3}", r"[a-c]{0,3}"),
        (r"[0-9]+", r"1[\s\S]*", r"1[0-9]*"),
        (r"(ab)*", r"a(ba)*b|", r"(ab)*"),
    ]
    for pa, pb, expected in cases:
        assert intersect(regex_to_dfa(pa), regex_to_dfa(pb)).same_as(regex_to_dfa(expected))
    got = intersect(regex_to_dfa(r"[a-z]+@[a-z]+"), regex_to_dfa(r"[\s\S]{4,5}"))
    words = ["a@b", "ab@c", "a@bc", "abc@d", "ab@cd", "abc@de", "a@bcde", "abcd@e", "@ab", "ab@"]
    assert accepted(got, words) == {
        w for w in words if re.fullmatch(r"[a-z]+@[a-z]+", w) and 4 <= len(w) <= 5
    }
    diff = difference(regex_to_dfa(r"[a-e]{1,3}"), regex_to_dfa(r"a[\s\S]*"))
    assert diff.same_as(regex_to_dfa(r"[b-e][a-e]{0,2}"))


def test_utf8_operands() -> None:
    # "a string of 2 to 3 characters containing é": lengths are in characters, not bytes
    got = intersect(regex_to_dfa(r"[\s\S]*é[\s\S]*"), regex_to_dfa(r"[\s\S]{2,3}"))
    samples = ["é", "éa", "aé", "ééé", "aéb", "abcé", "€é", "é😀a", "ab", "éabc"]
    assert accepted(got, samples) == {s for s in samples if "é" in s and 2 <= len(s) <= 3}
    text = ir.star(ir.char_class([(0, ir.MAX_CODE_POINT)]))
    not_digits = ir_to_dfa(ir_complement(parse_regex("[0-9]+"), text))
    assert not_digits.accepts(b"") and not_digits.accepts("1é".encode()) and not not_digits.accepts(b"42")
    assert not not_digits.accepts(b"\xff")  # stays within UTF-8 text


# ---------------------------------------------------------- the IR leaf
def test_automaton_node_is_a_value() -> None:
    n1 = dfa_to_ir(regex_to_dfa("[a-c]{0,3}"))
    n2 = dfa_to_ir(intersect(regex_to_dfa("[a-c]*"), regex_to_dfa(r"[\s\S]{0,3}")))
    other = dfa_to_ir(regex_to_dfa("[a-c]{0,4}"))
    assert n1 == n2 and hash(n1) == hash(n2) and repr(n1) == repr(n2)
    assert n1 != other and repr(n1) != repr(other)
    assert pickle.loads(pickle.dumps(n1)) == n1
    assert len({n1, n2, other}) == 2
    assert n1.nullable and not dfa_to_ir(regex_to_dfa("a+")).nullable
    with pytest.raises(AttributeError):
        n1.start = 1  # type: ignore[misc]
    # alt() deduplicates equal leaves
    assert ir.alt(n1, n2) == n1


def test_edge_list_automata_embed() -> None:
    words = [f"w{i:04d}" for i in range(3000)]
    dfa = choices_to_dfa(words)
    assert not dfa.has_table
    node = dfa_to_ir(dfa)
    assert not dfa.has_table  # built from the edge list
    back = automaton_to_dfa(node)
    assert back.same_as(dfa)
    odd = ir_intersect(node, parse_regex(r"w[0-9]{3}[13579]"))
    got = ir_to_dfa(odd)
    sample = ["w0001", "w0002", "w2999", "w3001", "w0000", "w1234", "w1235"]
    assert accepted(got, sample) == {w for w in sample if w in set(words) and int(w[-1]) % 2}


def test_malformed_nodes_are_rejected() -> None:
    good = dfa_to_ir(regex_to_dfa("ab"))
    with pytest.raises(ValueError):
        ir.Automaton(0, 0, b"", b"")
    with pytest.raises(ValueError):
        ir.Automaton(2, 2, b"\x00\x01", b"")
    with pytest.raises(ValueError):
        ir.Automaton(2, 0, b"\x00", b"")
    with pytest.raises(ValueError):
        ir.Automaton(2, 0, b"\x00\x01", b"\x00" * 15)
    with pytest.raises(TypeError):
        ir.Automaton(2, 0, "ab", b"")  # type: ignore[arg-type]
    target_out_of_range = np.array([[0, 97, 97, 5]], dtype="<i4").tobytes()
    bad_range = np.array([[0, 98, 97, 1]], dtype="<i4").tobytes()
    overlap = np.array([[0, 97, 99, 1], [0, 99, 100, 1]], dtype="<i4").tobytes()
    for runs in (target_out_of_range, bad_range, overlap):
        node = ir.Automaton(2, 0, b"\x00\x01", runs)
        with pytest.raises(ValueError):
            ir_to_dfa(ir.concat(node, good))


def test_hand_built_nodes_are_trimmed_and_minimised(checks) -> None:
    # states: 0 -a-> 1 (accepting), 0 -b-> 2 (dead end), 3 unreachable and accepting
    runs = np.array([[0, 97, 97, 1], [0, 98, 98, 2], [3, 97, 97, 1]], dtype="<i4").tobytes()
    node = ir.Automaton(4, 0, b"\x00\x01\x00\x01", runs)
    dfa = automaton_to_dfa(node)
    checks.assert_trimmed(dfa)
    assert dfa.same_as(regex_to_dfa("a"))
    assert ir_to_dfa(ir.concat(node, node)).same_as(regex_to_dfa("aa"))
    assert not is_empty_ir(node)
    dead = ir.Automaton(2, 0, b"\x00\x00", runs[:16])
    unreachable = ir.Automaton(2, 0, b"\x00\x01", b"")
    assert is_empty_ir(dead) and is_empty_ir(unreachable)
    with pytest.raises(GrammarError):
        automaton_to_dfa(dead)
    with pytest.raises(GrammarError):
        ir_to_dfa(unreachable)


def test_is_empty_reads_the_structure() -> None:
    a = ir.literal("a")
    assert is_empty is is_empty_ir
    assert is_empty_ir(ir.NOTHING) and is_empty_ir(ir.ByteClass(()))
    assert is_empty_ir(ir.CharClass(((0xD800, 0xDFFF),)))  # surrogates only: no UTF-8 form
    assert is_empty_ir(ir.Concat((a, ir.NOTHING)))
    assert not is_empty_ir(ir.Alt((ir.NOTHING, a)))
    assert not is_empty_ir(ir.Repeat(ir.NOTHING, 0, 3))  # zero copies: the empty string
    assert is_empty_ir(ir.Repeat(ir.Concat((a, ir.NOTHING)), 1, None))
    assert not is_empty_ir(ir.EMPTY) and not is_empty_ir(a)
    # consistent with building the automaton
    for node in [ir.Concat((a, ir.NOTHING)), ir.Repeat(ir.NOTHING, 0, 3), ir.Alt((ir.NOTHING, a))]:
        try:
            ir_to_dfa(node)
        except GrammarError:
            assert is_empty_ir(node)
        else:
            assert not is_empty_ir(node)


def test_operations_with_empty_operands() -> None:
    a = parse_regex("[ab]+")
    assert ir.is_nothing(ir_intersect(a, ir.NOTHING))
    assert ir.is_nothing(ir_difference(ir.NOTHING, a))
    assert ir_difference(a, ir.NOTHING) == a
    assert ir.is_nothing(ir_difference(a, parse_regex("[a-c]*")))
    with pytest.raises(GrammarError, match="no string"):
        intersect(regex_to_dfa("a+"), regex_to_dfa("b+"))
    with pytest.raises(GrammarError, match="no string"):
        difference(regex_to_dfa("a+"), regex_to_dfa("a*"))


def test_rule_references_are_rejected() -> None:
    ref = ir.concat(ir.literal("x"), ir.RuleRef("value"))
    for op in (ir_intersect, ir_difference):
        with pytest.raises(GrammarError, match="regular operands"):
            op(ref, ir.literal("x"))
        with pytest.raises(GrammarError, match="regular operands"):
            op(ir.literal("x"), ref)
    with pytest.raises(GrammarError, match="regular operands"):
        is_empty_ir(ref)


# ----------------------------------------------------------------- limits
@SETTINGS
@given(x=pattern_trees(), y=pattern_trees())
def test_difference_by_the_subtrahend_alone_equals_the_full_product(x: tuple, y: tuple) -> None:
    a, b = ir_to_dfa(to_ir(x)), ir_to_dfa(to_ir(y))
    fast = ops._subtract_small(a, b, Limits())
    full = ops._product(a, b, True, Limits())
    assert (fast is None) == (full is None)
    if full is not None:
        assert fast is not None and fast.same_as(full)  # both minimal and numbered alike


def test_object_keys_less_the_named_ones() -> None:
    from tokensieve.grammar.json_schema import _lexical as lx

    names = ["id", "é", 'a"b', "\\", "", "x" * 40, "idx"]
    other = ir_to_dfa(
        ir_difference(lx.any_string_content(), ir.alt(*(lx.string_literal_content(n) for n in names)))
    )

    def accepts(written: str) -> bool:
        end = other.step(other.start, written.encode())
        return end >= 0 and bool(other.accepting[end])

    for name in names:  # every spelling of a named key is left out: raw, ASCII-escaped, \\u-escaped
        assert not accepts(json.dumps(name)[1:-1])
        assert not accepts(json.dumps(name, ensure_ascii=False)[1:-1])
        assert not accepts("".join(f"\\u{ord(c):04x}" for c in name)) or not name
    for key in ["i", "ids", "d", "a", "x" * 39, "x" * 41, "u0069d", "IDX", "\\u00e8", "\\u00e9x"]:
        assert accepts(key), key


def test_product_state_limit() -> None:
    # strings of a and b with the a count = 0 mod 7 and the b count = 0 mod 11: 77 states
    a = regex_to_dfa("(" + "b*a" * 7 + ")*b*")
    b = regex_to_dfa("(" + "a*b" * 11 + ")*a*")
    assert (a.num_states, b.num_states) == (7, 11)
    assert intersect(a, b).num_states == 77
    with pytest.raises(LimitExceeded) as info:
        intersect(a, b, Limits(max_dfa_states=50))
    assert info.value.limit == "max_dfa_states"
    with pytest.raises(LimitExceeded) as info:
        difference(a, b, Limits(max_dfa_states=50))
    assert info.value.limit == "max_dfa_states"
    with pytest.raises(LimitExceeded) as info:
        ir_intersect(dfa_to_ir(a), dfa_to_ir(b), Limits(max_dfa_states=50))
    assert info.value.limit == "max_dfa_states"
    with pytest.raises(LimitExceeded) as info:
        intersect(a, b, Limits(max_compile_work=100))
    assert info.value.limit == "max_compile_work"


def test_embedded_automaton_counts_towards_the_nfa_limit() -> None:
    node = dfa_to_ir(regex_to_dfa("[a-z]{0,50}"))
    with pytest.raises(LimitExceeded) as info:
        ir_to_dfa(ir.repeat(node, 100, 100), Limits(max_nfa_states=2000))
    assert info.value.limit == "max_nfa_states"


def test_large_products_stop_at_the_limit() -> None:
    # the product of two 1,000-state counters is a million states: stopped early, not built
    a = regex_to_dfa("[ab]{0,999}")
    b = regex_to_dfa("(a|bb){0,999}")
    with pytest.raises(LimitExceeded):
        intersect(a, b, Limits(max_dfa_states=5_000))


# ---------------------------------------------------------- token masks
@pytest.fixture(scope="module")
def tiny() -> tuple[TokenizerInfo, list[bytes]]:
    vocab = make_tiny_vocab()
    info = TokenizerInfo(
        vocab, vocab_size=len(vocab) + 13, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )
    return info, vocab


def _allowed(m: GrammarMatcher, vocab_size: int) -> set[int]:
    bm = allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return mask_to_set(bm[0], vocab_size)


MASK_CASES = [
    # (IR built with an operation, an equivalent pattern)
    (lambda: ir_intersect(parse_regex("[a-z0-9]+"), parse_regex(r"[\s\S]{2,5}")), r"[a-z0-9]{2,5}"),
    (lambda: ir_difference(parse_regex("[a-e]{1,3}"), parse_regex(r"a[\s\S]*")), r"[b-e][a-e]{0,2}"),
    (
        lambda: ir.concat(
            ir_intersect(parse_regex(r"[\s\S]*é[\s\S]*"), parse_regex(r"[\s\S]{1,2}")),
            ir.literal("-"),
            ir.repeat(ir_difference(parse_regex("[0-9]{2}"), parse_regex("0[0-9]")), 1, 2),
        ),
        r"(é[\s\S]?|[\s\S]é)-([1-9][0-9]){1,2}",
    ),
]


@pytest.mark.parametrize("case", range(len(MASK_CASES)))
def test_masks_equal_the_equivalent_pattern(tiny, case: int) -> None:
    info, vocab = tiny
    build, pattern = MASK_CASES[case]
    node = build()
    assert isinstance(node, (ir.Automaton, ir.Concat))
    compiler = GrammarCompiler(info, cache_enabled=False)
    via_node = compiler.compile_grammar(Grammar({"root": node}))
    via_pattern = compiler.compile_regex(pattern)
    rng = random.Random(case)
    for _ in range(4):
        m1, m2 = GrammarMatcher(via_node), GrammarMatcher(via_pattern)
        text = b""
        for _ in range(6):
            got = _allowed(m1, info.vocab_size)
            assert got == _allowed(m2, info.vocab_size)
            for t in rng.sample(range(len(vocab)), 60):  # the regex module's partial matching
                if t in (EOS, SPECIAL) or not vocab[t]:
                    continue
                ok = viable_by_regex(pattern, text + vocab[t])
                if ok is not None:
                    assert (t in got) == ok, (text, vocab[t])
            assert (EOS in got) == complete_by_regex(pattern, text)
            choices = sorted(got - {EOS})
            if not choices:
                break
            t = rng.choice(choices)
            assert m1.accept_token(t) and m2.accept_token(t)
            text += vocab[t]


def test_recursive_grammar_with_an_automaton_leaf(tiny) -> None:
    info, _ = tiny
    word = ir_intersect(parse_regex("[a-z]+"), parse_regex(r"[\s\S]{2,3}"))
    plain = parse_regex("[a-z]{2,3}")
    rules = lambda leaf: {  # noqa: E731
        "root": ir.alt(ir.concat(ir.literal("("), ir.RuleRef("root"), ir.literal(")")), ir.RuleRef("w")),
        "w": ir.concat(leaf, ir.optional(ir.concat(ir.literal(","), leaf))),
    }
    compiler = GrammarCompiler(info, cache_enabled=False)
    g1 = compiler.compile_grammar(Grammar(rules(word)))
    g2 = compiler.compile_grammar(Grammar(rules(plain)))
    assert isinstance(g1, CompiledPushdownGrammar)
    for text, ok in [("((ab,cde))", True), ("ab", True), ("(abcd)", False), ("((ab)", False), ("(a)", False)]:
        m = GrammarMatcher(g1)
        assert (m.accept_string(text) and m.is_completed()) == ok, text
    rng = random.Random(7)
    m1, m2 = GrammarMatcher(g1), GrammarMatcher(g2)
    for _ in range(12):
        got = _allowed(m1, info.vocab_size)
        assert got == _allowed(m2, info.vocab_size)
        choices = sorted(got - {EOS})
        if not choices:
            break
        t = rng.choice(choices)
        assert m1.accept_token(t) and m2.accept_token(t)


def test_nullable_automaton_counts_in_left_recursion(tiny) -> None:
    # root ::= a* root "x" | "y", the a* an embedded automaton that accepts the empty string: the
    # left recursion through it is rewritten (a copy of the automaton without the empty string)
    info, _ = tiny
    maybe_a = dfa_to_ir(regex_to_dfa("a*"))
    g = Grammar({"root": ir.alt(ir.concat(maybe_a, ir.RuleRef("root"), ir.literal("x")), ir.literal("y"))})
    compiled = GrammarCompiler(info, cache_enabled=False).compile_grammar(g)
    language = re.compile(r"y|a*yx+")  # K a's come with at least one level, each adding an x
    for text in ["y", "yx", "ayx", "aayxx", "ay", "x", "yy", "aay", "ayxa", ""]:
        m = GrammarMatcher(compiled)
        accepted = m.accept_string(text) and m.is_completed() if text else m.is_completed()
        assert accepted == bool(language.fullmatch(text)), text


def test_reserved_bytes_in_recursive_rules_are_reported(tiny) -> None:
    info, _ = tiny
    anything_but_x = ir_complement(ir.literal("x"))  # every byte string: includes 0xF8-0xFF
    g = Grammar(
        {"root": ir.alt(ir.concat(ir.literal("("), ir.RuleRef("root"), ir.literal(")")), anything_but_x)}
    )
    with pytest.raises(GrammarError, match="0xF8"):
        GrammarCompiler(info, cache_enabled=False).compile_grammar(g)


def test_compiler_cache_tells_automata_apart(tiny) -> None:
    info, _ = tiny
    compiler = GrammarCompiler(info)
    g1 = compiler.compile_grammar(Grammar({"root": dfa_to_ir(regex_to_dfa("[ab]{2}"))}))
    g2 = compiler.compile_grammar(Grammar({"root": dfa_to_ir(regex_to_dfa("[ab]{3}"))}))
    m1, m2 = GrammarMatcher(g1), GrammarMatcher(g2)
    assert m1.accept_string("ab") and m1.is_completed()
    assert m2.accept_string("ab") and not m2.is_completed()


@pytest.mark.parametrize(
    "tree",
    [
        ("rep", ("alt", ("chr", "a"), ("cat", ("chr", "b"), ("chr", "c"))), 1, None),
        ("cat", ("rep", ("cls", "ab"), 0, 2), ("rep", ("rep", ("chr", "c"), 0, 1), 2, 3)),
        ("alt", ("rep", ("chr", "a"), 2, 4), ("cat", ("cls", "bc"), ("emb", ("rep", ("chr", "a"), 0, None)))),
    ],
)
def test_brute_force_oracle_agrees_with_re(tree: tuple) -> None:
    assert brute(tree) == language(render(tree))
