"""Independent oracles for token masks.

``viable_by_regex`` uses the third-party ``regex`` module's partial matching on
text (it knows nothing of our automata); ``allowed_by_dfa`` runs every token's
bytes through a DFA one by one (no trie, no vectorisation).
"""

from __future__ import annotations

import numpy as np
import regex

from tokensieve.bitmask import bitmask_to_bool

_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_ECMA = {
    "d": ("[0-9]", "0-9"),
    "D": ("[^0-9]", "[^0-9]"),
    "w": ("[A-Za-z0-9_]", "A-Za-z0-9_"),
    "W": ("[^A-Za-z0-9_]", "[^A-Za-z0-9_]"),
    "s": (f"[{_SPACE}]", _SPACE),
    "S": (f"[^{_SPACE}]", f"[^{_SPACE}]"),
}


def ecma_to_regex(pattern: str) -> str:
    """Rewrite the ECMA-262 meanings of ``\\d \\w \\s`` and ``.`` for the ``regex`` module.

    Python's classes are Unicode-aware (``\\d`` matches Thai digits) and its ``.``
    only excludes ``\\n``; ECMA-262's ``\\d`` and ``\\w`` are ASCII and its ``.``
    excludes every line terminator. Lazy quantifiers become greedy. Inside classes negated escapes become V1
    nested sets.
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e in _ECMA:
                out.append(_ECMA[e][1 if in_class else 0])
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                out.append("\\]")
                i += 1
        elif c == "]" and in_class:
            in_class = False
            out.append(c)
        elif c == "[" and in_class:
            out.append("\\[")
        elif c in "*+?}" and not in_class and pattern[i + 1 : i + 2] == "?":
            out.append(c)  # lazy quantifiers: the same language; ``regex``'s partial matching mishandles them
            i += 1
        elif c == "." and not in_class:
            out.append("[^\\n\\r\\u2028\\u2029]")
        else:
            out.append(c)
        i += 1
    return "(?V1)" + "".join(out)


def viable_by_regex(pattern: str, data: bytes) -> bool | None:
    """Whether ``data`` is a prefix of some full match; None if ``data`` is not whole UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return regex.fullmatch(ecma_to_regex(pattern), text, partial=True) is not None


def complete_by_regex(pattern: str, data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return regex.fullmatch(ecma_to_regex(pattern), text) is not None


def allowed_by_dfa(dfa, state: int, vocab: list[bytes], skip: set[int]) -> np.ndarray:
    out = np.zeros(len(vocab), dtype=bool)
    rows = dfa.transitions.tolist()
    for i, tok in enumerate(vocab):
        if i in skip or not tok:
            continue
        q = state
        for b in tok:
            q = rows[q][b]
            if q < 0:
                break
        out[i] = q >= 0
    return out


def mask_to_set(words: np.ndarray, vocab_size: int) -> set[int]:
    return set(np.flatnonzero(bitmask_to_bool(words[None, :], vocab_size)[0]).tolist())
