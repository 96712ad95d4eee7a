"""Every state's mask against a brute-force run of every token's bytes through the automaton.

Oracle: token ``t`` is allowed in state ``s`` iff stepping ``ByteDFA.transitions``
over the bytes of ``t`` from ``s`` never meets a missing transition (stop tokens
iff ``s`` accepts). It knows nothing of the token trie, the subtree and UTF-8
shortcuts, the shared masks or the long-token recheck. Every test runs with the
walk's levels all in numpy, all in plain Python (the tail of a walk), and mixed. The vocabularies mix
short and long tokens (longer than the sharing depth), well-formed multi-byte
characters, tokens that split a character and ill-formed bytes; the automata
are large enough (over 256 states) for masks to be shared between states.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tokensieve import GrammarCompiler
from tokensieve.automata.blank_runs import bound_blank_runs
from tokensieve.compile import token_masks
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.vocab import TokenizerInfo

EOS, SPECIAL = 0, 1

REGEXES = [
    # a free string (loops on ASCII, every character through a UTF-8 sub-automaton), then a counted one
    r'\{"a": "([^"\\]|\\["\\n])*", "b": "[^"\\]{0,40}"\}',
    # counted strings of any character, whitespace runs
    r'"[^"]{2,70}"( {0,20}, {0,20}"[^"]{0,30}")*',
    r'[a-zé€]{0,300}(x|"[^"\\]*")',
    r'("[^"\\]*"|[0-9]{1,30}), {0,40}"[^"\\]{0,25}"',
    # counted strings whose characters are not all alike: one multi-byte character refused, and
    # a narrower ASCII set (the character chains must not allow either whole)
    r'"[^"\\é]{0,30}"',
    r'"[a-z ]{0,30}x"',
    # a bounded run of blanks (a blank chain), and one of spaces only (none)
    r'\[[ \t\n\r]{0,40}1[ \t\n\r]{0,3}, {0,30}2\]',
]

SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "note": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
        },
        "required": ["name", "note"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"q": {"type": "string", "minLength": 2, "maxLength": 90}, "n": {"type": "integer"}},
        "required": ["q"],
        "additionalProperties": False,
    },
]


@pytest.fixture(autouse=True, params=["numpy", "python", "mixed", "no-jumps"])
def walk_tail(request, monkeypatch) -> None:
    """Where a walk goes on in plain Python: never, from its first level, or past a few levels.

    With ``no-jumps`` the walks of wide-class states start at the root (as in
    ``numpy`` otherwise); the other three start them past their class.
    """
    if request.param == "no-jumps":
        monkeypatch.setattr(token_masks.TokenMaskBuilder, "jump_classes", False)
        monkeypatch.setattr(token_masks, "_TAIL_PAIRS", 0)
    elif request.param == "numpy":
        monkeypatch.setattr(token_masks, "_TAIL_PAIRS", 0)
    elif request.param == "python":
        monkeypatch.setattr(token_masks, "_TAIL_PAIRS", 1 << 40)
        monkeypatch.setattr(token_masks, "_TAIL_NODES", 1 << 40)
    else:
        monkeypatch.setattr(token_masks, "_TAIL_PAIRS", 8)
        monkeypatch.setattr(token_masks, "_TAIL_NODES", 40)


def _vocab(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    vocab = [b"", b""] + [bytes([b]) for b in range(256)]
    alphabet = ['a', 'b', 'x', 'é', '€', '😀', '"', '\\', ' ', ',', ':', '{', '}', '0', '7', 'n', '\u0416', '\n', '1']
    seen = set(vocab[2:])
    while len(vocab) < 900:
        n = rng.choice([2, 3, 4, 5, 8, 14, 17, 18, 24, 40])
        word = "".join(rng.choice(alphabet) for _ in range(n)).encode("utf-8")
        roll = rng.random()
        if roll < 0.15 and len(word) > 2:
            word = word[rng.randint(1, len(word) - 1) :]  # may start inside a character
        elif roll < 0.3 and len(word) > 2:
            word = word[: rng.randint(1, len(word) - 1)]  # may end inside a character
        elif roll < 0.35:
            word += rng.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\x80"])  # ill-formed
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    vocab += [b" " * 17, b" " * 33, b"\n" + b" " * 24, b"\n\t" * 9, "é".encode() * 9, b"a" * 16 + "€".encode(), b'", "b": "' + b"x" * 12]
    vocab += [b" " * 4, b"\n" * 8, b"\t" * 5 + b"b", b" \n \n \n\"", b"\r\n" * 4 + b"}"]  # short runs of blanks
    return vocab


def _info(seed: int) -> TokenizerInfo:
    vocab = _vocab(seed)
    return TokenizerInfo(vocab, vocab_size=len(vocab) + 7, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])


def _brute_force(compiled, info: TokenizerInfo) -> np.ndarray:
    """``bool (S, vocab_size)``: every token's bytes run through the table from every state."""
    table = compiled.dfa.transitions
    n = table.shape[0]
    out = np.zeros((n, info.vocab_size), dtype=bool)
    special = set(info.special_token_ids)
    every = np.arange(n)
    for t, data in enumerate(info.decoded_vocab):
        if t in special or not data:
            continue
        cur = every
        for byte in data:
            cur = np.where(cur >= 0, table[np.maximum(cur, 0), byte], -1)
        out[:, t] = cur >= 0
    accepting = np.asarray(compiled.dfa.accepting, dtype=bool)
    for t in info.stop_token_ids:
        out[:, t] = accepting
    return out


def _check_all_states(compiled, info: TokenizerInfo, seed: int, expected: np.ndarray | None = None) -> None:
    if expected is None:
        expected = _brute_force(compiled, info)
    order = list(range(compiled.num_states))
    random.Random(seed).shuffle(order)  # representatives are not always met first
    for s in order:
        _check_mask(compiled.token_mask(s), s, expected, info)


def _check_mask(mask: np.ndarray, s: int, expected: np.ndarray, info: TokenizerInfo) -> None:
    got = np.unpackbits(mask.view(np.uint8), bitorder="little")[: info.vocab_size]
    bad = np.flatnonzero(got.astype(bool) != expected[s])
    assert not bad.size, (s, [info.decoded_vocab[t] for t in bad[:5] if t < len(info.decoded_vocab)])


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_masks_match_brute_force(pattern: str, seed: int) -> None:
    info = _info(seed)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(pattern)
    _check_all_states(compiled, info, seed)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_schema_masks_match_brute_force(index: int) -> None:
    info = _info(10 + index)
    compiler = GrammarCompiler(info, precompute=False, cache_enabled=False)
    compiled = compiler.compile_json_schema(SCHEMAS[index], strict=False)
    assert compiled.num_states > 256  # the shared masks are exercised
    _check_all_states(compiled, info, index)


@pytest.mark.parametrize("precompute", [False, True])
@pytest.mark.parametrize("max_whitespace", [3, 16, 17, 30])
def test_masks_of_the_states_counting_blanks_match_brute_force(max_whitespace: int, precompute: bool) -> None:
    """The copies of each layout place take its mask less the tokens with too many leading blanks.

    Below, at and above the sharing depth (the classes of the other states are
    then computed with the places looping on the blanks), with the masks
    computed on first use and ahead; through :meth:`fill_row` too, first on a
    fresh grammar (a copy met before its place), then again once they are
    known.
    """
    info = _info(20)
    compiler = GrammarCompiler(info, precompute=precompute, cache_enabled=False)
    compiled = compiler.compile_json_schema(SCHEMAS[0], strict=False, max_whitespace=max_whitespace)
    chains = compiled.dfa.blank_chains
    assert chains is not None and chains.most == max_whitespace and chains.end == compiled.num_states
    expected = _brute_force(compiled, info)
    # the vocabulary has tokens that overrun every copy's remaining run (and some that do not)
    leads = [len(d) - len(d.lstrip(b" \t\n\r")) for d in info.decoded_vocab]
    assert max(leads) > max_whitespace and 1 in leads
    fresh = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_json_schema(
        SCHEMAS[0], strict=False, max_whitespace=max_whitespace
    )
    assert fresh is not compiled
    copies = list(range(chains.first, chains.end))
    others = list(range(chains.first))
    random.Random(max_whitespace).shuffle(copies)
    row = np.empty(fresh.num_words, dtype=np.int32)
    for _ in range(2):
        for s in copies + others:
            row.fill(-1)
            fresh.fill_row(s, row)
            _check_mask(row, s, expected, info)
    _check_all_states(compiled, info, max_whitespace, expected)


@pytest.mark.parametrize("most", [3, 20])
def test_copies_next_to_a_counted_run_match_brute_force(most: int) -> None:
    """A place next to a counted run of blanks that is no place (it does not loop).

    Up to the sharing depth the state after ``c`` is equivalent to the place
    after ``a`` while the places loop; once they are unrolled into fewer copies
    than that depth it is not, so their classes must come from the unrolled
    automaton.
    """
    info = _info(21)
    regex = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(
        r"(a[ \t\n\r]*b|c[ \t\n\r]{0,20}b)x{0,300}"
    )
    bounded = bound_blank_runs(regex.dfa, most)
    assert bounded is not None and bounded.blank_chains is not None and bounded.num_states > 256
    compiled = CompiledGrammar(info, bounded, kind="regex", source="counted and uncounted runs")
    _check_all_states(compiled, info, most)


def test_precomputed_masks_match_brute_force() -> None:
    info = _info(5)
    compiled = GrammarCompiler(info, precompute=True, cache_enabled=False).compile_regex(REGEXES[0])
    _check_all_states(compiled, info, 5)


def test_utf8_closure_is_used() -> None:
    """The free-string state of the first pattern takes multi-byte characters back to itself."""
    info = _info(1)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(REGEXES[0])
    state = compiled.step_bytes(compiled.start_state, b'{"a": "')
    assert compiled.automaton.utf8[state]


def test_character_chains_are_used() -> None:
    """Inside a counted string every plain character steps along a chain: the subtree shortcut applies."""
    info = _info(1)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(REGEXES[0])
    state = compiled.step_bytes(compiled.start_state, b'{"a": "", "b": "')
    ascii_len, char_len, blank_len = compiled.automaton.chains
    assert ascii_len[state] >= 16 and char_len[state] >= 16 and blank_len[state] >= 16
    near_end = compiled.step_bytes(state, b"x" * 37)
    assert char_len[near_end] == 3  # three more characters fit
    refused = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(REGEXES[4])
    inside = refused.step_bytes(refused.start_state, b'"')
    ascii_len, char_len, _ = refused.automaton.chains
    assert ascii_len[inside] >= 16 and char_len[inside] == 0  # "é" leaves the chain


def test_blank_chains_are_used() -> None:
    """A bounded run of JSON blanks is a chain; a run of spaces alone is not (tabs and newlines leave it)."""
    info = _info(1)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(REGEXES[6])
    ascii_len, char_len, blank_len = compiled.automaton.chains
    state = compiled.step_bytes(compiled.start_state, b"[\n ")
    assert blank_len[state] == 38 and ascii_len[state] == 0 and char_len[state] == 0
    spaces = compiled.step_bytes(compiled.start_state, b"[1, ")
    assert blank_len[spaces] == 0


def _broken_character_string() -> tuple[CompiledGrammar, TokenizerInfo]:
    """Counted strings whose chains also take ``\\xc3`` then ``x`` (ill-formed UTF-8) then ``b``.

    The automaton is a regex's with transitions added by hand: the class jump of
    a counted string counts characters, and must walk an escape that breaks a
    begun character from the state that character began in.
    """
    from tokensieve.automata import ByteDFA
    from tokensieve.grammar.regex import regex_to_dfa

    base = regex_to_dfa(r'"[^"\\]{0,20}", "[^"\\]{0,20}"')  # two chains: states of one depth in each
    table = base.transitions.copy()
    accepting = base.accepting.copy()
    extra = []
    for q in range(table.shape[0]):
        step, mid = int(table[q, ord("e")]), int(table[q, 0xC3])
        if step >= 0 and mid >= 0 and step != q:
            extra.append((mid, step))
    assert len(extra) >= 16
    rows = np.full((len(extra), 256), -1, dtype=np.int32)
    for i, (mid, step) in enumerate(extra):
        table[mid, ord("x")] = base.num_states + i
        rows[i, ord("b")] = step
    dfa = ByteDFA(np.vstack([table, rows]), np.concatenate([accepting, np.zeros(len(extra), dtype=bool)]), 0)
    vocab = _vocab(3) + [b"ab\xc3xb", b"\xc3xbab", b"a\xc3x", b"x\xc3xb\xc3xbx", b"\xc3xb" * 7, b'ab\xc3xb"']
    vocab += [b'\xc3xb", "', b'x\xc3xb", "b']  # allowed in the first string only
    info = TokenizerInfo(vocab, vocab_size=len(vocab), stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
    return CompiledGrammar(info, dfa, kind="regex", source="hand-made"), info


def test_counted_string_that_takes_a_broken_character() -> None:
    """The states of :func:`_broken_character_string`, each computed when first asked for."""
    compiled, info = _broken_character_string()
    inside = compiled.step_bytes(compiled.start_state, b'"')
    assert compiled.automaton.jump_utf8[inside]  # the jump counts characters
    _check_all_states(compiled, info, 3)


@pytest.mark.parametrize(
    "pattern",
    [
        # two free strings: their states loop on one class, and take a character begun and broken apart
        r'\{"a": "[^"\\]*", "b": "[^"\\]*", "c": "[^"\\]*"\}',
        # counted strings: states along chains of one class, at the same depths and not
        r'\{"a": "[^"\\]{0,40}", "b": "[^"\\]{0,40}", "c": "[^"\\]{0,12}", "d": "[^"\\]*"\}',
        None,  # the hand-made chain that takes a broken character
        # accepting states along two chains: their rows take the stop tokens
        r'[^"\\-]{0,30}(-[^"\\-]{0,20})?',
    ],
)
@pytest.mark.parametrize("few_tokens", [0, 1 << 20])
def test_one_batch_of_every_state_matches_brute_force(pattern: str | None, few_tokens: int, monkeypatch) -> None:
    """Every state's mask from one walk: the states that jump one class move through it together.

    Their rows are packed from boolean rows, or from (word, bit) pairs, as ``few_tokens`` says.
    """
    monkeypatch.setattr(token_masks, "_FEW_TOKENS", few_tokens)
    if pattern is None:
        compiled, info = _broken_character_string()
    else:
        # with characters begun and broken by a byte that the string takes
        vocab = _vocab(4) + [b"\xc3ab", b"ab\xc3a", b'\xe2\x82a"', b'\xc3a", "', b'x\xf0\x9f\x98a", "b']
        info = TokenizerInfo(vocab, vocab_size=len(vocab), stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
        compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(pattern)
    view = compiled.automaton
    jumping = np.flatnonzero(view.jump_depth)
    keys = {(view.jump_class[q].tobytes(), int(view.jump_depth[q]), bool(view.has_loop[q])) for q in jumping.tolist()}
    assert jumping.size > len(keys)  # several states share a class jump
    states = np.arange(compiled.num_states)
    batch = compiled._builder.compute(view, states)
    expected = _brute_force(compiled, info)
    for i in range(compiled.num_states):
        _check_mask(batch.mask(i), i, expected, info)


def _words(seed: int) -> list[str]:
    rng = random.Random(seed)
    return sorted({"".join(rng.choice("abxé7 ") for _ in range(rng.randint(1, 12))) for _ in range(300)})


@pytest.mark.parametrize("kind", ["regex", "schema", "choices"])
def test_rows_written_by_the_grammar_match_brute_force(monkeypatch, kind: str) -> None:
    """``fill_row`` into a dirty row, twice per state: short token lists are written from their words.

    Every batch keeps its token lists (none is packed at once), so the first
    use of a short list merges it into the row and the second writes it back
    from the kept words; longer lists, walks and shared masks are copied.
    """
    from tokensieve.compile import mask_cache

    monkeypatch.setattr(mask_cache, "_PACK_AT_ONCE_BYTES", 0)
    info = _info(21)
    compiler = GrammarCompiler(info, precompute=True, cache_enabled=False)
    if kind == "regex":
        compiled = compiler.compile_regex(REGEXES[3])
    elif kind == "schema":
        compiled = compiler.compile_json_schema(SCHEMAS[0], strict=False)
    else:
        compiled = compiler.compile_choices(_words(21))
    expected = _brute_force(compiled, info)
    order = list(range(compiled.num_states))
    random.Random(21).shuffle(order)
    row = np.empty(compiled.num_words, dtype=np.int32)
    for s in order + order:
        row.fill(-1)
        compiled.fill_row(s, row)
        got = np.unpackbits(row.view(np.uint8), bitorder="little")
        assert not got[info.vocab_size :].any(), s
        bad = np.flatnonzero(got[: info.vocab_size].astype(bool) != expected[s])
        assert not bad.size, (s, [info.decoded_vocab[t] for t in bad[:5] if t < len(info.decoded_vocab)])
    assert compiled._sparse  # the short lists were written from their words
    if kind == "choices":  # every word's end is accepting: the stop tokens are written too
        assert any(compiled.is_accepting(s) for s in compiled._sparse)


def test_choice_list_rows_come_from_its_edges() -> None:
    """A choice list's automaton has no table: its rows are read from its edges, one state at a time."""
    info = _info(22)
    words = _words(22)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_choices(words)
    assert compiled._transitions is None
    table = compiled.dfa.transitions  # built from the edge list by the automaton itself
    for s in range(compiled.num_states):
        assert compiled.row(s).tolist() == table[s].tolist(), s
    inside = {w.encode()[:i] for w in words for i in range(len(w.encode()) + 1)}
    for w in words:
        data = w.encode()
        for extra in (b"", b"q", data[:1]):
            end = compiled.step_bytes(compiled.start_state, data + extra)
            assert (end >= 0) == (data + extra in inside), data + extra
        assert compiled.is_accepting(compiled.step_bytes(compiled.start_state, data))


def test_rows_kept_are_bounded(monkeypatch) -> None:
    from tokensieve.compile import compiled_grammar

    monkeypatch.setattr(compiled_grammar, "_MAX_ROWS", 5)
    info = _info(23)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(REGEXES[1])
    table = compiled.dfa.transitions
    for s in list(range(compiled.num_states)) * 2:
        assert compiled.row(s).tolist() == table[s].tolist()
        assert len(compiled._rows) <= 5
