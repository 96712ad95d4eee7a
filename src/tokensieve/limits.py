"""Resource limits applied to untrusted grammars, patterns and schemas."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """Bounds on the work and memory one grammar may cost.

    Each field is checked where the cost is incurred and raises
    :class:`tokensieve.LimitExceeded` naming the field. Defaults admit every
    realistic pattern while keeping the worst case to a few seconds and a few
    hundred megabytes.

    Attributes
    ----------
    max_pattern_length
        Characters in one regex pattern or grammar text (1 MiB).
    max_nesting_depth
        Nesting of groups in a pattern (parser recursion is bounded by it).
    max_repetition
        Largest ``m`` or ``n`` in ``{m,n}``.
    max_lookaheads
        Lookaheads at the top level of one pattern; each costs an automaton
        product (see :mod:`tokensieve.grammar.lookahead`).
    max_nfa_states
        States of the intermediate byte NFA (grows with repetition counts).
    max_dfa_states
        States of a determinised automaton before minimisation; subset
        construction is stopped when it is reached.
    max_choices
        Strings in one choice list.
    max_choice_bytes
        Total UTF-8 bytes of one choice list.
    max_mask_cache_bytes
        Bytes of memoised token masks kept per compiled grammar; beyond it the
        oldest entries are evicted (they are recomputed when needed).
    max_compile_work
        Elementary steps (automaton states visited, set elements merged) one
        automaton construction may take; bounds patterns such as ``(a?){5000}``
        whose automata stay small but cost quadratic work to build (about a
        second per ten million steps).
    max_grammar_rules
        Rules in one grammar (after front-end lowering).
    max_stack_depth
        Frames on one pushdown stack (nesting depth of recursive rules in the output).
    max_stacks
        Parse stacks kept alive at once where a grammar is ambiguous.
    max_pushdown_states
        Distinct sets of (partial) parse stacks a compiled grammar may memoise;
        bounds the work a recursive grammar can cost over its lifetime.
    """

    max_pattern_length: int = 1 << 20
    max_nesting_depth: int = 200
    max_repetition: int = 100_000
    max_lookaheads: int = 16
    max_nfa_states: int = 1_000_000
    max_dfa_states: int = 100_000
    max_choices: int = 2_000_000
    max_choice_bytes: int = 256 << 20
    max_mask_cache_bytes: int = 1 << 30
    max_compile_work: int = 20_000_000
    max_grammar_rules: int = 20_000
    max_stack_depth: int = 2_000
    max_stacks: int = 512
    max_pushdown_states: int = 500_000
