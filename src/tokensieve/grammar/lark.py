"""Lark grammars to a :class:`~tokensieve.ir.grammar.Grammar`.

Supported syntax
----------------
- Rules (lowercase names) and terminals (UPPERCASE names) defined with ``:``;
  alternatives with ``|``, also at the start of a continuation line; the rule
  modifiers ``?rule``, ``!rule`` and ``_rule``; priorities ``rule.N`` and
  ``TERM.N``; aliases ``-> name``.
- Expressions: ``"literal"``, ``"literal"i``, ``/regex/flags`` (Python ``re``
  syntax, flags ``i m s u x``), ``"a".."z"``, names, ``( ... )``, ``[ ... ]``
  and ``x?`` (optional), ``x*``, ``x+``, ``x~m`` and ``x~m..n``.
- ``%import common.NAME``, ``%import common.NAME -> ALIAS``,
  ``%import common (A, B, ...)``, ``%ignore ...``, ``%override`` and ``%extend``.
- Comments (``//`` and ``#``) and ``\\`` line continuations. Line breaks inside
  ``( )`` and ``[ ]`` are accepted too (Lark rejects them).

The root is ``start`` unless another rule is named.

Semantics
---------
The result is a character-level (scannerless) context-free grammar: terminals
become rules that the automaton stage inlines, so a string belongs to the
language when *some* split of it into tokens parses. That is the language Lark
accepts with its Earley parser and ``lexer="dynamic_complete"``. Lark's other
lexers match terminals greedily or by priority, so they may reject strings
accepted here. For example with ``start: A B``, ``A: "a"+`` and ``B: "a"``,
the text ``aa`` is accepted here, while Lark's default Earley lexer and its
LALR lexers make one ``A`` of both letters and fail; two adjacent ``NAME``
terminals accept ``ab`` here as ``a`` ``b``. Everything Lark accepts is
accepted here.

``%ignore X`` inserts optional repetitions of the ignored patterns between
every two adjacent symbols of every rule body (so between any two tokens),
between the copies of a repeated symbol, and at the start and end of the
input; never inside a terminal. The ignored material lives in a rule named
``%ignore``, which cannot clash with a Lark name.

Priorities (``rule.N``, ``TERM.N``) are parsed and ignored: they choose among
parses or tokenisations of the same text and never change which strings a
character-level grammar accepts. ``?rule``, ``_rule``, ``!rule`` and aliases
shape Lark's parse tree only.

Regular expressions follow Python's ``re``: ``.`` excludes only ``\\n``, and
``\\d``, ``\\w``, ``\\s`` are Unicode-aware (see
:mod:`tokensieve.grammar._pyregex`). Escapes in literals and regexes are
processed as Lark does: ``\\n \\t \\r \\f \\xHH \\uHHHH \\UHHHHHHHH``
become the character, ``\\"`` a quote, ``\\\\`` a backslash, and any other
backslash stays (``"\\d"`` is the two characters ``\\d``).

The common library is provided, written from its documented meaning:
``DIGIT HEXDIGIT INT SIGNED_INT DECIMAL _EXP FLOAT SIGNED_FLOAT NUMBER
SIGNED_NUMBER ESCAPED_STRING LCASE_LETTER UCASE_LETTER LETTER WORD CNAME
WS_INLINE WS CR LF NEWLINE SH_COMMENT CPP_COMMENT C_COMMENT SQL_COMMENT``.
``ESCAPED_STRING`` is what Lark's lexer produces for it: a double-quoted string
without line breaks in which a backslash escapes the next character.

Not supported (each raises :class:`~tokensieve.errors.GrammarError` at its
position): templates (``rule{x}``), ``%declare``, imports from anything but
``common`` (other files, ``%import .x``), regex anchors, lookaround and
backreferences, and the regex flag ``l``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LimitExceeded
from ..ir.grammar import Grammar
from ..ir.nodes import (
    EMPTY,
    RuleRef,
    alt,
    concat,
    optional,
    repeat,
    star,
)
from ..ir.nodes import Node as IRNode
from ..limits import Limits
from ._lark_scan import LarkScanner
from .regex import parse_regex

__all__ = ["COMMON", "IGNORE_RULE", "parse_lark"]

#: Name of the rule that holds the ``%ignore`` material (not a valid Lark name).
IGNORE_RULE = "%ignore"

_COMMON_PATTERNS = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[0-9a-fA-F]",
    "INT": r"[0-9]+",
    "SIGNED_INT": r"[+\-]?[0-9]+",
    "DECIMAL": r"[0-9]+\.[0-9]*|\.[0-9]+",
    "_EXP": r"[eE][+\-]?[0-9]+",
    "FLOAT": r"[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?",
    "SIGNED_FLOAT": r"[+\-]?(?:[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?)",
    "NUMBER": r"[0-9]+(?:[eE][+\-]?[0-9]+)?|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?",
    "SIGNED_NUMBER": r"[+\-]?(?:[0-9]+(?:[eE][+\-]?[0-9]+)?|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?)",
    "ESCAPED_STRING": r'"(?:[^"\\\n]|\\[^\n])*"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[A-Za-z]",
    "WORD": r"[A-Za-z]+",
    "CNAME": r"[_A-Za-z][_A-Za-z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(?:\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "C_COMMENT": r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/",
    "SQL_COMMENT": r"--[^\n]*",
}

#: The terminals of Lark's ``common`` library, as ECMA-262 patterns.
COMMON: dict[str, str] = dict(_COMMON_PATTERNS)

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset("0123456789")
_IGNORE_LINE = re.compile(r"^[ \t]*%ignore\b", re.MULTILINE)


def parse_lark(text: str, *, root: str = "start", limits: Limits | None = None) -> Grammar:
    """Parse a Lark grammar.

    Parameters
    ----------
    text
        The grammar, e.g. the contents of a ``.lark`` file.
    root
        Name of the start rule (a lowercase rule).
    limits
        Resource bounds: ``max_pattern_length`` (grammar size),
        ``max_nesting_depth`` (brackets and regex groups) and
        ``max_repetition`` (``~`` counts and regex quantifiers).

    Returns
    -------
    Grammar
        Rules and terminals as rules; ``%ignore`` material in the rule
        :data:`IGNORE_RULE` (see the module notes for the semantics).

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax, undefined or duplicate names,
        recursive terminals and a missing root, with line and column.
    LimitExceeded
        When a limit is exceeded.

    Examples
    --------
    >>> g = parse_lark('start: NAME ("," NAME)*\\n%import common.CNAME -> NAME\\n%ignore " "')
    >>> sorted(g.rules)
    ['%ignore', 'NAME', 'start']
    """
    if not isinstance(text, str):
        raise TypeError(f"grammar text must be a str, not {type(text).__name__}")
    limits = limits or Limits()
    if len(text) > limits.max_pattern_length:
        raise LimitExceeded(
            "max_pattern_length", limits.max_pattern_length, f"the grammar has {len(text)} characters"
        )
    return _LarkParser(text, limits).parse(root)


@dataclass
class _Definition:
    name: str
    pos: int
    body: IRNode
    terminal: bool


class _Frame:
    """One open ``(`` or ``[``; the outermost frame is the definition body."""

    __slots__ = ("open_pos", "close", "alts", "seq", "quantified")

    def __init__(self, open_pos: int, close: str) -> None:
        self.open_pos = open_pos
        self.close = close  # ")", "]" or "" for the body
        self.alts: list[IRNode] = []
        self.seq: list[IRNode] = []
        self.quantified = False

    def add(self, node: IRNode) -> None:
        self.seq.append(node)
        self.quantified = False


class _LarkParser(LarkScanner):
    def __init__(self, src: str, limits: Limits) -> None:
        super().__init__(src, limits)
        self.ws: IRNode | None = RuleRef(IGNORE_RULE) if _IGNORE_LINE.search(src) else None
        self.defs: dict[str, _Definition] = {}
        self.refs: dict[str, int] = {}  # name -> first reference
        self.term_refs: dict[str, list[tuple[str, int]]] = {}  # terminal -> terminals it uses
        self.ignores: list[IRNode] = []
        self.changes: list[tuple[str, _Definition]] = []  # ("override" | "extend", definition)
        self.imported: dict[str, str] = {}  # local name -> name in the common library

    # -------------------------------------------------------- statements
    def parse(self, root: str) -> Grammar:
        src = self.src
        i = self.skip_lines(0)
        if i >= self.n:
            raise self.error("the Lark grammar defines nothing", i)
        while i < self.n:
            c = src[i]
            if c == "%":
                self.statement(i)
            elif c in _NAME_START or c in "!?":
                self.definition(i, "define")
            else:
                raise self.error(f"expected a rule, a terminal or a statement, found {c!r}", i)
            i = self.skip_lines(self.pos)
        return self.finish(root)

    def statement(self, i: int) -> None:
        word, j = self.read_name(i + 1)
        if word == "ignore":
            body = self.body(j, terminal=True, owner=None)
            self.ignores.append(body)
            self.end_of_line(self.pos, "%ignore")
        elif word == "import":
            self.import_(j)
        elif word in ("override", "extend"):
            k = self.skip_inline(j)
            if k >= self.n or not (self.src[k] in _NAME_START or self.src[k] in "!?"):
                raise self.error(f"expected a definition after %{word}", k)
            self.definition(k, word)
        elif word == "declare":
            raise self.error(
                "%declare is not supported: declared terminals come from a custom lexer, "
                "which a character-level grammar cannot use",
                i,
            )
        else:
            raise self.error(f"unknown statement %{word}", i)

    def import_(self, j: int) -> None:
        src = self.src
        i = self.skip_inline(j)
        path_pos = i
        if src.startswith(".", i):
            raise self.error("relative imports are not supported; only %import common is", i)
        path: list[str] = []
        while True:
            name, k = self.read_name(i)
            if not name:
                raise self.error("expected a name in the import path", i)
            path.append(name)
            if k < self.n and src[k] == ".":
                i = k + 1
            else:
                i = k
                break
        i = self.skip_inline(i)
        items: list[tuple[str, str, int]] = []  # (name in common, local name, position)
        if src.startswith("(", i):
            module = path
            i = self.skip_inline(i + 1)
            while True:
                name, k = self.read_name(i)
                if not name:
                    raise self.error("expected a name in the import list", i)
                items.append((name, name, i))
                i = self.skip_inline(k)
                if src.startswith(",", i):
                    i = self.skip_inline(i + 1)
                elif src.startswith(")", i):
                    i += 1
                    break
                else:
                    raise self.error("expected ',' or ')' in the import list", i)
        else:
            if len(path) < 2:
                raise self.error("expected module.NAME after %import", path_pos)
            module = path[:-1]
            local = path[-1]
            if src.startswith("->", i):
                i = self.skip_inline(i + 2)
                local, k = self.read_name(i)
                if not local:
                    raise self.error("expected a name after '->'", i)
                i = k
            items.append((path[-1], local, path_pos))
        if module != ["common"]:
            raise self.error(
                f"cannot import from {'.'.join(module)!r}: only Lark's common library is available", path_pos
            )
        for name, local, pos in items:
            if name not in COMMON:
                raise self.error(f"the common library has no terminal {name!r}", pos)
            if not self.is_terminal_name(local, pos):
                raise self.error(f"the terminal {name} must be imported under a terminal name", pos)
            if self.imported.get(local) == name:
                continue  # importing the same terminal again changes nothing
            self.imported[local] = name
            self.add_definition(_Definition(local, pos, parse_regex(COMMON[name]), True), "define")
        self.end_of_line(i, "%import")

    def definition(self, i: int, mode: str) -> None:
        src = self.src
        start = i
        modifiers = ""
        while i < self.n and src[i] in "!?":
            modifiers += src[i]
            i += 1
        name, j = self.read_name(i)
        if not name:
            raise self.error("expected a rule or terminal name", i)
        terminal = self.is_terminal_name(name, i)
        if terminal and modifiers:
            raise self.error(f"the modifier {modifiers[0]!r} applies to rules, not terminals", start)
        j = self.skip_inline(j)
        if src.startswith("{", j):
            raise self.error("templates are not supported", j)
        if src.startswith(".", j):  # priority: parsed, and ignored (see the module notes)
            k = j + 1
            if k < self.n and src[k] in "+-":
                k += 1
            m = k
            while m < self.n and src[m] in _DIGITS:
                m += 1
            if m == k:
                raise self.error("expected a number after '.' (a priority)", j)
            j = self.skip_inline(m)
        if not src.startswith(":", j):
            raise self.error(f"expected ':' after {name!r}", j)
        body = self.body(j + 1, terminal=terminal, owner=name if terminal else None)
        self.add_definition(_Definition(name, i, body, terminal), mode)
        self.end_of_line(self.pos, f"the definition of {name!r}")

    def add_definition(self, d: _Definition, mode: str) -> None:
        if mode != "define":
            self.changes.append((mode, d))
            return
        if d.name in self.defs:
            kind = "terminal" if d.terminal else "rule"
            raise self.error(f"{kind} {d.name!r} is defined more than once", d.pos)
        self.defs[d.name] = d

    # -------------------------------------------------------------- bodies
    def body(self, i: int, *, terminal: bool, owner: str | None) -> IRNode:
        """Parse expansions from ``i`` to the end of the definition; ``self.pos`` is left there."""
        src, n = self.src, self.n
        stack = [_Frame(-1, "")]
        frame = stack[0]
        while True:
            i = self.skip_inline(i)
            if i >= n:
                break
            c = src[i]
            if c in "\r\n":
                j = self.skip_lines(i)
                if len(stack) > 1 or (j < n and src[j] == "|"):
                    i = j
                    continue
                break
            if c == '"':
                node, i = self.string_or_range(i)
                frame.add(node)
            elif c == "/" and not src.startswith("//", i):
                node, i = self.regex(i)
                frame.add(node)
            elif c in _NAME_START:
                name, j = self.read_name(i)
                is_term = self.is_terminal_name(name, i)
                if src.startswith("{", j):
                    raise self.error("templates are not supported", i)
                if terminal and not is_term:
                    raise self.error(f"rules cannot be used inside terminals (found {name!r})", i)
                self.refs.setdefault(name, i)
                if terminal and owner is not None:
                    self.term_refs.setdefault(owner, []).append((name, i))
                frame.add(RuleRef(name))
                i = j
            elif c in "([":
                if len(stack) > self.limits.max_nesting_depth:
                    raise LimitExceeded(
                        "max_nesting_depth",
                        self.limits.max_nesting_depth,
                        f"groups nested too deeply at line {src.count(chr(10), 0, i) + 1}",
                    )
                frame = _Frame(i, ")" if c == "(" else "]")
                stack.append(frame)
                i += 1
            elif c in ")]":
                if len(stack) == 1 or frame.close != c:
                    raise self.error(f"unbalanced {c!r}", i)
                done = stack.pop()
                frame = stack[-1]
                node = self.finish_frame(done, terminal)
                frame.add(optional(node) if c == "]" else node)
                i += 1
            elif c == "|":
                frame.alts.append(self.sequence(frame.seq, terminal))
                frame.seq = []
                frame.quantified = False
                i += 1
            elif c in "*+?":
                if c == "?" and i + 1 < n and src[i + 1] in _LOWER:
                    raise self.error("the '?' and '!' prefixes are only allowed where a rule is defined", i)
                self.quantify(frame, i, 1 if c == "+" else 0, 1 if c == "?" else None, terminal)
                i += 1
            elif c == "~":
                low, high, j = self.tilde(i)
                self.quantify(frame, i, low, high, terminal)
                i = j
            elif src.startswith("->", i):
                j = self.skip_inline(i + 2)
                alias, j = self.read_name(j)
                if not alias:
                    raise self.error("expected a name after '->'", i)
                i = j
            elif c == "!":
                raise self.error("the '?' and '!' prefixes are only allowed where a rule is defined", i)
            elif c == "{":
                raise self.error("'{' is not Lark syntax here (templates are not supported; use x~m..n)", i)
            elif c == "%":
                raise self.error("a statement must start its own line", i)
            else:
                raise self.error(f"unexpected character {c!r}", i)
        if len(stack) > 1:
            raise self.error(f"unclosed {src[stack[-1].open_pos]!r}", stack[-1].open_pos)
        self.pos = i
        return self.finish_frame(frame, terminal)

    def finish_frame(self, frame: _Frame, terminal: bool) -> IRNode:
        frame.alts.append(self.sequence(frame.seq, terminal))
        return alt(*frame.alts)

    def sequence(self, items: list[IRNode], terminal: bool) -> IRNode:
        if terminal or self.ws is None or len(items) < 2:
            return concat(*items)
        parts: list[IRNode] = [items[0]]
        for item in items[1:]:
            parts.append(self.ws)
            parts.append(item)
        return concat(*parts)

    def quantify(self, frame: _Frame, pos: int, low: int, high: int | None, terminal: bool) -> None:
        if not frame.seq:
            raise self.error("nothing to repeat before this operator", pos)
        if frame.quantified:
            raise self.error("only one operator may follow an item (use parentheses)", pos)
        item = frame.seq[-1]
        if terminal or self.ws is None:
            node = repeat(item, low, high)
        elif high == 0:
            node = EMPTY
        else:
            # copies of a symbol are separated by ignored material like any two symbols
            more = repeat(concat(self.ws, item), max(low - 1, 0), None if high is None else high - 1)
            node = concat(item, more)
            if low == 0:
                node = optional(node)
        frame.seq[-1] = node
        frame.quantified = True

    def tilde(self, i: int) -> tuple[int, int, int]:
        """``~ m`` or ``~ m..n`` at ``i``; returns the bounds and the end."""
        j = self.skip_inline(i + 1)
        low, j = self.number(j)
        high = low
        k = self.skip_inline(j)
        if self.src.startswith("..", k):
            high, j = self.number(self.skip_inline(k + 2))
        if high < low:
            raise self.error(f"bad repetition bounds ~{low}..{high}: the minimum exceeds the maximum", i)
        return low, high, j

    # ----------------------------------------------------------- assembly
    def finish(self, root: str) -> Grammar:
        for mode, d in self.changes:
            old = self.defs.get(d.name)
            if old is None:
                raise self.error(f"cannot %{mode} {d.name!r}: it is not defined", d.pos)
            body = d.body if mode == "override" else alt(old.body, d.body)
            self.defs[d.name] = _Definition(d.name, old.pos, body, old.terminal)
        for name, pos in self.refs.items():
            if name not in self.defs:
                kind = "terminal" if name.lstrip("_")[:1].isupper() else "rule"
                raise self.error(f"undefined {kind} {name!r}", pos)
        self.check_terminal_cycles()
        if root not in self.defs:
            raise self.error(f"the grammar has no rule named {root!r} to start from", 0)
        if self.defs[root].terminal:
            raise self.error(
                f"the start symbol must be a rule, not the terminal {root!r}", self.defs[root].pos
            )
        rules = {name: d.body for name, d in self.defs.items()}
        if self.ws is not None:
            rules[IGNORE_RULE] = star(alt(*self.ignores)) if self.ignores else EMPTY
            rules[root] = concat(self.ws, rules[root], self.ws)
        return Grammar(rules, root)

    def check_terminal_cycles(self) -> None:
        state: dict[str, int] = {}  # 1: on the path, 2: done
        for start in self.term_refs:
            if state.get(start):
                continue
            state[start] = 1
            path: list[tuple[str, int]] = [(start, 0)]
            while path:
                name, k = path[-1]
                uses = self.term_refs.get(name, [])
                if k == len(uses):
                    state[name] = 2
                    path.pop()
                    continue
                path[-1] = (name, k + 1)
                ref, pos = uses[k]
                if state.get(ref) == 1:
                    raise self.error(f"terminal {ref!r} is recursive (terminals must be regular)", pos)
                if not state.get(ref):
                    state[ref] = 1
                    path.append((ref, 0))
