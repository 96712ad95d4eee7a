"""Context-free grammars in IR form for the tests, and a checker against the Earley oracle."""

from __future__ import annotations

import random

import numpy as np

from tokensieve import GrammarMatcher, allocate_token_bitmask
from tokensieve.bitmask import bitmask_to_bool
from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import (
    EMPTY,
    RuleRef,
    alt,
    char_class,
    concat,
    literal,
    optional,
    plus,
    repeat,
    star,
)

from .earley import Earley

R = RuleRef
DIGIT = char_class(((0x30, 0x39),))
LOWER = char_class(((0x61, 0x7A),))
WS = repeat(char_class(((0x20, 0x20), (0x09, 0x0A))), 0, 3)
STRING = concat(
    literal('"'),
    star(
        alt(
            char_class(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF))),
            concat(literal("\\"), char_class(((0x22, 0x22), (0x5C, 0x5C), (0x6E, 0x6E)))),
        )
    ),
    literal('"'),
)
NUMBER = concat(optional(literal("-")), plus(DIGIT), optional(concat(literal("."), plus(DIGIT))))

GRAMMARS: dict[str, Grammar] = {
    "parens": Grammar({"root": alt(concat(literal("("), R("root"), literal(")"), R("root")), EMPTY)}),
    "arith_left_recursive": Grammar(
        {
            "root": R("expr"),
            "expr": alt(concat(R("expr"), char_class(((0x2B, 0x2B), (0x2D, 0x2D))), R("term")), R("term")),
            "term": alt(concat(R("term"), literal("*"), R("factor")), R("factor")),
            "factor": alt(concat(literal("("), R("expr"), literal(")")), plus(DIGIT)),
        }
    ),
    "json": Grammar(
        {
            "root": concat(R("value"), WS),
            "value": alt(R("object"), R("array"), R("string"), R("number"), literal("true"), literal("null")),
            "object": concat(
                literal("{"),
                WS,
                optional(
                    concat(
                        R("string"),
                        WS,
                        literal(":"),
                        WS,
                        R("value"),
                        WS,
                        star(concat(literal(","), WS, R("string"), WS, literal(":"), WS, R("value"), WS)),
                    )
                ),
                literal("}"),
            ),
            "array": concat(
                literal("["),
                WS,
                optional(concat(R("value"), WS, star(concat(literal(","), WS, R("value"), WS)))),
                literal("]"),
            ),
            "string": STRING,
            "number": NUMBER,
        }
    ),
    "ambiguous": Grammar(
        {
            "root": alt(concat(R("a"), literal("x")), concat(R("b"), literal("xy")), concat(R("a"), R("a"))),
            "a": alt(concat(literal("a"), R("a")), literal("a"), concat(literal("("), R("b"), literal(")"))),
            "b": alt(concat(R("b"), literal("a")), literal("a"), EMPTY),
        }
    ),
    "nullable_recursion": Grammar(
        {
            "root": concat(R("list"), literal(";")),
            "list": alt(concat(R("item"), R("list")), EMPTY),
            "item": alt(concat(literal("["), R("list"), literal("]")), plus(LOWER), literal(" ")),
        }
    ),
    "mutual": Grammar(
        {
            "root": R("s"),
            "s": alt(concat(literal("a"), R("t")), literal("é")),
            "t": alt(concat(literal("b"), R("s"), literal("c")), concat(R("s"), literal("€"))),
        }
    ),
}


def allowed_tokens(matcher: GrammarMatcher, vocab_size: int) -> set[int]:
    bm = allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm)
    return set(np.flatnonzero(bitmask_to_bool(bm, vocab_size)[0]).tolist())


def oracle_allowed(
    earley: Earley, text: bytes, vocab: list[bytes], skip: set[int], eos: int
) -> tuple[set[int], set[int]]:
    """Tokens the oracle allows after ``text``, and those it cannot judge (they split a character)."""
    allowed, unknown = set(), set()
    for t, tok in enumerate(vocab):
        if t in skip or not tok:
            continue
        try:
            s = (text + tok).decode("utf-8")
        except UnicodeDecodeError:
            unknown.add(t)
            continue
        if earley.viable(s):
            allowed.add(t)
    if earley.complete(text.decode("utf-8")):
        allowed.add(eos)
    return allowed, unknown


def check_random_walks(
    compiled, grammar: Grammar, info, *, seed: int, walks: int, steps: int, eos: int, fast: bool = False
) -> int:
    """Walk random allowed tokens; at each step compare the mask with the oracle. Returns steps checked."""
    earley = Earley(grammar)
    vocab = info.decoded_vocab
    skip = set(info.special_token_ids) | set(info.stop_token_ids)
    rng = random.Random(seed)
    checked = 0
    for _ in range(walks):
        m = GrammarMatcher(compiled)
        text = b""
        for _ in range(steps):
            got = allowed_tokens(m, info.vocab_size)
            try:
                text.decode("utf-8")
            except UnicodeDecodeError:
                # inside a split character: the text oracle cannot judge; take a step on
                choices = sorted(got - {eos} - set(info.stop_token_ids))
                if not choices:
                    break
                t = rng.choice(choices)
                assert m.accept_token(t)
                text += vocab[t]
                continue
            exp, unknown = (oracle_allowed_fast if fast else oracle_allowed)(earley, text, vocab, skip, eos)
            stops = set(info.stop_token_ids)
            for stop in stops:  # every stop token is allowed exactly on complete sentences
                assert (stop in got) == (eos in exp) == m.is_completed()
            unknown = unknown | (stops - {eos})
            assert got - unknown == exp, (text, sorted(got - unknown - exp)[:5], sorted(exp - got)[:5])
            checked += 1
            choices = sorted(got - {eos} - set(info.stop_token_ids))
            if not choices:
                assert m.is_completed()
                break
            t = rng.choice(choices)
            assert m.accept_token(t)
            text += vocab[t]
    return checked


def oracle_allowed_fast(
    earley: Earley, text: bytes, vocab: list[bytes], skip: set[int], eos: int
) -> tuple[set[int], set[int]]:
    """Like :func:`oracle_allowed`, sharing the Earley work of common token prefixes."""
    base = earley._sets(text.decode("utf-8"))
    assert base is not None
    allowed, unknown = set(), set()
    items: list[tuple[str, int]] = []
    for t, tok in enumerate(vocab):
        if t in skip or not tok:
            continue
        try:
            items.append(((text + tok).decode("utf-8")[len(text.decode("utf-8")) :], t))
        except UnicodeDecodeError:
            unknown.add(t)
    items.sort()
    stack: list[tuple[str, list | None]] = [("", base)]  # (prefix, sets after it)
    for s, t in items:
        while not s.startswith(stack[-1][0]):
            stack.pop()
        prefix, sets = stack[-1]
        for ch in s[len(prefix) :]:
            sets = None if sets is None else earley.step(sets, ch)
            prefix += ch
            stack.append((prefix, sets))
        if sets is not None:
            allowed.add(t)
    if earley.is_complete(base):
        allowed.add(eos)
    return allowed, unknown
