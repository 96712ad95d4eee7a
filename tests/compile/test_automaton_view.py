"""The walk's view of an automaton: its edge lists and loop sets against the transition table.

Oracle: the ``(S, 256)`` table itself, read state by state in plain Python.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import GrammarCompiler
from tokensieve.vocab import TokenizerInfo

PATTERNS = [
    r'\{"a": "([^"\\]|\\["\\n])*", "b": "[^"\\]{0,40}"\}',
    r'[a-zé€]{0,30}(x|"[^"\\]*")',
    r"\[[ \t\n\r]{0,10}1[ \t\n\r]{0,3}, {0,5}2\]",
]


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    vocab = [b"<eos>", b"a", b"ab", b'"', b" ", b"x", "é".encode()]
    return GrammarCompiler(TokenizerInfo(vocab, stop_token_ids=[0]), precompute=False)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_edges_and_loops_are_those_of_the_table(compiler, pattern) -> None:
    compiled = compiler.compile_regex(pattern)
    table = np.asarray(compiled.dfa.transitions)
    before = compiled.memory_size_bytes
    view = compiled.automaton
    for q in range(table.shape[0]):
        row = table[q].tolist()
        lo, hi = int(view.out_start[q]), int(view.out_start[q + 1])
        assert hi - lo == int(view.outdeg[q])
        assert view.out_byte[lo:hi].tolist() == [b for b in range(256) if row[b] >= 0]
        assert view.out_next[lo:hi].tolist() == [t for t in row if t >= 0]
        loop_bits = [0, 0, 0, 0]
        for b in range(256):
            if row[b] == q:
                loop_bits[b >> 6] |= 1 << (b & 63)
        if not view.utf8[q]:  # a UTF-8 closed state also counts the high bytes as its loop bytes
            assert [int(w) for w in view.loops[q]] == loop_bits
    # the view's arrays are counted with the grammar once it has been built
    grown = compiled.memory_size_bytes - before
    assert grown >= view.out_next.nbytes + view.out_byte.nbytes + view.loops.nbytes
