"""The contracts the matcher documents.

- A bound passed while decoding raises ``LimitExceeded`` naming it, and leaves
  the matcher as it was; grammars without recursion never raise there.
- Every way of filling a bitmask (numpy rows of the exact width or wider, a
  1-D row, torch CPU and CUDA tensors, the batch filler) leaves the same words,
  with every word past the vocabulary 0, whatever the buffer held before.
- Both compiled classes derive from ``CompiledConstraint`` and give ``row()``
  as a read-only ``int32 (256,)`` array that agrees with ``step_bytes``.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import (
    BatchGrammarMatcher,
    GrammarCompiler,
    GrammarMatcher,
    LimitExceeded,
    Limits,
    TokenizerInfo,
)
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.compile.constraint import CompiledConstraint
from tokensieve.compile.pushdown import CompiledPushdownGrammar

PARENS = 'root ::= "(" root ")" | "x"'


@pytest.fixture(scope="module")
def info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    # 7 ids past the tokens: the last word of a mask is partly past the vocabulary
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 7, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


# ----------------------------------------------------------------- limits in the token loop
def test_a_bound_passed_while_decoding_raises_and_changes_nothing(info: TokenizerInfo) -> None:
    compiled = GrammarCompiler(info, limits=Limits(max_stack_depth=8)).compile_grammar(PARENS)
    m = GrammarMatcher(compiled)
    bitmask = np.zeros((1, compiled.num_words), dtype=np.int32)
    depth = 0
    with pytest.raises(LimitExceeded) as exc:
        for _ in range(20):
            m.fill_next_token_bitmask(bitmask)
            assert m.accept_token(2 + ord("("))  # single-byte tokens follow EOS and SPECIAL
            depth += 1
    assert (exc.value.limit, exc.value.value) == ("max_stack_depth", 8)
    assert 0 < depth < 20 and m.num_rollback_steps == depth  # the refused step left no trace
    with pytest.raises(LimitExceeded):
        m.accept_string("(")
    assert m.accept_string("x" + ")" * depth) and m.is_completed()
    m.rollback(depth + 1)  # or go back to the start and take another way
    assert m.accept_string("(x)") and m.accept_token(EOS) and m.is_terminated()


def test_a_bound_passed_while_filling_a_mask_raises(info: TokenizerInfo) -> None:
    limits = Limits(max_pushdown_states=12)
    compiled = GrammarCompiler(info, limits=limits, precompute=False).compile_grammar(PARENS)
    m = GrammarMatcher(compiled)
    bitmask = np.zeros((1, compiled.num_words), dtype=np.int32)
    with pytest.raises(LimitExceeded) as exc:
        for _ in range(40):
            m.fill_next_token_bitmask(bitmask)
            assert m.accept_string("(")
    assert exc.value.limit == "max_pushdown_states"


def test_grammars_without_recursion_never_raise_in_the_loop(info: TokenizerInfo) -> None:
    compiled = GrammarCompiler(info, limits=Limits(max_stack_depth=1, max_stacks=1)).compile_regex("(ab|c)*d")
    m = GrammarMatcher(compiled)
    bitmask = np.zeros((1, compiled.num_words), dtype=np.int32)
    for _ in range(200):
        m.fill_next_token_bitmask(bitmask)
        assert m.accept_string("ab")
    assert not m.accept_string("x") and m.accept_string("d") and m.is_completed()


# ----------------------------------------------------------------- fill paths
def _constraints(info: TokenizerInfo) -> list[tuple[object, list[str]]]:
    compiler = GrammarCompiler(info)
    return [
        (compiler.compile_regex(r"[a-z]{1,8}@(x|yz)\.com"), ["", "ab", "ab@", "ab@yz.com"]),
        (compiler.compile_grammar(PARENS), ["", "((", "((x)"]),
        (compiler.compile_json_schema({"type": "object"}), ["", '{"a', '{"a": [1, {}]']),
    ]


def _fills(matcher: GrammarMatcher, words: int) -> dict[str, np.ndarray]:
    """The row each fill path leaves, over a buffer of -1 (every bit set)."""
    torch = pytest.importorskip("torch")
    out = {}
    exact = np.full((3, words), -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(exact, 1)
    out["numpy"] = exact[1]
    wide = np.full((2, words + 3), -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(wide, 0)
    out["numpy wider"] = wide[0]
    flat = np.full(words + 1, -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(flat)
    out["numpy 1-D"] = flat
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for extra in (0, 2):
            t = torch.full((2, words + extra), -1, dtype=torch.int32, device=device)
            matcher.fill_next_token_bitmask(t, 1)
            out[f"torch {device} +{extra}"] = t[1].cpu().numpy()
            b = torch.full((2, words + extra), -1, dtype=torch.int32, device=device)
            BatchGrammarMatcher(max_threads=1).fill_next_token_bitmask([matcher], b, [1])
            out[f"batch torch {device} +{extra}"] = b[1].cpu().numpy()
    b = np.full((2, words + 2), -1, dtype=np.int32)
    BatchGrammarMatcher(max_threads=1).fill_next_token_bitmask([matcher], b, [0])
    out["batch numpy"] = b[0]
    return out


def test_every_fill_path_leaves_the_same_words(info: TokenizerInfo) -> None:
    words = (info.vocab_size + 31) // 32
    tail_bits = words * 32 - info.vocab_size
    assert tail_bits > 0
    for compiled, prefixes in _constraints(info):
        for prefix in prefixes:
            m = GrammarMatcher(compiled)
            assert m.accept_string(prefix)
            for terminated in (False, True):
                if terminated and not (m.is_completed() and m.accept_token(EOS)):
                    continue
                expected = np.zeros(words + 3, dtype=np.int32)
                expected[:words] = m.next_token_mask()
                last = int(expected[words - 1].view(np.uint32))
                assert last >> (32 - tail_bits) == 0  # no bit past the vocabulary
                for path, row in _fills(m, words).items():
                    assert np.array_equal(row, expected[: row.shape[0]]), (prefix, terminated, path)


# ----------------------------------------------------------------- one interface
def test_both_compiled_classes_give_rows_as_read_only_arrays(info: TokenizerInfo) -> None:
    compiler = GrammarCompiler(info)
    dfa = compiler.compile_regex("a[bc]*d")
    pda = compiler.compile_grammar(PARENS)
    assert isinstance(dfa, CompiledGrammar) and isinstance(pda, CompiledPushdownGrammar)
    for compiled in (dfa, pda):
        assert CompiledConstraint in type(compiled).__mro__
        state = compiled.start_state
        for _ in range(3):
            row = compiled.row(state)
            assert isinstance(row, np.ndarray) and row.dtype == np.int32 and row.shape == (256,)
            assert not row.flags.writeable
            for byte in range(256):
                assert int(row[byte]) == compiled.step_bytes(state, bytes([byte]))
            state = int(row[row >= 0][0])


def test_matcher_refuses_what_is_not_a_compiled_constraint() -> None:
    with pytest.raises(TypeError, match="compiled grammar"):
        GrammarMatcher(object())  # type: ignore[arg-type]
