"""W3C-style EBNF as xgrammar accepts it, to a :class:`~tokensieve.ir.grammar.Grammar`.

The notation of the XML specification with xgrammar's changes: rules are
``name ::= body``; names use ``[a-zA-Z0-9_.-]`` and do not start with a digit;
``#`` starts a comment; escapes are C-style. A body is made of

=====================  ==========================================================
``"text"``             a string; escapes ``\\' \\" \\? \\\\ \\a \\b \\f \\n \\r
                       \\t \\v \\0 \\e``, ``\\x`` with one or more hex digits,
                       ``\\uHHHH`` and ``\\UHHHHHHHH``
``[a-z]`` ``[^"\\\\]``    a character class; inside it ``\\^ \\$ \\. \\* \\+ \\?
                       \\( \\) \\[ \\] \\{ \\} \\| \\/ \\-`` are escapes too
``name``               a reference to a rule
``( ... )``            grouping; ``()`` is the empty string
``a | b``              alternatives
``x* x+ x?``           repetition
``x{m} x{m,} x{m,n}``  counted repetition
``(= ...)``            a lookahead assertion, allowed once at the end of a rule
=====================  ==========================================================

Accepted beyond xgrammar (each is an error there, so no grammar xgrammar
accepts changes meaning): ``'text'`` strings, ``/* ... */`` and ``(* ... *)``
comments, ``\\d \\w \\s \\D \\W \\S`` inside classes (ECMA-262 meanings, as in
:mod:`tokensieve.grammar.regex`), a lone ``.`` for any character, ``x{,n}``,
empty alternatives and stacked quantifiers. ``[]`` matches nothing and
``[^]`` any character, as in xgrammar.

Lookahead assertions
--------------------
``rule ::= body (= lookahead)`` is parsed and checked (its rule references must
exist) and then ignored: the rule's language is that of ``body``. In xgrammar
the assertion never changes which strings are accepted (its Earley parser does
not consult it); it is a promise that whatever follows the rule starts with a
match of ``lookahead``, which xgrammar's mask precomputation uses to settle
tokens that cross the end of the rule. When the promise is true the masks are
the same with or without it; when it is false xgrammar can refuse tokens that
lead to valid output (for ``root ::= a "y"`` and ``a ::= "a" a | "a" (= "x")``
it refuses the token ``ay``). tokensieve ignores the assertion, so it accepts
exactly the language of the rules either way.

xgrammar's macros (``TagDispatch(...)``, ``Regex(...)``, ``Token(...)``,
``ExcludeToken(...)``, ``TokenTagDispatch(...)``) and rule attributes are not
supported and raise :class:`~tokensieve.errors.GrammarError`.
"""

from __future__ import annotations

import string

from ..ir.grammar import Grammar
from ..limits import Limits
from ._bnf import Dialect, parse_bnf

__all__ = ["EBNF", "parse_ebnf"]

_START = frozenset(string.ascii_letters + "_-.")

#: The xgrammar EBNF dialect of the BNF parser.
EBNF = Dialect(
    label="EBNF",
    name_start=_START,
    name_chars=_START | frozenset(string.digits),
    escapes={
        "'": 0x27,
        '"': 0x22,
        "?": 0x3F,
        "\\": 0x5C,
        "a": 0x07,
        "b": 0x08,
        "f": 0x0C,
        "n": 0x0A,
        "r": 0x0D,
        "t": 0x09,
        "v": 0x0B,
        "0": 0x00,
        "e": 0x1B,
    },
    class_escapes={c: ord(c) for c in "^$.*+?()[]{}|/-"},
    hex_any_length=True,
    single_quotes=True,
    block_comments=True,
    set_escapes=True,
    lookahead=True,
    empty_class=True,
    dot_is_name=True,
    macros=frozenset({"TagDispatch", "Regex", "Token", "ExcludeToken", "TokenTagDispatch"}),
    rule_attributes=True,
)


def parse_ebnf(text: str, *, root: str = "root", limits: Limits | None = None) -> Grammar:
    """Parse W3C-style EBNF text in xgrammar's dialect.

    Parameters
    ----------
    text
        The grammar.
    root
        Name of the start rule.
    limits
        Resource bounds: ``max_pattern_length`` (grammar size),
        ``max_nesting_depth`` (parentheses) and ``max_repetition`` (``{m,n}``).

    Returns
    -------
    Grammar
        One rule per EBNF rule; lookahead assertions are dropped (see the module notes).

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax, undefined or duplicate rules and a
        missing root, with the line and column of the problem.
    LimitExceeded
        When a limit is exceeded.

    Examples
    --------
    >>> g = parse_ebnf('root ::= "[" item ("," item)* "]"\\nitem ::= [a-z]+')
    >>> g.root
    'root'
    """
    return parse_bnf(text, EBNF, root, limits)
