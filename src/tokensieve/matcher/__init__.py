"""Per-sequence runtime state: bitmask filling, accept, rollback, jump-forward."""

from .batch import BatchGrammarMatcher
from .matcher import GrammarMatcher

__all__ = ["BatchGrammarMatcher", "GrammarMatcher"]
