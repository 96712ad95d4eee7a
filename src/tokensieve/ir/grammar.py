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

__all__ = ["Grammar", "referenced_rules"]


@dataclass(frozen=True, eq=False)
class Grammar:
    """A context-free grammar over bytes.

    Parameters
    ----------
    rules
        Rule name to body. Bodies are regex IR nodes that may reference rules.
    root
        Name of the start rule.

    Raises
    ------
    GrammarError
        When ``root`` is not a rule or a body references an undefined rule.
    """

    rules: Mapping[str, Node]
    root: str = "root"
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
        self._settle(rules, references)

    def _settle(self, rules: dict[str, Node], references: dict[str, tuple[str, ...]]) -> None:
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "_references", references)
        object.__setattr__(
            self, "_hash", hash((self.root, tuple(sorted(rules.items(), key=lambda kv: kv[0]))))
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
            self._hash == other._hash and self.root == other.root and self.rules == other.rules
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
        )
        return kept
