"""The IR :class:`~tokensieve.ir.grammar.Grammar` with its constructors from grammar text.

The grammar value itself lives in :mod:`tokensieve.ir.grammar`, below the
front ends and the automaton stage, which therefore cannot name the parsers;
this subclass adds what only the front ends know: reading GBNF, EBNF and Lark
text. It compares equal to an IR grammar of the same rules and root, and
everything that takes a grammar takes either.
"""

from __future__ import annotations

from ..ir import grammar as _ir
from ..ir.grammar import referenced_rules
from .ebnf import parse_ebnf
from .gbnf import parse_gbnf
from .lark import parse_lark

__all__ = ["Grammar", "referenced_rules"]


class Grammar(_ir.Grammar):
    """A context-free grammar over bytes (see :class:`tokensieve.ir.grammar.Grammar`), readable from text."""

    @classmethod
    def _of(cls, grammar: _ir.Grammar) -> Grammar:
        """``grammar`` as this class (already checked: not checked again)."""
        made = object.__new__(cls)
        object.__setattr__(made, "root", grammar.root)
        made._settle(
            dict(grammar.rules), {name: grammar.references(name) for name in grammar.rules}, dict(grammar.unordered)
        )
        return made

    @classmethod
    def from_gbnf(cls, text: str, *, root: str = "root") -> Grammar:
        """Parse llama.cpp GBNF text (see :mod:`tokensieve.grammar.gbnf`)."""
        return cls._of(parse_gbnf(text, root=root))

    @classmethod
    def from_ebnf(cls, text: str, *, root: str = "root") -> Grammar:
        """Parse W3C-style EBNF text as xgrammar accepts it (see :mod:`tokensieve.grammar.ebnf`)."""
        return cls._of(parse_ebnf(text, root=root))

    @classmethod
    def from_lark(cls, text: str, *, root: str = "start") -> Grammar:
        """Parse a Lark grammar (see :mod:`tokensieve.grammar.lark`)."""
        return cls._of(parse_lark(text, root=root))
