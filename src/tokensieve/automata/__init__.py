"""Byte automata: regex IR to minimal byte DFAs, and choice lists to acyclic DFAs.

Patterns reach this stage as IR (:func:`tokensieve.grammar.regex.regex_to_dfa`
parses and builds in one call); nothing here reads constraint text.

The pipeline is IR → Thompson NFA over byte ranges (:mod:`.nfa`, code point
classes through :mod:`.utf8`) → subset construction over byte classes
(:mod:`.determinize`) → trimming and Hopcroft minimisation (:mod:`.minimize`) →
:class:`ByteDFA`. Finite string lists skip all of it (:mod:`.choices`).
"""

from __future__ import annotations

from .build import ir_to_dfa
from .choices import choices_to_dfa
from .dfa import ByteDFA

__all__ = ["ByteDFA", "choices_to_dfa", "ir_to_dfa"]
