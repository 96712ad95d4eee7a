"""Context-free grammars in the IR: named rules whose bodies are regex IR nodes.

A :class:`Grammar` is what every front end (GBNF, EBNF, Lark, JSON Schema)
produces and what the automaton stage consumes. Rule bodies are
:mod:`tokensieve.ir.nodes` that may contain :class:`~tokensieve.ir.nodes.RuleRef`
nodes naming other rules. The automaton stage inlines references to rules that
are not recursive, so a grammar that is regular costs exactly what a regex costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import GrammarError
from .nodes import Node, referenced_rules
from .text import grammar_text

__all__ = ["Grammar", "Unordered", "referenced_rules"]


@dataclass(frozen=True)
class Unordered:
    """Members in any order, each at most once: what a rule of :attr:`Grammar.unordered` stands for.

    The rule matches ``m (separator m)* close``, where each ``m`` is a member
    not matched before in this run or ``extra`` (any number of times), and
    ``close`` comes only once every required member was matched: a JSON
    object's members after its ``{`` with ``property_order="any"``. No finite
    grammar of a size polynomial in the members says this; the automaton
    stage keeps the members seen on the parse stack instead.

    Attributes
    ----------
    members : tuple of str
        The rules of the members (each one reads at least one byte).
    required : tuple of bool
        Per member, whether it must be matched before ``close``.
    extra : str or None
        A rule matched any number of times among the members (other keys).
    separator, close : str
        The rules between two members and after the last one.
    """

    members: tuple[str, ...]
    required: tuple[bool, ...]
    extra: str | None
    separator: str
    close: str

    def rules(self) -> tuple[str, ...]:
        """Every rule named."""
        return (*self.members, *(() if self.extra is None else (self.extra,)), self.separator, self.close)


@dataclass(frozen=True, eq=False)
class Grammar:
    """A context-free grammar over bytes.

    Parameters
    ----------
    rules
        Rule name to body. Bodies are regex IR nodes that may reference rules.
    root
        Name of the start rule.
    unordered
        Rules that stand for members in any order (see :class:`Unordered`);
        their bodies in ``rules`` are a superset of their language (the
        members in any order, repeats allowed), which references the rules
        they name.

    Raises
    ------
    GrammarError
        When ``root`` is not a rule or a body references an undefined rule.
    """

    rules: Mapping[str, Node]
    root: str = "root"
    unordered: Mapping[str, Unordered] = field(default_factory=dict)
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    _references: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        rules = dict(self.rules)
        if self.root not in rules:
            raise GrammarError(f"the grammar has no rule named {self.root!r} to start from")
        references = {name: tuple(referenced_rules(body)) for name, body in rules.items()}
        for name, refs in references.items():
            for ref in refs:
                if ref not in rules:
                    raise GrammarError(f"rule {name!r} references the undefined rule {ref!r}")
        for name, spec in self.unordered.items():
            missing = [r for r in (name, *spec.rules()) if r not in rules]
            if missing:
                raise GrammarError(f"the unordered rule {name!r} names undefined rules {missing}")
            if len(spec.required) != len(spec.members):
                raise GrammarError(f"the unordered rule {name!r} has {len(spec.members)} members but "
                                   f"{len(spec.required)} required flags")
            if not set(spec.rules()) <= set(references[name]):
                raise GrammarError(f"the body of the unordered rule {name!r} must reference the rules it names")
        self._settle(rules, references, dict(self.unordered))

    def _settle(
        self, rules: dict[str, Node], references: dict[str, tuple[str, ...]], unordered: dict[str, Unordered]
    ) -> None:
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "_references", references)
        object.__setattr__(self, "unordered", unordered)
        object.__setattr__(
            self,
            "_hash",
            hash((self.root, tuple(sorted(rules.items(), key=lambda kv: kv[0])), tuple(sorted(unordered.items())))),
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        """The rules in a grammar notation, the root first (see :mod:`tokensieve.ir.text`)."""
        return grammar_text(self.rules, self.root, self.references)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self is other or (
            self._hash == other._hash
            and self.root == other.root
            and self.rules == other.rules
            and self.unordered == other.unordered
        )

    def references(self, name: str) -> tuple[str, ...]:
        """The distinct names of the rules that rule ``name``'s body references (see :func:`referenced_rules`)."""
        return self._references[name]

    def reachable(self) -> Grammar:
        """The same grammar without the rules that the root cannot reach (``self`` when there are none)."""
        seen = {self.root}
        todo = [self.root]
        while todo:
            for ref in self._references[todo.pop()]:
                if ref not in seen:
                    seen.add(ref)
                    todo.append(ref)
        if len(seen) == len(self.rules):
            return self
        # a subset of a valid grammar's rules, closed under reference: valid, and its references known
        kept = object.__new__(type(self))
        object.__setattr__(kept, "root", self.root)
        kept._settle(
            {k: v for k, v in self.rules.items() if k in seen},
            {k: v for k, v in self._references.items() if k in seen},
            {k: v for k, v in self.unordered.items() if k in seen},
        )
        return kept
