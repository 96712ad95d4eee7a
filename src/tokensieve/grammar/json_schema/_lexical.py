"""JSON tokens in the IR: whitespace layouts, strings, numbers and literal values.

The string, number and format languages come from :mod:`tokensieve.grammar.json_strings`,
:mod:`tokensieve.grammar.json_numbers` and :mod:`tokensieve.grammar.json_formats`;
the automata built from them, and their products and differences, from
:mod:`tokensieve.grammar.json_automata`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from ..._memo import memoized
from ...automata.blank_runs import BLANK
from ...automata.counted import blank_run
from ...ir.nodes import (
    EMPTY,
    NOTHING,
    Node,
    RuleRef,
    byte_class,
    concat,
    is_nothing,
    literal,
    optional,
    plus,
    star,
)
from ...ir.nodes import alt as _alt
from ...limits import Limits
from .. import json_formats as _formats
from .. import json_numbers as _numbers
from .. import json_strings as _strings
from ..json_automata import counted, embedded
from ..json_automata import difference as difference
from ..json_automata import intersect as intersect
from ..json_automata import is_empty as is_empty

alt = _alt

WS_CHAR = BLANK
_DIGIT = byte_class([(0x30, 0x39)])
_DIGIT19 = byte_class([(0x31, 0x39)])


# ------------------------------------------------------------------ strings
def string_char() -> Node:
    """One character of a JSON string as it is written (raw or escaped)."""
    return _strings.json_string_char()


@memoized(max_entries=1)
def any_string_content() -> Node:
    """The content (between the quotes) of any JSON string.

    As an embedded automaton (built once per process): the expression of every spelling of a
    character (raw UTF-8, short and ``\\uXXXX`` escapes, surrogate pairs) is
    some forty IR nodes, which every string of a schema would otherwise expand
    and determinise again; the automaton's 25 states go in as they are (a
    closed object of a few string properties: about 0.7 of its compile time).
    """
    return embedded(star(string_char()))


#: automaton states per character of a length-bounded string (every spelling of a character:
#: raw UTF-8 of up to 4 bytes, short escapes, ``\\uXXXX`` escapes and surrogate pairs)
STATES_PER_CHARACTER = 25


#: length bounds from which a string's content is one embedded automaton (built by layers, and
#: spliced whole into the schema's automaton rather than determinised with it)
COUNTED_FROM = 8


def string_length(min_length: int, max_length: int | None, limits: Any = None) -> Node:
    """Content of strings of ``min_length`` to ``max_length`` characters."""
    if max(min_length, max_length or 0) >= COUNTED_FROM and (max_length is None or max_length >= min_length):
        built = counted(_strings.json_string_char(), min_length, max_length, limits or Limits())
        if built is not None:
            return built
    return _strings.json_string_length(min_length, max_length)


def content_of(node: Node) -> Node:
    """Every written form of the decoded text ``node`` (a language over characters)."""
    return _strings.json_string_content(node)


def string_literal_content(text: str) -> Node:
    """Written forms of the string ``text`` (between the quotes)."""
    return _strings.json_string_content(literal(text))


def pattern_content(pattern: str, limits: Any) -> Node:
    """Content of the strings that contain a match of the ECMA ``pattern``."""
    return _strings.json_string_pattern(pattern, limits)


@memoized(max_entries=64)
def format_content(name: str) -> Node | None:
    """Content of the strings of a ``format`` (None: not known).

    Formats with large automata (``date-time``, ``time``, ``email``: hundreds of
    states) come as one embedded automaton, built once per process, which the
    schema's automaton splices in whole instead of determinising it again.
    """
    node = _formats.format_content(name)
    if node is None:
        return None
    return embedded(content_of(node), large_only=True)


def quoted(content: Node) -> Node:
    """A JSON string with the given content."""
    return concat(literal('"'), content, literal('"'))


# ------------------------------------------------------------------ numbers
_INT_PART = _alt(literal("0"), concat(_DIGIT19, star(_DIGIT)))
_FRAC = concat(literal("."), plus(_DIGIT))
_EXP = concat(
    byte_class([(0x45, 0x45), (0x65, 0x65)]), optional(byte_class([(0x2B, 0x2B), (0x2D, 0x2D)])), plus(_DIGIT)
)
ANY_NUMBER = concat(optional(literal("-")), _INT_PART, optional(_FRAC), optional(_EXP))
# numbers with a non-zero fraction digit, without an exponent (sure not to be integers)
NON_INTEGER = concat(optional(literal("-")), _INT_PART, literal("."), star(_DIGIT), _DIGIT19, star(_DIGIT))
# integers, also written with a zero fraction (1.0)
ANY_INTEGER = concat(optional(literal("-")), _INT_PART, optional(concat(literal("."), plus(literal("0")))))


def number_node(
    integer: bool,
    minimum: float | None,
    maximum: float | None,
    exclusive_minimum: float | None,
    exclusive_maximum: float | None,
    multiple_of: float | None,
    limits: Any = None,
) -> Node | None:
    """Numbers within the bounds (None: not expressible)."""
    fn = _numbers.json_integer if integer else _numbers.json_number
    try:
        return fn(
            minimum,
            maximum,
            exclusive_minimum=exclusive_minimum,
            exclusive_maximum=exclusive_maximum,
            multiple_of=multiple_of,
            limits=limits,
        )
    except NotImplementedError:
        return None


def number_literal(value: int | float) -> Node:
    """Spellings of one number: ``5`` also as ``5.0``, ``5.00``...; others as ``repr`` writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return NOTHING
    if isinstance(value, int) or value.is_integer():
        n = int(value)
        text = str(n)
        if n == 0:
            return concat(
                optional(literal("-")), literal("0"), optional(concat(literal("."), plus(literal("0"))))
            )
        return concat(literal(text), optional(concat(literal("."), plus(literal("0")))))
    return literal(repr(float(value)))


# ------------------------------------------------------------------- layout
@memoized(max_entries=16)
def _ws_run(most: int) -> Node:
    return blank_run(most)


@dataclass(frozen=True)
class Layout:
    """Where whitespace may go between the tokens of a JSON value.

    ``indent`` set: exactly ``json.dumps(indent=N)``; otherwise flexible (runs of
    at most ``max_whitespace`` blanks) or compact (none).
    """

    mode: str  # "flexible" | "compact" | "indent"
    indent: int = 0
    max_whitespace: int = 32
    #: runs written unbounded, ``[ \t\n\r]*``, for the automaton stage to count
    #: (:func:`~tokensieve.automata.blank_runs.bound_blank_runs`)
    runs_counted_later: bool = False

    @property
    def ws(self) -> Node:
        if self.mode == "flexible" and self.max_whitespace > 0:
            return star(WS_CHAR) if self.runs_counted_later else _ws_run(self.max_whitespace)
        return EMPTY

    def _nl(self, depth: int) -> Node:
        return literal("\n" + " " * (self.indent * depth))

    def open(self, depth: int) -> Node:
        """After ``{`` or ``[`` of a non-empty container at ``depth``."""
        return self._nl(depth + 1) if self.mode == "indent" else self.ws

    def sep(self, depth: int) -> Node:
        """Between the members of a container at ``depth``."""
        if self.mode == "indent":
            return concat(literal(","), self._nl(depth + 1))
        return concat(self.ws, literal(","), self.ws)

    def close(self, depth: int) -> Node:
        """Before ``}`` or ``]`` of a non-empty container."""
        return self._nl(depth) if self.mode == "indent" else self.ws

    def empty(self) -> Node:
        """Inside an empty container."""
        return self.ws if self.mode == "flexible" else EMPTY

    @property
    def colon(self) -> Node:
        if self.mode == "indent":
            return literal(": ")
        return concat(self.ws, literal(":"), self.ws)


def container_parts(
    open_: str, close_: str, empty_ok: bool, layout: Layout, depth: int
) -> tuple[Node, Node, Node | None]:
    """A container's text before its first member and after its last, and its empty spelling
    (``None`` unless ``empty_ok``)."""
    empty = concat(literal(open_), layout.empty(), literal(close_)) if empty_ok else None
    return concat(literal(open_), layout.open(depth)), concat(layout.close(depth), literal(close_)), empty


def container(open_: str, close_: str, members: Node, empty_ok: bool, layout: Layout, depth: int) -> Node:
    """``open_`` members ``close_`` (and the empty container when ``empty_ok``)."""
    opening, closing, empty = container_parts(open_, close_, empty_ok, layout, depth)
    parts = [] if is_nothing(members) else [concat(opening, members, closing)]
    if empty is not None:
        parts.append(empty)
    return _alt(*parts) if parts else NOTHING


def value_literal(value: Any, layout: Layout, depth: int, any_order: bool = False) -> Node:
    """The spellings of a JSON value.

    Object keys come in the given order, or in any order (objects of up to 5
    keys) when ``any_order``.
    """
    if value is None:
        return literal("null")
    if value is True:
        return literal("true")
    if value is False:
        return literal("false")
    if isinstance(value, (int, float)):
        return number_literal(value)
    if isinstance(value, str):
        return quoted(string_literal_content(value))
    if isinstance(value, list):
        if not value:
            return container("[", "]", NOTHING, True, layout, depth)
        items = [value_literal(v, layout, depth + 1, any_order) for v in value]
        body = [items[0]]
        for it in items[1:]:
            body += [layout.sep(depth), it]
        return container("[", "]", concat(*body), False, layout, depth)
    if isinstance(value, dict):
        if not value:
            return container("{", "}", NOTHING, True, layout, depth)
        members = [
            concat(
                quoted(string_literal_content(k)),
                layout.colon,
                value_literal(v, layout, depth + 1, any_order),
            )
            for k, v in value.items()
        ]
        orders = itertools.permutations(members) if any_order and len(members) <= 5 else [members]
        bodies = []
        for order in orders:
            body = [order[0]]
            for m in order[1:]:
                body += [layout.sep(depth), m]
            bodies.append(concat(*body))
        return container("{", "}", _alt(*bodies), False, layout, depth)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def any_value_rules(layout: Layout, prefix: str) -> dict[str, Node]:
    """Rules for any JSON value (``prefix`` names the value rule)."""
    value = RuleRef(prefix)
    s = quoted(any_string_content())
    member = concat(s, layout.colon, value)
    obj_members = concat(member, star(concat(layout.sep(0), member)))
    arr_members = concat(value, star(concat(layout.sep(0), value)))
    body = _alt(
        container("{", "}", obj_members, True, layout, 0),
        container("[", "]", arr_members, True, layout, 0),
        s,
        ANY_NUMBER,
        literal("true"),
        literal("false"),
        literal("null"),
    )
    return {prefix: body}
