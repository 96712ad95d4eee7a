"""Regex and choice-list workloads shared by every engine in the benchmark.

Each workload is a constraint plus several strings in its language; the harness
tokenizes each string and walks it token by token through every engine.

Patterns are written with explicit ASCII classes (``[0-9]``, ``[a-z]``) rather than
``\\d`` / ``\\w``: in the Rust ``regex``-syntax engines (llguidance, outlines-core)
``\\d`` means every Unicode decimal digit, while in tokensieve and xgrammar it means
``[0-9]``. Writing ``[0-9]`` keeps the language, and so the masks, identical across
engines.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Workload", "WORKLOADS", "alternation_regex", "escape_regex", "pseudo_words"]

Kind = Literal["regex", "choices"]

# Characters that carry meaning in the regex dialects of all four engines.
_REGEX_META = set("\\^$.|?*+()[]{}/")


@dataclass(frozen=True)
class Workload:
    """One benchmark case.

    Attributes
    ----------
    name
        Short identifier used in tables.
    kind
        ``"regex"``: ``constraint`` is a pattern that the whole output must match.
        ``"choices"``: ``constraint`` is a list of literal strings; the output must
        equal one of them.
    constraint
        The pattern (``str``) or the choice list (``tuple[str, ...]``).
    examples
        Strings in the language; each is walked token by token.
    """

    name: str
    kind: Kind
    constraint: str | tuple[str, ...]
    examples: tuple[str, ...]

    def as_regex(self) -> str:
        """The constraint as one regex (choice lists become an escaped alternation)."""
        if isinstance(self.constraint, str):
            return self.constraint
        return alternation_regex(self.constraint)

    def check(self) -> None:
        """Raise ``ValueError`` if an example is not in the workload's language."""
        pattern = re.compile(self.as_regex())
        for example in self.examples:
            if pattern.fullmatch(example) is None:
                raise ValueError(f"workload {self.name!r}: example {example!r} does not match")


def escape_regex(text: str) -> str:
    """Escape ``text`` so every engine's regex dialect reads it literally.

    Only ASCII metacharacters are escaped (``re.escape`` also escapes characters
    such as space or ``#``, which some dialects reject as unknown escapes).
    """
    return "".join("\\" + ch if ch in _REGEX_META else ch for ch in text)


def alternation_regex(choices: tuple[str, ...] | list[str]) -> str:
    """``(c1|c2|...)`` with every entry escaped: the regex equivalent of a choice list."""
    return "(" + "|".join(escape_regex(c) for c in choices) + ")"


def pseudo_words(count: int, seed: int = 20240911) -> list[str]:
    """``count`` distinct pronounceable pseudo-words, deterministic for a seed.

    Words are 2-5 consonant-vowel syllables, so a typical word is split into
    several tokens by a BPE vocabulary and shares prefixes with others (the trie
    of choices has real branching).
    """
    rng = random.Random(seed)
    onsets = [
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "j",
        "k",
        "l",
        "m",
        "n",
        "p",
        "qu",
        "r",
        "s",
        "t",
        "v",
        "w",
        "z",
        "br",
        "ch",
        "cl",
        "dr",
        "fl",
        "gr",
        "pl",
        "sh",
        "st",
        "th",
        "tr",
    ]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
    codas = ["", "", "", "n", "r", "s", "l", "x", "nd", "st"]
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        n = rng.randint(2, 5)
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(n)) + rng.choice(codas)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

_TWENTY_WORDS = (
    "apple",
    "banana",
    "cherry",
    "dragonfruit",
    "elderberry",
    "fig",
    "grape",
    "honeydew",
    "kiwi",
    "lemon",
    "mango",
    "nectarine",
    "orange",
    "papaya",
    "quince",
    "raspberry",
    "strawberry",
    "tangerine",
    "watermelon",
    "blackcurrant",
)

_CHOICES_2000 = tuple(pseudo_words(2000))

WORKLOADS: list[Workload] = [
    Workload(
        name="date",
        kind="regex",
        constraint="[0-9]{4}-[0-9]{2}-[0-9]{2}",
        examples=(
            "2024-09-11",
            "1999-12-31",
            "2000-01-01",
            "1970-06-15",
            "2038-01-19",
            "1066-10-14",
            "2100-02-28",
            "0001-01-01",
        ),
    ),
    Workload(
        name="email",
        kind="regex",
        constraint=r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.[a-zA-Z]{2,}",
        examples=(
            "john.doe@example.com",
            "alice+newsletter@mail.example.org",
            "Bob_Smith-99@sub.domain.co.uk",
            "x@y.io",
            "first.last%tag@university-of-somewhere.edu",
            "support@tokensieve.dev",
            "very.long.local.part.with.many.dots@a-b-c.example.museum",
        ),
    ),
    Workload(
        name="ipv4",
        kind="regex",
        constraint=rf"({_OCTET}\.){{3}}{_OCTET}",
        examples=(
            "192.168.0.1",
            "10.0.0.255",
            "255.255.255.255",
            "0.0.0.0",
            "172.16.254.1",
            "8.8.4.4",
            "127.0.0.1",
            "203.0.113.195",
            "198.51.100.42",
            "100.64.12.250",
        ),
    ),
    Workload(
        name="words",
        kind="regex",
        constraint="[a-z]+( [a-z]+)*",
        examples=(
            "the quick brown fox jumps over the lazy dog",
            "constrained decoding makes the output of a language model valid by construction",
            "every step computes the set of tokens that keep the output a prefix of the language",
            "a bitmask over the vocabulary tells the sampler which tokens it may draw",
            "permissive states are the hard case because almost every token is allowed",
            "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
        ),
    ),
    Workload(
        name="alt20",
        kind="regex",
        constraint="(" + "|".join(_TWENTY_WORDS) + ")",
        examples=_TWENTY_WORDS,
    ),
    Workload(
        name="choices2000",
        kind="choices",
        constraint=_CHOICES_2000,
        examples=tuple(_CHOICES_2000[i] for i in range(0, 2000, 100)),
    ),
]

for _w in WORKLOADS:
    _w.check()
