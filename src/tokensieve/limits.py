"""Resource limits applied to untrusted grammars, patterns and schemas: every bound that changes a result."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["Limits"]

#: rules a rule network can number (its call markers are two bytes, a lead byte 0xF8-0xFF and a
#: second byte below 0xF8, see :mod:`tokensieve.automata.pushdown`): the most
#: ``max_recursive_rules`` may be
RECURSIVE_RULES_CAP = (0x100 - 0xF8) * 0xF8


@dataclass(frozen=True)
class Limits:
    """Bounds on the work and memory one grammar may cost.

    Every bound that changes what a compile or a decoding step produces is a
    field here; the other constants in the code choose between algorithms that
    give the same result. Each field says what it bounds, its default, what
    the bound protects against, and what happens when it is hit: either
    :class:`tokensieve.LimitExceeded`, whose ``limit`` attribute is the field's
    name and ``value`` its setting, or, for the JSON Schema bounds marked
    *reported*, a keyword that is not enforced exactly (a
    :class:`tokensieve.SchemaError` when ``strict``, else listed in
    ``unenforced``). While decoding, a bound passed puts the matcher in its
    error state (see :class:`tokensieve.GrammarMatcher`).

    The defaults admit every realistic pattern while keeping the worst case
    to a few seconds and a few hundred megabytes.

    Attributes
    ----------
    max_pattern_length
        Characters in one regex pattern or grammar text; a JSON Schema's
        canonical text may have 8 times as many (default 1 MiB). Checked
        before parsing. Raises.
    max_nesting_depth
        Nesting of groups in a pattern, of subschemas in a schema (default
        200): the parsers and the lowering recurse that deep. Raises.
    max_repetition
        Largest ``m`` or ``n`` in ``{m,n}``, and largest ``minLength`` /
        ``maxLength`` bound (default 100,000): each count costs states.
        Raises.
    max_lookaheads
        Lookaheads at the top level of one pattern (default 16); each costs an
        automaton product (see :mod:`tokensieve.grammar.lookahead`). Raises.
    max_nfa_states
        States of the intermediate byte NFA (default 1,000,000; grows with
        repetition counts). Raises.
    max_dfa_states
        States of a determinised automaton before minimisation (default
        100,000; memory about 1 KB a state); subset construction stops there.
        Raises.
    max_choices
        Strings in one choice list or string ``enum`` (default 2,000,000).
        Raises.
    max_choice_bytes
        Total UTF-8 bytes of one choice list (default 256 MiB). Raises.
    max_mask_cache_bytes
        Bytes of token masks kept per compiled grammar, and by a compiler's
        cache of compiled grammars (default 1 GiB); past it the oldest are
        evicted and recomputed when needed. Never raises.
    max_compile_work
        Elementary steps (automaton states visited, set elements merged) one
        automaton construction may take (default 20,000,000, about two
        seconds); bounds patterns such as ``(a?){5000}`` whose automata stay
        small but cost quadratic work to build. Raises.
    max_grammar_rules
        Rules in one grammar after front-end lowering, and rules a JSON Schema
        lowers to (default 20,000). Raises.
    max_recursive_rules
        Recursive rules in one grammar (default and most
        :data:`RECURSIVE_RULES_CAP`, 2,048: the rule network numbers its calls
        in two bytes). Raises.
    max_stack_depth
        Frames on one pushdown stack: nesting depth of recursive rules in the
        output (default 2,000). Raises at compile time, an error state while
        decoding.
    max_stacks
        Parse stacks kept alive at once where a grammar is ambiguous (default
        512). Raises at compile time, an error state while decoding.
    max_pushdown_states
        Distinct sets of parse stacks a compiled grammar may memoise (default
        500,000): the work a recursive grammar can cost over its lifetime.
        Raises at compile time, an error state while decoding.
    max_schema_work
        Subschemas one JSON Schema may expand to, counting every branch that
        ``anyOf``, ``oneOf``, ``not``, ``if`` and ``dependentSchemas``
        distribute over (default 80,000): bounds schemas whose combinations
        multiply. Raises.
    max_schema_branches
        Members of one ``anyOf`` or ``oneOf`` (default 1,000), counted before
        any is lowered: each member is lowered, inlined and determinised on
        its own, so the work grows with their number (a thousand
        one-property objects take seconds). Members with ``const`` or
        ``enum`` are not counted: they cost what their values' text costs, as
        an ``enum`` does. Raises.
    max_schema_indirection
        How deep the checks of concrete values against subschemas (``enum``
        members, property names), negations and ``unevaluated*`` annotations
        follow references (default 64). Past it: reported.
    max_pattern_properties
        ``patternProperties`` of one object combined exactly (default 4: the
        extra keys are split in ``2**n`` regions, each an automaton product).
        Past it: reported.
    max_counted_optional_properties
        Optional properties whose subsets are spelled out to enforce
        ``minProperties``/``maxProperties`` (default 8: ``2**n`` orders).
        Past it: reported.
    max_any_order_properties
        Properties of one object whose orders are spelled out with
        ``property_order="any"`` (default 5: ``n!`` orders, one automaton);
        larger objects are a rule that keeps the members seen on the parse
        stack (see ``compile/unordered_frames.py``): the same language, for
        objects of any size. Never raises.
    max_unique_items
        Distinct values an array's items may take for ``uniqueItems`` to be
        enforced (default 10). Past it: reported.
    max_unique_states
        States of the automaton that tracks the items used for ``uniqueItems``
        (default 32,768). Past it: reported.
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
    max_recursive_rules: int = RECURSIVE_RULES_CAP
    max_stack_depth: int = 2_000
    max_stacks: int = 512
    max_pushdown_states: int = 500_000
    max_schema_work: int = 80_000
    max_schema_branches: int = 1_000
    max_schema_indirection: int = 64
    max_pattern_properties: int = 4
    max_counted_optional_properties: int = 8
    max_any_order_properties: int = 5
    max_unique_items: int = 10
    max_unique_states: int = 1 << 15

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Limits.{f.name} must be a non-negative integer, not {value!r}")
        if self.max_recursive_rules > RECURSIVE_RULES_CAP:
            raise ValueError(f"Limits.max_recursive_rules can be at most {RECURSIVE_RULES_CAP}")
