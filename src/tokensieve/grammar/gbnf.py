"""GBNF, the grammar syntax of llama.cpp, to a :class:`~tokensieve.ir.grammar.Grammar`.

A grammar is a list of rules ``name ::= body``. Rule names use ``[a-zA-Z0-9-]``
(``_`` is accepted too). A body is made of

=====================  ==========================================================
``"text"``             a string; escapes ``\\n \\t \\r \\\\ \\" \\[ \\] \\-``,
                       ``\\xHH``, ``\\uHHHH`` and ``\\UHHHHHHHH`` (code points)
``[a-z]`` ``[^"\\\\]``    a character class, optionally negated; the same escapes
``.``                  any character
``name``               a reference to a rule
``( ... )``            grouping
``a | b``              alternatives (an alternative may be empty)
``x* x+ x?``           repetition; quantifiers may be stacked as in llama.cpp
``x{m} x{m,} x{m,n}``  counted repetition; ``x{,n}`` means ``x{0,n}``
``# ...``              a comment to the end of the line
=====================  ==========================================================

Grammars are over Unicode characters (UTF-8 encoded): ``\\xFF`` is U+00FF, not
the byte 0xFF, as in llama.cpp. Line breaks are white space, except that a rule
name followed by ``::=`` starts a new rule and must begin its line; on every
grammar llama.cpp accepts this reads the same as llama.cpp's own rule (see
:mod:`tokensieve.grammar._bnf`). llama.cpp's token references (``<[id]>``,
``<token>``, ``!<...>``) name tokens of one vocabulary and are rejected, as is
an empty class ``[]``. Unknown escapes, undefined and duplicate rules, bad
bounds and unterminated strings are :class:`~tokensieve.errors.GrammarError`
with line and column.
"""

from __future__ import annotations

import string

from ..ir.grammar import Grammar
from ..limits import Limits
from ._bnf import Dialect, parse_bnf

__all__ = ["GBNF", "parse_gbnf"]

_NAME = frozenset(string.ascii_letters + string.digits + "-_")

#: The GBNF dialect of the BNF parser.
GBNF = Dialect(
    label="GBNF",
    name_start=_NAME,
    name_chars=_NAME,
    escapes={
        "n": 0x0A,
        "t": 0x09,
        "r": 0x0D,
        "\\": 0x5C,
        '"': 0x22,
        "[": 0x5B,
        "]": 0x5D,
        "-": 0x2D,
    },
    newline_in_literals=True,
    token_refs=True,
)


def parse_gbnf(text: str, *, root: str = "root", limits: Limits | None = None) -> Grammar:
    """Parse llama.cpp GBNF text.

    Parameters
    ----------
    text
        The grammar, e.g. the contents of a ``.gbnf`` file.
    root
        Name of the start rule (llama.cpp uses ``root``).
    limits
        Resource bounds: ``max_pattern_length`` (grammar size),
        ``max_nesting_depth`` (parentheses) and ``max_repetition`` (``{m,n}``).

    Returns
    -------
    Grammar
        One rule per GBNF rule, bodies in the regex IR.

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax, undefined or duplicate rules and a
        missing root, with the line and column of the problem.
    LimitExceeded
        When a limit is exceeded.

    Examples
    --------
    >>> g = parse_gbnf('root ::= "a" digit+\\ndigit ::= [0-9]')
    >>> sorted(g.rules)
    ['digit', 'root']
    """
    return parse_bnf(text, GBNF, root, limits)
