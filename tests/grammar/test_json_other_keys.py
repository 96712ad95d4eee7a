"""The content of the keys an object does not name, built directly.

Oracles: the general difference of the any-string automaton and the keys'
spellings (:func:`tokensieve.automata.ops.ir_difference`), compared as languages
and by state count (it is minimal), and ``json.loads`` of spellings written here
(raw, short escapes, ``\\uXXXX`` in random letter case, surrogate pairs): a
spelling is accepted exactly when its decoded text is not a named key.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.automata import ops
from tokensieve.errors import LimitExceeded
from tokensieve.grammar.ir import alt, is_nothing
from tokensieve.grammar.json_schema import _lexical as lx
from tokensieve.grammar.json_schema._other_keys import other_keys_content
from tokensieve.limits import Limits

LIMITS = Limits()

KEY_SETS = [
    ["a"],
    [""],
    ["", "a"],
    ["name", "game", "frame"],  # common suffixes
    ["a", "ab", "abc", "b"],  # keys that are prefixes of others
    ["id", "id", "x"],  # a repeat
    ["café", "naïve", "é"],  # two-byte characters: raw and \u00e9 / \u00E9
    ["😀", "a😀b", "𝄞"],  # beyond the BMP: raw and escaped surrogate pairs
    ['q"uote', "back\\slash", "sl/ash"],  # short escapes \" \\ \/
    ["tab\tnl\n", "\x00", "\x1f\x7f"],  # control characters: only escapes
    ["日本語", "日本", "本"],
    ["user_id", "created_at", "updated_at", "deleted_at", "owner_id", "x-extra", "$ref"],
]


def _general(keys: list[str]):
    spelled = alt(*(lx.string_literal_content(k) for k in keys))
    return ops.ir_difference(lx.any_string_content(), spelled, LIMITS)


def _same_language(x, y) -> bool:
    return is_nothing(ops.ir_difference(x, y, LIMITS)) and is_nothing(ops.ir_difference(y, x, LIMITS))


@pytest.mark.parametrize("keys", KEY_SETS, ids=lambda k: ",".join(map(ascii, k))[:40])
def test_equals_the_general_difference(keys: list[str]) -> None:
    direct = other_keys_content(keys, LIMITS)
    assert direct is not None
    general = _general(keys)
    assert _same_language(direct, general)
    assert direct.num_states == general.num_states  # minimal


_ALPHABET = st.sampled_from(["a", "b", "é", "😀", '"', "\\", "/", "\n", "\x01", "本", "\u2028"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=4), min_size=1, max_size=6))
def test_random_key_sets_equal_the_general_difference(keys: list[str]) -> None:
    direct = other_keys_content(keys, LIMITS)
    assert direct is not None
    general = _general(keys)
    assert _same_language(direct, general)
    assert direct.num_states == general.num_states


_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _hex4(value: int, rng: random.Random) -> str:
    return "".join(d.upper() if rng.random() < 0.5 else d for d in f"{value:04x}")


def _spell(text: str, rng: random.Random) -> str:
    """One spelling of ``text`` between quotes, chosen at random among those JSON strings allow here."""
    out = []
    for c in text:
        cp = ord(c)
        ways = []
        if cp >= 0x20 and c not in '"\\':
            ways.append(c)
        if c in _SHORT:
            ways.append(_SHORT[c])
        if cp > 0xFFFF:
            high, low = divmod(cp - 0x10000, 0x400)
            ways.append("\\u" + _hex4(0xD800 + high, rng) + "\\u" + _hex4(0xDC00 + low, rng))
        elif not (0x20 <= cp <= 0x7E and c not in '"\\'):  # printable ASCII is spelled as itself
            ways.append("\\u" + _hex4(cp, rng))
        out.append(rng.choice(ways))
    return "".join(out)


def _near(keys: list[str], rng: random.Random) -> str:
    """A key, or a key changed by one character, or a random short text."""
    alphabet = 'ab/é😀\n"\\本x'
    key = rng.choice(keys)
    roll = rng.random()
    if roll < 0.3:
        return key
    if roll < 0.5 and key:
        return key[:-1]
    if roll < 0.7:
        return key + rng.choice(alphabet)
    if roll < 0.85 and key:
        i = rng.randrange(len(key))
        return key[:i] + rng.choice(alphabet) + key[i + 1 :]
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))


@pytest.mark.parametrize("keys", KEY_SETS, ids=lambda k: ",".join(map(ascii, k))[:40])
def test_spellings_against_json_loads(keys: list[str]) -> None:
    direct = other_keys_content(keys, LIMITS)
    assert direct is not None
    dfa = ops.automaton_to_dfa(direct)
    rng = random.Random(sum(map(len, keys)))
    named = set(keys)
    for _ in range(400):
        spelled = _spell(_near(keys, rng), rng)
        decoded = json.loads('"' + spelled + '"')
        assert dfa.accepts(spelled.encode("utf-8")) == (decoded not in named), (keys, spelled)


def test_a_spelling_outside_json_strings_is_refused() -> None:
    dfa = ops.automaton_to_dfa(other_keys_content(["a"], LIMITS))
    for text in [
        '"',
        "\\",
        "\\u00",
        "\\x",
        "\n",
        "\\ud83d",
        "\\ud83dx",
        "\\u0062",
    ]:  # \u0062: b, spelled as itself
        assert not dfa.accepts(text.encode("utf-8")), text


def test_keys_with_surrogates_are_left_to_the_general_difference() -> None:
    assert other_keys_content(["a\ud800"], LIMITS) is None


def test_limits_bound_the_result() -> None:
    keys = [f"key{i:05d}" for i in range(2000)]
    with pytest.raises(LimitExceeded) as err:
        other_keys_content(keys, Limits(max_dfa_states=500))
    assert err.value.limit == "max_dfa_states"
    with pytest.raises(LimitExceeded) as err:
        other_keys_content(keys, Limits(max_compile_work=256 * 300))
    assert err.value.limit == "max_compile_work"
