"""Per-sequence runtime state: bitmask filling, accept, rollback, jump-forward."""

from .matcher import GrammarMatcher

__all__ = ["GrammarMatcher"]
