"""The regular-expression intermediate form every front end lowers to.

Nodes are immutable, hashable values. Text is UTF-8 bytes: a :class:`Literal`
holds bytes, a :class:`CharClass` holds Unicode code point ranges (compiled to
UTF-8 byte sequences later) and a :class:`ByteClass` holds raw byte ranges.

========================  =====================================================
node                      language
========================  =====================================================
``Empty()``               the empty string only
``Literal(b"ab")``        exactly those bytes
``CharClass(((a, b),))``  one code point in one of the ranges (UTF-8 encoded)
``ByteClass(((a, b),))``  one byte in one of the ranges
``Concat((x, y, ...))``   concatenation
``Alt((x, y, ...))``      union
``Repeat(x, m, n)``       ``m`` to ``n`` copies of ``x`` (``n=None``: unbounded)
``RuleRef("name")``       the body of another rule (resolved by grammar front ends)
``Automaton(...)``        the language of an embedded byte DFA (see below)
========================  =====================================================

A class with no ranges matches nothing; :data:`NOTHING` is that node. The
constructor functions (:func:`literal`, :func:`char_class`, :func:`concat`,
:func:`alt`, :func:`repeat`, ...) normalise as they build: adjacent literals
merge, nested concatenations and alternations flatten, ``NOTHING`` propagates,
and single-character alternatives merge into one class. Front ends should use
them rather than the dataclass constructors.

An :class:`Automaton` embeds a deterministic byte automaton as plain immutable
data, for languages the other nodes cannot state compactly (intersections and
differences of regular languages, see :mod:`tokensieve.automata.ops`). It is an
opaque leaf: it contains no rule references, and any part of the pipeline that
accepts a regex IR node accepts it. Build it with
:func:`tokensieve.automata.ops.dfa_to_ir` rather than by hand.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "MAX_CODE_POINT",
    "SURROGATES",
    "Node",
    "Empty",
    "Literal",
    "CharClass",
    "ByteClass",
    "Concat",
    "Alt",
    "Repeat",
    "RuleRef",
    "Automaton",
    "EMPTY",
    "NOTHING",
    "literal",
    "char_class",
    "byte_class",
    "concat",
    "alt",
    "repeat",
    "optional",
    "star",
    "plus",
    "is_nothing",
    "referenced_rules",
    "normalize_ranges",
    "complement_ranges",
]

#: Largest Unicode code point.
MAX_CODE_POINT = 0x10FFFF
#: The surrogate code points, which UTF-8 text cannot contain.
SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]


def _check_ranges(ranges: object, top: int, what: str) -> None:
    if not isinstance(ranges, tuple):
        raise TypeError(f"{what} ranges must be a tuple of (lo, hi) pairs")
    prev = -2
    for r in ranges:
        if not (isinstance(r, tuple) and len(r) == 2):
            raise TypeError(f"{what} ranges must be a tuple of (lo, hi) pairs")
        lo, hi = r
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= top):
            raise ValueError(f"bad {what} range {r!r}")
        if lo <= prev + 1:
            raise ValueError(
                f"{what} ranges must be sorted, disjoint and not adjacent (use the constructor function)"
            )
        prev = hi


@dataclass(frozen=True, slots=True)
class Empty:
    """Matches the empty string only."""


@dataclass(frozen=True, slots=True)
class Literal:
    """Matches exactly ``value``.

    Attributes
    ----------
    value : bytes
        The bytes to match (UTF-8 for text).
    """

    value: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.value, bytes):
            raise TypeError("Literal.value must be bytes")


@dataclass(frozen=True, slots=True)
class CharClass:
    """Matches one code point from a set, UTF-8 encoded.

    Attributes
    ----------
    ranges : tuple of (int, int)
        Inclusive code point ranges, sorted, disjoint and not adjacent. Surrogates
        (U+D800 to U+DFFF) never match; :func:`char_class` removes them. No ranges
        means the empty language (:data:`NOTHING`).
    """

    ranges: Ranges

    def __post_init__(self) -> None:
        _check_ranges(self.ranges, MAX_CODE_POINT, "code point")


@dataclass(frozen=True, slots=True)
class ByteClass:
    """Matches one byte from a set.

    Attributes
    ----------
    ranges : tuple of (int, int)
        Inclusive byte ranges within 0..255, sorted, disjoint and not adjacent.
    """

    ranges: Ranges

    def __post_init__(self) -> None:
        _check_ranges(self.ranges, 255, "byte")


@dataclass(frozen=True, slots=True)
class Concat:
    """Concatenation of ``items`` in order.

    Attributes
    ----------
    items : tuple of Node
    """

    items: tuple[Node, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(("Concat", self.items)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, ...]:
        return (Concat, (self.items,))


@dataclass(frozen=True, slots=True)
class Alt:
    """Union of the languages of ``items``.

    Attributes
    ----------
    items : tuple of Node
    """

    items: tuple[Node, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(("Alt", self.items)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, ...]:
        return (Alt, (self.items,))


@dataclass(frozen=True, slots=True)
class Repeat:
    """Between ``min`` and ``max`` copies of ``item``.

    Attributes
    ----------
    item : Node
    min : int
        At least 0.
    max : int or None
        At least ``min``; ``None`` means unbounded.
    """

    item: Node
    min: int
    max: int | None
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise ValueError(f"bad repetition bounds {{{self.min},{self.max}}}")
        object.__setattr__(self, "_hash", hash(("Repeat", self.item, self.min, self.max)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, ...]:
        return (Repeat, (self.item, self.min, self.max))


@dataclass(frozen=True, slots=True)
class RuleRef:
    """Reference to the rule ``name`` of a grammar.

    Grammar front ends resolve references (inlining non-recursive ones); the
    automaton builder rejects any that remain.

    Attributes
    ----------
    name : str
    """

    name: str


@dataclass(frozen=True, slots=True)
class Automaton:
    """The language of a deterministic byte automaton, embedded in the IR.

    The transitions are stored as *runs*: maximal ranges of consecutive bytes
    that lead from one state to the same target. The fields are plain bytes so
    the node is hashable, picklable and compared by content; automata built by
    :func:`tokensieve.automata.ops.dfa_to_ir` are minimal and numbered
    canonically, so equal languages give equal nodes.

    Attributes
    ----------
    num_states : int
        Number of states, at least 1.
    start : int
        The start state.
    accepting : bytes
        One byte per state: 1 if the state accepts, 0 if not.
    runs : bytes
        Little-endian ``int32`` quadruples ``(source, lo, hi, target)``: from
        ``source``, every byte in ``lo..hi`` leads to ``target``. Sorted by
        ``(source, lo)``; the ranges of one source are disjoint.

    Notes
    -----
    The constructor checks only the sizes; the automaton stage checks the
    contents (state numbers and byte ranges) when it first reads them and
    raises ``ValueError`` for a malformed node.
    """

    num_states: int
    start: int
    accepting: bytes
    runs: bytes
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if not (isinstance(self.accepting, bytes) and isinstance(self.runs, bytes)):
            raise TypeError("Automaton.accepting and Automaton.runs must be bytes")
        if not (isinstance(self.num_states, int) and isinstance(self.start, int)):
            raise TypeError("Automaton.num_states and Automaton.start must be int")
        if self.num_states < 1:
            raise ValueError("an Automaton needs at least one state (the empty language is NOTHING)")
        if not 0 <= self.start < self.num_states:
            raise ValueError(f"Automaton start state {self.start} out of range")
        if len(self.accepting) != self.num_states:
            raise ValueError("Automaton.accepting must hold one byte per state")
        if len(self.runs) % 16:
            raise ValueError("Automaton.runs must hold whole (source, lo, hi, target) int32 quadruples")
        object.__setattr__(
            self, "_hash", hash(("Automaton", self.num_states, self.start, self.accepting, self.runs))
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, ...]:
        return (Automaton, (self.num_states, self.start, self.accepting, self.runs))

    def __repr__(self) -> str:
        # content-complete (caches key compiled grammars by repr), yet short
        return f"Automaton(states={self.num_states}, runs={len(self.runs) // 16}, sha256={self.digest})"

    @property
    def digest(self) -> str:
        """Hex SHA-256 of the start state, acceptance and runs (equal automata, equal digests)."""
        h = hashlib.sha256(self.start.to_bytes(8, "little") + self.accepting)
        h.update(self.runs)
        return h.hexdigest()

    @property
    def nullable(self) -> bool:
        """Whether the empty string is in the language (the start state accepts)."""
        return self.accepting[self.start] != 0


Node = Empty | Literal | CharClass | ByteClass | Concat | Alt | Repeat | RuleRef | Automaton


def referenced_rules(node: Node) -> list[str]:
    """The distinct names of the rules that ``node`` references, in order of first reference.

    A subtree shared by several parents (the IR is a DAG: string characters,
    whitespace and formats are built once and reused) is read once, so the
    cost is the number of distinct nodes, not of paths.

    Parameters
    ----------
    node
        A regex IR node.

    Returns
    -------
    list of str
    """
    names: dict[str, None] = {}
    seen: set[int] = set()
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, RuleRef):
            names[n.name] = None
        elif isinstance(n, (Concat, Alt)):
            if id(n) not in seen:
                seen.add(id(n))
                stack.extend(reversed(n.items))
        elif isinstance(n, Repeat) and id(n) not in seen:
            seen.add(id(n))
            stack.append(n.item)
    return list(names)


#: The empty string.
EMPTY = Empty()
#: The empty language (a class with no members).
NOTHING = CharClass(())


# ----------------------------------------------------------------- ranges
def normalize_ranges(ranges: Iterable[tuple[int, int]], *, drop_surrogates: bool = True) -> Ranges:
    """Sort and merge inclusive ranges; optionally remove the surrogate block.

    Parameters
    ----------
    ranges
        Inclusive ``(lo, hi)`` pairs in any order (pairs with ``lo > hi`` are dropped).
    drop_surrogates
        Remove U+D800 to U+DFFF (for code point ranges).

    Returns
    -------
    tuple of (int, int)
        Sorted, disjoint, non-adjacent ranges.
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    if drop_surrogates:
        s_lo, s_hi = SURROGATES
        cut: list[tuple[int, int]] = []
        for lo, hi in out:
            if hi < s_lo or lo > s_hi:
                cut.append((lo, hi))
                continue
            if lo < s_lo:
                cut.append((lo, s_lo - 1))
            if hi > s_hi:
                cut.append((s_hi + 1, hi))
        out = cut
    return tuple(out)


def complement_ranges(ranges: Ranges, top: int = MAX_CODE_POINT) -> Ranges:
    """Complement of normalised ranges within ``0..top`` (surrogates excluded when ``top`` > 255).

    Parameters
    ----------
    ranges
        Normalised ranges (see :func:`normalize_ranges`).
    top
        Largest value of the universe: ``MAX_CODE_POINT`` for code points, 255 for bytes.

    Returns
    -------
    tuple of (int, int)
    """
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= top:
        out.append((nxt, top))
    return normalize_ranges(out, drop_surrogates=top > 255)


# ----------------------------------------------------------- constructors
def literal(value: str | bytes) -> Node:
    """A literal; text is UTF-8 encoded. The empty literal is :data:`EMPTY`.

    Raises
    ------
    UnicodeEncodeError
        For text with lone surrogates (it has no UTF-8 form).
    """
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return Literal(data) if data else EMPTY


def char_class(ranges: Iterable[tuple[int, int]], *, negate: bool = False) -> Node:
    """A code point class, normalised; a single code point becomes a :class:`Literal`.

    Parameters
    ----------
    ranges
        Inclusive code point ranges in any order; surrogates are removed.
    negate
        Match every Unicode scalar value *not* in ``ranges``.
    """
    rs = normalize_ranges(ranges)
    if negate:
        rs = complement_ranges(rs)
    if len(rs) == 1 and rs[0][0] == rs[0][1]:
        return Literal(chr(rs[0][0]).encode("utf-8"))
    return CharClass(rs)


def byte_class(ranges: Iterable[tuple[int, int]], *, negate: bool = False) -> Node:
    """A raw byte class, normalised; a single byte becomes a :class:`Literal`."""
    rs = normalize_ranges(ranges, drop_surrogates=False)
    if negate:
        rs = complement_ranges(rs, 255)
    if len(rs) == 1 and rs[0][0] == rs[0][1]:
        return Literal(bytes([rs[0][0]]))
    return ByteClass(rs)


def is_nothing(node: Node) -> bool:
    """Whether ``node`` is a class with no members (the empty language)."""
    return isinstance(node, (CharClass, ByteClass)) and not node.ranges


def _flush(run: list[bytes], out: list[Node]) -> None:
    data = b"".join(run)
    run.clear()
    if data:
        out.append(Literal(data))


def concat(*items: Node) -> Node:
    """Concatenation, flattened; adjacent literals merge and ``NOTHING`` absorbs."""
    out: list[Node] = []
    run: list[bytes] = []
    for item in items:
        parts = item.items if isinstance(item, Concat) else (item,)
        for part in parts:
            if isinstance(part, Literal):
                run.append(part.value)
                continue
            if isinstance(part, Empty):
                continue
            if is_nothing(part):
                return NOTHING
            if run:
                _flush(run, out)
            out.append(part)
    if run:
        _flush(run, out)
    if not out:
        return EMPTY
    if len(out) == 1:
        return out[0]
    return Concat(tuple(out))


def _single_code_point(node: Node) -> int | None:
    if isinstance(node, Literal) and 1 <= len(node.value) <= 4:
        try:
            text = node.value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if len(text) == 1:
            return ord(text)
    return None


def alt(*items: Node) -> Node:
    """Union, flattened and deduplicated; single characters and classes merge into one class.

    ``NOTHING`` alternatives are dropped; an empty-string alternative makes the
    rest optional.
    """
    flat: list[Node] = []
    seen: set[Node] = set()
    has_empty = False
    code_points: list[tuple[int, int]] = []
    n_chars = 0
    for item in items:
        parts = item.items if isinstance(item, Alt) else (item,)
        for part in parts:
            if isinstance(part, Empty):
                has_empty = True
                continue
            if is_nothing(part):
                continue
            cp = _single_code_point(part)
            if cp is not None:
                code_points.append((cp, cp))
                n_chars += 1
                continue
            if isinstance(part, CharClass):
                code_points.extend(part.ranges)
                n_chars += 1
                continue
            if part not in seen:
                seen.add(part)
                flat.append(part)
    if n_chars:
        flat.insert(0, char_class(code_points))
    if not flat:
        return EMPTY if has_empty else NOTHING
    body = flat[0] if len(flat) == 1 else Alt(tuple(flat))
    return optional(body) if has_empty else body


def repeat(item: Node, min: int, max: int | None) -> Node:
    """``min`` to ``max`` copies of ``item`` (``max=None``: unbounded), simplified.

    Raises
    ------
    ValueError
        If ``min < 0`` or ``max < min``.
    """
    if min < 0 or (max is not None and max < min):
        raise ValueError(f"bad repetition bounds {{{min},{max}}}")
    if max == 0 or isinstance(item, Empty):
        return EMPTY
    if is_nothing(item):
        return EMPTY if min == 0 else NOTHING
    if min == 1 and max == 1:
        return item
    if isinstance(item, Repeat):
        # (x{a,b}){m,n} is x{ma,nb} when the possible counts leave no gaps
        a, b = item.min, item.max
        if min == max:
            return Repeat(item.item, a * min, None if b is None else b * min)
        if b is None:
            merge = min >= 1 or a <= 1
        else:
            merge = min * (b - a) + 1 >= a
        if merge:
            top = None if b is None or max is None else b * max
            return repeat(item.item, a * min, top)
    return Repeat(item, min, max)


def optional(item: Node) -> Node:
    """``item`` or the empty string."""
    return repeat(item, 0, 1)


def star(item: Node) -> Node:
    """Zero or more copies of ``item``."""
    return repeat(item, 0, None)


def plus(item: Node) -> Node:
    """One or more copies of ``item``."""
    return repeat(item, 1, None)
