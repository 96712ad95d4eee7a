"""Lookaheads at the top level of a pattern, as intersections and differences of automata.

A regular language stays regular under a lookahead: where a pattern's top
level reads ``X (?=B) Y``, the strings are those of ``X`` followed by a rest
that matches ``Y`` *and* begins with a match of ``B``, so the rest's language
is ``Y ∩ B·Σ*`` (``Y − B·Σ*`` for ``(?!B)``); a ``$`` that ends ``B`` (or one
of its alternatives) drops the ``Σ*`` there. Reading the top level from right to left, each lookahead narrows
everything after it. That covers the common uses in JSON Schema patterns,
such as a password's ``^(?=.*[A-Z])(?=.*\\d)[A-Za-z\\d]{8,}$``.

Supported: any number of ``(?=...)`` and ``(?!...)`` directly in the pattern's
top level (not inside a group, an alternative or under a quantifier), with
bodies free of lookarounds and of anchors other than a ``$`` that ends one of
their alternatives (``(?!admin$|root$)``), and no
anchors in the pattern but a leading ``^`` and a trailing ``$``. Anything else
with a lookaround stays a :class:`~tokensieve.errors.GrammarError` marked
``unsupported``. Lookbehinds are not supported.

The caller says how a piece of the pattern becomes a language
(:func:`~tokensieve.grammar.regex.parse_regex` for whole-output matches; the
JSON string contents of its matches for a JSON Schema ``pattern``) and what
"anything" is, so the same construction serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..automata.ops import ir_difference, ir_intersect
from ..errors import GrammarError, LimitExceeded
from ..ir.nodes import EMPTY, Node, alt, concat, is_nothing
from ..limits import Limits

__all__ = ["TopLevelLookaheads", "find_lookaheads", "build_lookaheads"]


@dataclass(frozen=True)
class TopLevelLookaheads:
    """A pattern split at its top-level lookaheads.

    Attributes
    ----------
    start, end
        Whether the pattern begins with ``^`` / ends with ``$``.
    source
        The whole pattern (for the positions of errors).
    pieces
        The top level from left to right: ``("match", text, offset)`` for a
        run of the pattern between lookaheads (possibly empty), ``("ahead",
        text, offset)`` and ``("not ahead", text, offset)`` for the bodies of
        ``(?=text)`` and ``(?!text)``; ``offset`` is where ``text`` begins in
        the pattern.
    """

    start: bool
    end: bool
    pieces: tuple[tuple[str, str, int], ...]
    source: str


def _unsupported(pattern: str, position: int, what: str) -> GrammarError:
    return GrammarError(what, pattern, position, unsupported=True)


def _scan(pattern: str) -> tuple[list[tuple[int, str, int]], GrammarError | None]:
    """The top-level events of ``pattern``: ``(position, kind, end)``, and the error of an unbalanced one.

    Kinds: ``"ahead"``/``"not ahead"`` (a lookahead group from ``position`` to
    ``end``, exclusive), ``"|"``, ``"^"``, ``"$"``, ``"behind"`` (a lookbehind at
    any depth), ``"nested"`` (a lookahead inside a group) and ``"anchor"`` (``^``
    or ``$`` inside a group). Escapes and classes are skipped. An unbalanced
    pattern comes with the parser's error for it (the scan stops at a ``)``
    without its ``(``).
    """
    events: list[tuple[int, str, int]] = []
    opens: list[tuple[int, str]] = []  # (position, kind) of the open groups
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
            continue
        if ch == "(":
            kind = "group"
            if pattern.startswith(("(?=", "(?!"), i):
                kind = "ahead" if pattern[i + 2] == "=" else "not ahead"
                if opens:
                    events.append((i, "nested", i))
            elif pattern.startswith(("(?<=", "(?<!"), i):
                events.append((i, "behind", i))
            opens.append((i, kind))
        elif ch == ")":
            if not opens:
                return events, GrammarError("unbalanced parenthesis: ')' without a matching '('", pattern, i)
            start, kind = opens.pop()
            if kind != "group" and not opens:
                events.append((start, kind, i + 1))
        elif ch in "^$":
            events.append((i, "anchor" if opens else ch, i + 1))
        elif ch == "|" and not opens:
            events.append((i, ch, i + 1))
        i += 1
    if opens:
        return events, GrammarError("unbalanced parenthesis: missing ')'", pattern, opens[-1][0])
    return events, None


def find_lookaheads(pattern: str) -> TopLevelLookaheads | None:
    """The top-level lookaheads of ``pattern``; ``None`` when it has none (nothing to do here).

    Raises
    ------
    GrammarError
        Marked ``unsupported``, for a lookaround this construction does not
        cover (see the module notes).
    """
    if "(?" not in pattern:
        return None
    events, unbalanced = _scan(pattern)
    if unbalanced is not None:
        if any(look in pattern for look in ("(?=", "(?!", "(?<=", "(?<!")):
            raise unbalanced  # malformed: the parser would stop at the lookaround first and call it unsupported
        return None
    kinds = {kind for _, kind, _ in events}
    if not kinds & {"ahead", "not ahead", "nested", "behind"}:
        return None
    for position, kind, _ in events:
        if kind == "behind":
            raise _unsupported(pattern, position, "lookbehind assertions are not supported")
        if kind == "nested":
            raise _unsupported(pattern, position, "a lookahead inside a group is not supported")
    if not kinds & {"ahead", "not ahead"}:
        return None
    start = pattern.startswith("^")
    end = pattern.endswith("$") and not _escaped(pattern, len(pattern) - 1)
    for position, kind, stop in events:
        if kind == "|":
            raise _unsupported(pattern, position, "a lookahead beside a top-level '|' is not supported")
        if kind in ("^", "$", "anchor") and not (
            (kind == "^" and position == 0) or (kind == "$" and position == len(pattern) - 1)
        ):
            if kind != "anchor" or not _in_a_lookahead(events, position):
                raise _unsupported(
                    pattern, position, "an anchor beside a lookahead is only supported at the ends"
                )
        if kind in ("ahead", "not ahead") and stop < len(pattern) and pattern[stop] in "*+?{":
            raise _unsupported(pattern, stop, "a quantified lookahead is not supported")
    pieces: list[tuple[str, str, int]] = []
    at = 1 if start else 0
    for position, kind, stop in events:
        if kind not in ("ahead", "not ahead"):
            continue
        pieces.append(("match", pattern[at:position], at))
        pieces.append((kind, pattern[position + 3 : stop - 1], position + 3))
        at = stop
    pieces.append(("match", pattern[at : len(pattern) - 1 if end else len(pattern)], at))
    for kind, text, offset in pieces:
        if kind != "match":
            _alternatives(pattern, text, offset)  # raises for an anchor it does not support
    return TopLevelLookaheads(start, end, tuple(pieces), pattern)


def _escaped(pattern: str, position: int) -> bool:
    """Whether the character at ``position`` follows an odd run of backslashes."""
    run = 0
    while position - run - 1 >= 0 and pattern[position - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _in_a_lookahead(events: list[tuple[int, str, int]], position: int) -> bool:
    """Whether ``position`` lies in the body of a top-level lookahead (checked by :func:`_alternatives`)."""
    return any(kind in ("ahead", "not ahead") and start < position < stop for start, kind, stop in events)


def _alternatives(pattern: str, body: str, offset: int) -> list[tuple[str, bool, int]]:
    """The top-level alternatives of a lookahead's ``body`` (at ``offset`` in ``pattern``).

    Each as ``(text, anchored, offset)``: ``anchored`` when it ends with a
    ``$``, which is left out of ``text``; no other anchor is supported.
    """
    out: list[tuple[str, bool, int]] = []
    at = 0
    events = [e for e in _scan(body)[0] if e[1] in ("|", "^", "$", "anchor")] + [(len(body), "|", len(body))]
    for position, kind, _ in events:
        if kind == "|":
            text = body[at:position]
            anchored = text.endswith("$") and not _escaped(text, len(text) - 1)
            out.append((text[:-1] if anchored else text, anchored, offset + at))
            at = position + 1
        elif kind != "$" or not (position + 1 == len(body) or body[position + 1] == "|"):
            where = offset + position
            raise _unsupported(
                pattern, where, "an anchor in a lookahead is only supported at the end of an alternative"
            )
    return out


def build_lookaheads(
    found: TopLevelLookaheads,
    piece: Callable[[str], Node],
    anything: Node,
    *,
    search: bool,
    limits: Limits | None = None,
) -> Node:
    """The language of a pattern split by :func:`find_lookaheads`.

    Parameters
    ----------
    found
        The split pattern.
    piece
        The language of a piece of the pattern without lookaheads (a
        lookahead's body without its final ``$``); a :class:`GrammarError` it
        raises is raised again with its position in the whole pattern.
    anything
        The language of any text, in the same terms as ``piece``'s.
    search
        ``True``: the pattern may match anywhere in the text (JSON Schema), so
        unanchored ends read ``anything``; ``False``: it matches the whole text.
    limits
        Bounds on the automata of the intersections and differences.

    Raises
    ------
    LimitExceeded
        When the pattern has more than ``max_lookaheads`` lookaheads, or an
        intersection or a difference exceeds the automaton limits (the
        pattern's length is the caller's to check, as for any pattern).
    """
    limits = limits or Limits()
    count = sum(kind != "match" for kind, _, _ in found.pieces)
    if count > limits.max_lookaheads:
        raise LimitExceeded("max_lookaheads", limits.max_lookaheads, f"the pattern has {count} lookaheads")

    def language(text: str, offset: int) -> Node:
        try:
            return piece(text)
        except GrammarError as exc:
            if exc.position is None:
                raise
            raise GrammarError(
                exc.message, found.source, offset + exc.position, unsupported=exc.unsupported
            ) from None

    rest = anything if search and not found.end else EMPTY
    for kind, text, offset in reversed(found.pieces):
        if kind == "match":
            rest = concat(language(text, offset), rest)
            continue
        begins = alt(
            *(
                language(alternative, at) if anchored else concat(language(alternative, at), anything)
                for alternative, anchored, at in _alternatives(found.source, text, offset)
            )
        )
        rest = ir_intersect(rest, begins, limits) if kind == "ahead" else ir_difference(rest, begins, limits)
        if is_nothing(rest):
            return rest
    return rest if not search or found.start else concat(anything, rest)
