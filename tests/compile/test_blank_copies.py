"""The tokens of a vocabulary by their leading run of blanks (what a copy of a layout place allows).

Oracle: the length of ``re.match(rb"[ \\t\\n\\r]*", token)`` for every token,
special tokens aside. The masks of the copies themselves are checked against
brute force in ``test_masks_bruteforce.py``.
"""

from __future__ import annotations

import re

import numpy as np

from tokensieve.compile.blank_copies import LeadingBlanks
from tokensieve.compile.vocab_cache import mask_builder_for
from tokensieve.vocab import TokenizerInfo

_LEAD = re.compile(rb"[ \t\n\r]*")


def _check_rows(leading: LeadingBlanks, vocab: list[bytes], special: set[int], vocab_size: int) -> None:
    lead = np.array([0 if t in special else _LEAD.match(d).end() for t, d in enumerate(vocab)])
    longest = int(lead.max())
    assert leading.longest == longest
    for run in range(longest + 3):
        row = leading.at_most(run)
        if run >= longest:
            assert row is None, run
            continue
        assert row is not None and not row.flags.writeable
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)
        np.testing.assert_array_equal(bits[: len(vocab)], lead <= run, err_msg=f"run {run}")
        assert bits[len(vocab) :].all()  # padding: never cleared (the place's mask has none of it)
        assert leading.at_most(run) is row  # memoised


def test_rows_of_a_small_vocabulary() -> None:
    vocab = [
        b"",
        b" ",
        b"  x",
        b"\t\n",
        b"x ",
        b" " * 40,
        b"\r\n\r\n}",
        b"abc",
        b"\n" * 7 + b'"',
        b" \x00 ",
        b"   ",
        b"<|end|>",
        b"\n\n",
        b"\t" * 40 + b"a",  # as long as another run: one row serves both
    ]
    special = {11, 12}  # a special token made of blanks is never cleared
    num_words = (len(vocab) + 40 + 31) // 32
    leading = LeadingBlanks(vocab, special, num_words)
    before = leading.nbytes
    _check_rows(leading, vocab, special, len(vocab) + 40)
    assert leading.nbytes > before  # the rows built on demand are counted


def test_no_token_starts_with_a_blank() -> None:
    leading = LeadingBlanks([b"a", b"bc", b""], [], 1)
    assert leading.longest == 0 and leading.at_most(0) is None


def test_a_stop_token_made_of_blanks_follows_acceptance_in_every_copy() -> None:
    """A line feed as the stop token: allowed wherever the place accepts, however many blanks came before."""
    from tokensieve import GrammarCompiler
    from tokensieve.automata.blank_runs import bound_blank_runs
    from tokensieve.compile.compiled_grammar import CompiledGrammar

    vocab = [b"\n", b" ", b"  ", b"\t", b"1", b"]", b"[", b"\n\n", b"<s>"]
    info = TokenizerInfo(vocab, stop_token_ids=[0], special_token_ids=[8])
    regex = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(r"1[ \t\n\r]*")
    bounded = bound_blank_runs(regex.dfa, 2)
    assert bounded is not None and bounded.blank_chains is not None
    compiled = CompiledGrammar(info, bounded, kind="regex", source="trailing blanks")
    for text, allowed in [(b"1", {0, 1, 2, 3, 7}), (b"1 ", {0, 1, 3}), (b"1 \t", {0})]:
        state = compiled.step_bytes(compiled.start_state, text)
        assert compiled.is_accepting(state)
        bits = np.unpackbits(compiled.token_mask(state).view(np.uint8), bitorder="little")
        assert set(np.flatnonzero(bits[: len(vocab)]).tolist()) == allowed, text


def test_rows_of_the_real_vocabularies(real_info: TokenizerInfo) -> None:
    builder = mask_builder_for(real_info)
    assert builder.leading_blanks is not None
    _check_rows(
        builder.leading_blanks,
        list(real_info.decoded_vocab),
        set(real_info.special_token_ids),
        real_info.vocab_size,
    )
