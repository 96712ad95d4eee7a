"""Chain lengths of automaton states (the counted-string shortcut of the trie walk).

Oracle: the definition followed step by step in plain Python. From a state,
count the steps in a row on which every plain ASCII byte (printable, neither
``"`` nor ``\\``) leads to one state (for the character kind: every plain byte
and every well-formed multi-byte character, checked at the ends of every
continuation range and at sampled code points, lead to that same state; for
the blank kind: the four JSON blanks), up to ``MAX_CHAIN``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve.compile.char_chains import MAX_CHAIN, chain_lengths
from tokensieve.grammar.regex import regex_to_dfa

PLAIN = [b for b in range(0x20, 0x7F) if b not in (0x22, 0x5C)]
BLANKS = [0x20, 0x09, 0x0A, 0x0D]


def _characters() -> list[bytes]:
    """Multi-byte characters at the edges of every lead byte's ranges, and a sample in between."""
    rng = np.random.default_rng(5)
    points = {0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF}
    points |= {int(p) for p in rng.integers(0x80, 0x110000, size=400) if not 0xD800 <= p <= 0xDFFF}
    for lead in range(0xC2, 0xF5):  # the first and last character of every lead byte
        for tail in (b"\x80", b"\xbf"):
            data = bytes([lead]) + tail * (1 if lead < 0xE0 else 2 if lead < 0xF0 else 3)
            try:
                points.add(ord(data.decode("utf-8")))
            except UnicodeDecodeError:
                pass  # E0 80 80, ED BF BF, F0 80.., F4 BF..: not characters
    return sorted(chr(p).encode("utf-8") for p in points)


CHARACTERS = _characters()


def _step(table: np.ndarray, q: int, data: bytes) -> int:
    for b in data:
        q = int(table[q, b])
        if q < 0:
            return -1
    return q


def _brute(table: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    def uniform(q: int, strings: list[bytes]) -> int:
        targets = {_step(table, q, s) for s in strings}
        return targets.pop() if len(targets) == 1 and -1 not in targets else -1

    plain = [bytes([b]) for b in PLAIN]
    out: tuple[list[int], list[int], list[int]] = ([], [], [])
    for q in range(table.shape[0]):
        for kind, strings in enumerate((plain, plain + CHARACTERS, [bytes([b]) for b in BLANKS])):
            n, state = 0, q
            while n < MAX_CHAIN:
                state = uniform(state, strings)
                if state < 0:
                    break
                n += 1
            out[kind].append(n)
    return out


PATTERNS = [
    r'[^"\\]{0,60}"',  # a counted string: plain characters and any UTF-8
    r'(?:[^"\\]|\\["\\/bfnrt]){0,12}"',  # with escapes
    r"[ -~]{0,10}\t",  # ASCII only: plain steps, no character steps
    r"[ \t\n\r]{0,40}[,}]",  # a blank run
    r"[a-z]{0,70}",  # not every plain byte: no chain
    r'[^"\\]*"',  # a loop: the chain is capped
    r'(?:[^"\\\u0800-\u08ff]){0,5}"',  # one range of characters missing: no character steps
    r"\d{0,3}(?:[ -~]{2})*",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_chain_lengths_follow_the_definition(pattern: str) -> None:
    dfa = regex_to_dfa(pattern)
    got = chain_lengths(dfa.transitions)
    want = _brute(dfa.transitions)
    for kind in range(3):
        assert got[kind].tolist() == want[kind], (pattern, kind)
    assert any(np.asarray(g).max() > 0 for g in got) or pattern.startswith("[a-z]")


def test_chains_of_a_random_functional_graph_with_cycles() -> None:
    """Plain bytes step uniformly along a random map (cycles included); the other states refuse."""
    rng = np.random.default_rng(17)
    n = 500
    table = np.full((n, 256), -1, dtype=np.int32)
    nxt = rng.integers(0, n, size=n)
    stepping = rng.random(n) < 0.9
    for q in np.flatnonzero(stepping).tolist():
        table[q, PLAIN] = nxt[q]
        table[q, BLANKS[1:]] = nxt[q]  # with the space: a blank step too
    got = chain_lengths(table)
    want = _brute(table)
    assert got[0].tolist() == want[0]
    assert got[2].tolist() == want[2]
    assert max(want[0]) == MAX_CHAIN and min(want[0]) == 0


def test_node_chain_needs_follow_the_token_suffixes() -> None:
    """Per trie node, the chain of each kind that allows every token suffix below it (tokens enumerated)."""
    from tokensieve.compile.char_chains import NEVER, NOT_OF_KIND, node_chain_needs, token_needs
    from tokensieve.vocab.trie import TokenTrie

    rng = np.random.default_rng(3)
    pieces = [b"a", b"z", b" ", b"\t", b'"', "é".encode(), "€".encode(), "😀".encode(), b"\x80", b"\xe2\x82"]
    vocab = sorted({b"".join(rng.choice(pieces, size=int(rng.integers(1, 30)))) for _ in range(600)})
    trie = TokenTrie(vocab)
    got = node_chain_needs(trie)
    parent, byte = trie.node_parent, trie.node_byte
    for node in range(trie.num_nodes):
        path: list[int] = []
        walk = node
        while walk > 0:
            path.append(int(byte[walk]))
            walk = int(parent[walk])
        prefix = bytes(reversed(path))
        below = [t[len(prefix) :] for t in vocab if t.startswith(prefix)]
        for kind in range(3):
            need = max(token_needs(suffix)[kind] for suffix in below)
            want = NEVER if need == NOT_OF_KIND or need > MAX_CHAIN else need
            if kind == 1 and node and not got[1][node] == want:
                # the character kind also needs the path to end on a character boundary
                assert got[1][node] == NEVER and prefix.decode("utf-8", "ignore").encode() != prefix
                continue
            assert got[kind][node] == want, (prefix, kind)
