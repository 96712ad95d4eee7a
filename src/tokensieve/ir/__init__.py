"""The intermediate form between the front ends and the automaton stage.

:mod:`.nodes` holds the regular-expression nodes over bytes (literals, classes,
concatenation, alternation, repetition, rule references, embedded automata),
:mod:`.grammar` the :class:`Grammar` of named rules built from them. Every front
end (``tokensieve.grammar``) produces these values and every automaton builder
(``tokensieve.automata``) reads them; this package imports neither.
"""

from __future__ import annotations

from .grammar import Grammar, Unordered, referenced_rules
from .nodes import (
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    SURROGATES,
    Alt,
    Automaton,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    alt,
    byte_class,
    char_class,
    complement_ranges,
    concat,
    is_nothing,
    literal,
    normalize_ranges,
    optional,
    plus,
    repeat,
    star,
)

__all__ = [
    "EMPTY",
    "MAX_CODE_POINT",
    "NOTHING",
    "SURROGATES",
    "Alt",
    "Automaton",
    "ByteClass",
    "CharClass",
    "Concat",
    "Empty",
    "Grammar",
    "Unordered",
    "Literal",
    "Node",
    "Repeat",
    "RuleRef",
    "alt",
    "byte_class",
    "char_class",
    "complement_ranges",
    "concat",
    "is_nothing",
    "literal",
    "normalize_ranges",
    "optional",
    "plus",
    "referenced_rules",
    "repeat",
    "star",
]
