"""States that take every non-ASCII character back to themselves (the free-string shortcut of the walks).

Oracle: the automaton run on a sample of characters written by Python's UTF-8
encoder (every 2-byte character, a stride through the 3- and 4-byte ones, the
ends of each range, the line separators ECMAScript's ``.`` leaves out) and on
ill-formed sequences (stray continuation bytes,
overlong forms, surrogates, code points past U+10FFFF, cut characters).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.ill_formed_utf8 import ILL_FORMED_UTF8

from tokensieve.compile.utf8_closure import (
    UTF8_DOT_TABLE,
    UTF8_TABLE,
    is_utf8_closed,
    utf8_closed_states,
    utf8_subtree_ok,
)
from tokensieve.grammar.regex import regex_to_dfa
from tokensieve.vocab.trie import TokenTrie

CHARACTERS = (
    [chr(c) for c in range(0x80, 0x800)]
    + [chr(c) for c in range(0x800, 0x10000, 97) if not 0xD800 <= c <= 0xDFFF]
    + [chr(c) for c in (0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x2028, 0x2029)]
    + [chr(c) for c in range(0x10000, 0x110000, 4099)]
    + [chr(c) for c in (0x10000, 0x3FFFF, 0x40000, 0xFFFFF, 0x100000, 0x10FFFF)]
)

PATTERNS = [
    r'"[^"\\]*"',
    r"[a-z]*",
    r"(\w|\s)*",
    r"[^é]*",
    "[\u0080-\uffff]*",
    r"(.|\n)*x",
    r"[^\x00-\x1f]{0,3}",
]


def _closed_by_sample(dfa, q: int) -> bool:
    for ch in CHARACTERS:
        if dfa.step(q, ch.encode()) != q:
            return False
    for data in ILL_FORMED_UTF8:
        if dfa.step(q, data) >= 0:
            return False
    # a character cut short does not come back
    return all(dfa.step(q, ch.encode()[:-1]) != q for ch in CHARACTERS[::50])


@pytest.mark.parametrize("pattern", PATTERNS)
def test_closed_states_agree_with_the_encoder_and_one_by_one(pattern: str) -> None:
    dfa = regex_to_dfa(pattern)
    table = dfa.transitions
    states = np.arange(dfa.num_states)
    batched = utf8_closed_states(table, states)
    one_by_one = [is_utf8_closed(int(q), table.__getitem__) for q in states]
    assert batched.tolist() == one_by_one
    for q in states.tolist():
        if batched[q]:
            assert _closed_by_sample(dfa, q), q
        elif table[q, 0xC2] >= 0 and table[q, 0xF4] >= 0 and table[q, 0x61] == q:
            # looks like a free string at first sight, yet is not closed: the sample shows why
            assert not _closed_by_sample(dfa, q), q


def test_some_states_are_closed_and_some_are_not() -> None:
    free = regex_to_dfa(r'"[^"\\]*"')
    inside = free.step(free.start, b'"')
    assert utf8_closed_states(free.transitions, np.array([free.start, inside])).tolist() == [False, True]
    no_e_acute = regex_to_dfa(r"[^é]*")
    assert not utf8_closed_states(no_e_acute.transitions, np.array([no_e_acute.start]))[0]
    bmp_only = regex_to_dfa("[\u0080-\uffff]*")
    assert not utf8_closed_states(bmp_only.transitions, np.array([bmp_only.start]))[0]


def _closed_but_separators_by_sample(dfa, q: int) -> bool:
    """Every sampled character but U+2028 and U+2029 comes back to ``q``; those two and ill-formed bytes fail."""
    for ch in CHARACTERS:
        back = dfa.step(q, ch.encode()) == q
        if back != (ch not in "\u2028\u2029"):
            return False
    return all(dfa.step(q, data) < 0 for data in ILL_FORMED_UTF8)


@pytest.mark.parametrize("pattern", [r"x.*", r"(.|\n)*x", r'"[^"\\]*"', r"[^\u2028]*", r"(\w|\s)*"])
def test_states_closed_but_for_the_line_separators_agree_with_the_encoder(pattern: str) -> None:
    """The second kind of closed state: a regex's ``.`` (all characters but the ECMAScript line
    terminators, of which only U+2028 and U+2029 are not ASCII)."""
    dfa = regex_to_dfa(pattern)
    states = np.arange(dfa.num_states)
    dot = utf8_closed_states(dfa.transitions, states, UTF8_DOT_TABLE)
    for q in states.tolist():
        assert bool(dot[q]) == _closed_but_separators_by_sample(dfa, q), q
    if pattern == r"x.*":
        assert dot[dfa.step(dfa.start, b"x")]


def test_subtree_flags_agree_with_decoding_every_token() -> None:
    """``utf8_subtree_ok`` per node, against Python's decoder on the tokens below each node."""
    vocab = [b"", b"a", b"ab", "é".encode(), "éa".encode(), "\u2028".encode(), "a\u2029".encode(), b"\xe2\x80",
             b"\xe2\x80\xa7", b"\xe2", b"\xc3", b"\xff", "日本".encode(), "日".encode()[:2]]
    trie = TokenTrie(vocab)
    tokens = trie.sorted_tokens.tolist()
    for table, banned in ((UTF8_TABLE, ""), (UTF8_DOT_TABLE, "\u2028\u2029")):
        ok = utf8_subtree_ok(trie, table)
        for node in range(trie.num_nodes):
            depth = int(trie.node_depth[node])
            below = [vocab[t][depth:] for t in tokens[trie.token_lo[node] : trie.token_hi[node]]]
            path = vocab[tokens[trie.token_lo[node]]][:depth] if below else b""

            def fine(data: bytes, banned: str = banned) -> bool:
                text = data.decode("utf-8", errors="ignore")
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as exc:  # allowed only as a character cut at the end
                    if exc.reason != "unexpected end of data":
                        return False
                return not any(c in banned for c in text)

            boundary = fine(path) and not _cut(path)
            assert bool(ok[node]) == (boundary and all(fine(b) for b in below)), (table.shape, node, path)


def _cut(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
