"""Class chains of automaton states and the class jumps of a vocabulary.

Oracles, in plain Python: for class chains, the promise the walk relies on
(every string of at most ``length[q]`` class bytes is viable from ``q``),
checked by following the set of states such strings reach, and the definition
followed step by step; for class jumps, the tokens and trie paths enumerated
from the token list itself.
"""

from __future__ import annotations

import codecs
import random

import numpy as np
import pytest

from tokensieve.compile.char_chains import CLASS_MIN_BYTES, MAX_CHAIN, class_chains
from tokensieve.compile.class_jumps import ClassRegion, class_bytes
from tokensieve.grammar.regex import regex_to_dfa
from tokensieve.vocab.trie import TokenTrie

PATTERNS = [
    r"[a-z0-9]{3,70}@x",  # a counted class
    r"[a-zA-Z0-9._%+-]{1,64}@[a-z]{2,20}\.(com|org)",  # an e-mail-like address
    r'"[^"\\]{0,30}"',  # a counted string
    r'"[^"\\]*"',  # a loop
    r"[a-f]{2,5}[a-z]*x",  # a chain into a loop on a wider class
    r"[0-9]{8}-[a-z]{0,60}",  # a class too narrow for a jump, then a counted one
    r"([a-z][0-9]){0,40}",  # alternating classes: no chain holds the next class
]


def _classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    loops = table == np.arange(table.shape[0])[:, None]
    return class_chains(table, np.packbits(loops, axis=1, bitorder="little").view(np.uint64))


def _definition(table: np.ndarray) -> tuple[list[set[int]], list[int]]:
    """Each state's class and chain length, by the definition."""
    s = table.shape[0]
    classes: list[set[int]] = []
    nxt: list[int] = []
    for q in range(s):
        loop = {b for b in range(256) if table[q, b] == q}
        if loop:
            classes.append(loop)
            nxt.append(q)
            continue
        best: set[int] = set()
        target = -1
        for probe in (ord("e"), ord("0")):
            t = int(table[q, probe])
            if t < 0:
                continue
            members = {b for b in range(256) if table[q, b] == t}
            if len(members) > len(best):
                best, target = members, t
        if len(best) >= CLASS_MIN_BYTES:
            classes.append(best)
            nxt.append(target)
        else:
            classes.append(set())
            nxt.append(-1)
    lengths = []
    for q in range(s):
        n, state = 0, q
        while n < MAX_CHAIN and nxt[state] >= 0:
            n += 1
            after = nxt[state]
            if not classes[q] <= classes[after]:
                break
            state = after
        lengths.append(n if classes[q] else 0)
    return classes, lengths


@pytest.mark.parametrize("pattern", PATTERNS)
def test_class_chains_follow_the_definition(pattern: str) -> None:
    table = regex_to_dfa(pattern).transitions
    classes, length, _ = _classes(table)
    want_classes, want_lengths = _definition(table)
    got_classes = [set(np.flatnonzero(class_bytes(c)).tolist()) if n else set() for c, n in zip(classes, length, strict=True)]
    assert got_classes == [c if n else set() for c, n in zip(want_classes, want_lengths, strict=True)]
    assert length.tolist() == want_lengths
    assert length.max() > 0


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_short_class_string_is_viable(pattern: str) -> None:
    """The promise itself: any string of at most ``length[q]`` bytes of ``q``'s class stays viable."""
    table = regex_to_dfa(pattern).transitions
    classes, length, _ = _classes(table)
    for q in range(table.shape[0]):
        members = np.flatnonzero(class_bytes(classes[q]))
        reached = {q}
        for _ in range(int(length[q])):
            after = set()
            for state in reached:
                targets = table[state, members]
                assert (targets >= 0).all(), (pattern, q)
                after.update(targets.tolist())
            reached = after


def _vocab(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = b"abcxyz019 .-\"\\\xc3\xa9@"
    out = [bytes([b]) for b in range(256)]
    seen = set(out)
    while len(out) < 1500:
        token = bytes(rng.choice(alphabet) for _ in range(rng.choice([2, 3, 5, 9, 17, 30])))
        if token not in seen:
            seen.add(token)
            out.append(token)
    return out


def _path(trie: TokenTrie, node: int) -> bytes:
    """The bytes from the root to ``node``."""
    out = []
    while node > 0:
        out.append(int(trie.node_byte[node]))
        node = int(trie.node_parent[node])
    return bytes(reversed(out))


@pytest.mark.parametrize("depth", [3, 16, 1000])
@pytest.mark.parametrize("members", [b"abcxyz019", b"abcxyz019 .-@\xc3\xa9"])
def test_class_jump_matches_the_tokens(members: bytes, depth: int) -> None:
    vocab = _vocab(len(members) + depth)
    trie = TokenTrie(vocab)
    bits = np.zeros(4, dtype=np.uint64)
    for b in members:
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    cj = ClassRegion(trie, (len(vocab) + 31) // 32, bits).jump(min(depth, trie.max_depth))
    inside = set(members)
    want_allowed = {i for i, t in enumerate(vocab) if len(t) <= depth and set(t) <= inside}
    allowed = np.unpackbits(cj.allowed.view(np.uint8), bitorder="little")
    assert set(np.flatnonzero(allowed).tolist()) == want_allowed
    # escape paths: a token prefix of class bytes (at most ``depth``) and one more byte, out of the
    # class or one deeper than ``depth``
    want_escapes = set()
    for t in vocab:
        for k in range(min(len(t), depth + 1)):
            if t[k] not in inside or k == depth:
                want_escapes.add(t[: k + 1])
                break
    got = [_path(trie, n) for n in cj.node.tolist()]
    assert len(got) == len(set(got))
    assert set(got) == want_escapes
    assert [p[-1] for p in got] == cj.byte.tolist()
    assert [len(p) - 1 for p in got] == cj.prefix.tolist()


def _utf8_prefix_ok(data: bytes) -> bool:
    """Whether ``data`` is well-formed UTF-8, possibly ending inside a character (CPython's decoder)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _begun(data: bytes) -> int:
    """How many bytes of a character not yet complete end ``data`` (well-formed so far)."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead < 0x80 or lead >= 0xC0:
            size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            return back if back < size else 0
    return 0


def _steps(data: bytes) -> int:
    """Characters begun in ``data``: its bytes that are not continuation bytes."""
    return sum(1 for b in data if not 0x80 <= b < 0xC0)


@pytest.mark.parametrize("depth", [1, 3, 1000])
def test_utf8_class_jump_matches_the_tokens(depth: int) -> None:
    """With ``utf8``: well-formed characters are of the class, depths count characters, and an
    escape that breaks a begun character says how many of its bytes came before."""
    vocab = _vocab(99) + ["é€😀".encode(), "aé".encode() + b"\x80", b"\xe2\x82a", "€".encode()[:2], b"\xf0\x9f\x98b"]
    trie = TokenTrie(vocab)
    members = b"abcxyz019 .-@"
    bits = np.zeros(4, dtype=np.uint64)
    for b in members:
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    depth = min(depth, trie.max_depth)
    cj = ClassRegion(trie, (len(vocab) + 31) // 32, bits, utf8=True).jump(depth)

    def inside(data: bytes) -> bool:
        return _utf8_prefix_ok(data) and all(b >= 0x80 or b in members for b in data)

    want_allowed = {i for i, t in enumerate(vocab) if inside(t) and _steps(t) <= depth}
    allowed = np.unpackbits(cj.allowed.view(np.uint8), bitorder="little")
    assert set(np.flatnonzero(allowed).tolist()) == want_allowed
    # escapes: an inside prefix of at most ``depth`` characters, then a byte that leaves the class
    # (out of it, or breaking UTF-8) or begins character ``depth + 1``
    want = {}
    for t in vocab:
        for k in range(len(t)):
            head, path = t[:k], t[: k + 1]
            begun = _begun(head)
            before = _steps(head) - (begun > 0)
            if not inside(path):
                if _steps(head) <= depth:
                    want[path] = (before, begun)
                break
            if not 0x80 <= t[k] < 0xC0 and _steps(path) == depth + 1:
                want[path] = (depth, 0)
                break
    got = {}
    for i, n in enumerate(cj.node.tolist()):
        got[_path(trie, n)] = (int(cj.prefix[i]), int(cj.inner[i]))
        assert cj.byte[i] == _path(trie, n)[-1]
    assert got == want
    assert cj.broken.tolist() == np.flatnonzero(cj.inner).tolist()
    assert any(t[0] >= 0x80 for t in (vocab[i] for i in want_allowed) if t)
    assert any(inner for _, inner in want.values())  # the vocabulary breaks some begun characters


def test_cached_class_jumps_count_in_the_builders_memory() -> None:
    from tokensieve import GrammarCompiler
    from tokensieve.compile.vocab_cache import mask_builder_for
    from tokensieve.vocab import TokenizerInfo

    vocab = [b"", *_vocab(7)]
    info = TokenizerInfo(vocab, stop_token_ids=[0], special_token_ids=[0])
    builder = mask_builder_for(info)

    def cached() -> int:
        return sum(j.nbytes for j in builder._jumps.values()) + sum(r.nbytes for r in builder._regions.values())

    before, cached_before = builder.nbytes, cached()
    grammar = GrammarCompiler(info).compile_regex(r'"[^"\\]*"')
    state = grammar.step_bytes(grammar.start_state, b'"')
    builder.compute(grammar.automaton, [state])  # a free string: the numpy walk starts past the class
    assert cached() > cached_before
    assert builder.nbytes - before == cached() - cached_before
