"""Where tokensieve's JSON Schema compile time goes, phase by phase, beside llguidance's whole compile.

Usage::

    python benchmarks/json_phases.py [--vocab tekken|smollm2] [--groups api,tools,...] [--repeat N]

Compiles every schema of the JSON corpus (``data/json_schemas/``) with a new
``GrammarCompiler`` and fills the first mask, timing each phase by wrapping the
functions that carry it out (a phase's time leaves out the phases it calls):

* ``lower``: the schema to the grammar IR (``schema_to_grammar``), less
  the automata it builds for leaves;
* ``leaf automata``: what the lowering does to build the automata of
  strings, formats, numbers, other keys and enums (products, counted
  repetitions), less the steps below;
* ``nfa``, ``determinize``, ``minimize``, ``splice``: the IR to byte automata
  (``automata/build.py``'s steps);
* ``automaton, rest``: what else building the automaton does (rule
  networks, blank runs, layered products, memo look-ups);
* ``prepare``: the shared-mask classes, the walk's arrays and chains (also
  where a walk builds them on first use);
* ``walks``: the token masks computed at compile time and the first mask;
* ``other``: the compiler's own bookkeeping and what no phase above covers.

In the same run, llguidance (when installed) compiles the same schema and
fills its first mask, with the options of ``json_bench.py``. Prints, per phase,
its mean time and share of ours over the corpus, and the geometric means over
the schemas of our cumulative time up to and including it and of that time
divided by llguidance's whole compile plus first mask; a schema's figures are
the medians over ``--repeat`` runs (default 3), the first of which also fills
the process-wide memos, as a server's first request would.

This is a diagnostic: it answers how much of the gap to llguidance each phase
alone accounts for, not how fast a full decode is (``json_bench.py``).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from json_bench import HAND_WRITTEN_GROUPS, load_corpus
from vocabs import VOCAB_NAMES, load_vocab

#: (phase, module, attribute path) of every wrapped function; a phase may have several
WRAPPED: tuple[tuple[str, str, str], ...] = (
    ("lower", "tokensieve.grammar.json_schema", "schema_to_grammar"),
    ("leaf automata", "tokensieve.grammar.json_automata", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_automata", "layered_intersection"),
    ("leaf automata", "tokensieve.grammar.json_automata", "cached_counted_repeat"),
    ("leaf automata", "tokensieve.grammar.json_schema._other_keys", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_schema._unique", "ir_to_dfa"),
    ("leaf automata", "tokensieve.automata.ops", "ir_intersect"),
    ("leaf automata", "tokensieve.automata", "choices_to_dfa"),
    ("nfa", "tokensieve.automata.build", "build_nfa"),
    ("determinize", "tokensieve.automata.build", "determinize"),
    ("minimize", "tokensieve.automata.build", "minimize"),
    ("minimize", "tokensieve.automata.build", "minimize_edges"),
    ("splice", "tokensieve.automata.build", "splice"),
    ("automaton, rest", "tokensieve.compile.compiler", "compile_grammar_automaton"),
    ("prepare", "tokensieve.compile.compiled_grammar", "CompiledGrammar.prepare"),
    ("prepare", "tokensieve.compile.compiled_grammar", "CompiledGrammar._representatives"),
    ("prepare", "tokensieve.compile.token_masks", "AutomatonView.of"),
    ("walks", "tokensieve.compile.compiled_grammar", "CompiledGrammar.precompute"),
    ("walks", "tokensieve.compile.compiled_grammar", "CompiledGrammar.token_mask"),
    ("walks", "tokensieve.compile.pushdown", "CompiledPushdownGrammar.precompute"),
    ("walks", "tokensieve.compile.pushdown", "CompiledPushdownGrammar.token_mask"),
)
PHASES = tuple(dict.fromkeys([p for p, _, _ in WRAPPED] + ["other"]))


class PhaseClock:
    """Exclusive time per phase: a wrapped call's time less that of the wrapped calls inside it."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._inner: list[float] = []

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                total = time.perf_counter() - t0
                inner = self._inner.pop()
                self.spent[phase] += total - inner
                if self._inner:
                    self._inner[-1] += total

        return timed

    def reset(self) -> None:
        self.spent = dict.fromkeys(PHASES, 0.0)


def install(clock: PhaseClock) -> None:
    """Wrap every function of :data:`WRAPPED` where its caller looks it up."""
    for phase, module, path in WRAPPED:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        setattr(owner, name, clock.wrap(phase, getattr(owner, name)))


def _llguidance(vocab: Any) -> Callable[[Any], float] | None:
    """A function timing llguidance's compile plus first mask of a schema, or ``None`` if it is missing."""
    try:
        from peers import make_engine
    except ImportError:
        return None
    engine = make_engine("llguidance")
    if engine.unavailable_reason() is not None:
        return None
    engine.setup(vocab)

    def run(workload: Any) -> float:
        engine.new_compiler()
        t0 = time.perf_counter()
        engine.matcher(engine.compile(workload)).fill()
        return time.perf_counter() - t0

    return run


def _geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", default="tekken", choices=VOCAB_NAMES)
    parser.add_argument("--groups", default="", help="corpus groups (by default the hand-written ones)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per schema (median)")
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()] or list(HAND_WRITTEN_GROUPS)

    import tokensieve

    clock = PhaseClock()
    install(clock)
    vocab = load_vocab(args.vocab)
    info = tokensieve.TokenizerInfo.from_file(str(vocab.path), stop_token_ids=[vocab.eos_token_id])
    bitmask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    peer = _llguidance(vocab)
    workloads = load_corpus(groups)
    # the per-vocabulary tables some walks build on first use are not any schema's compile time
    warm_up = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}
    tokensieve.GrammarMatcher(
        tokensieve.GrammarCompiler(info).compile_json_schema(warm_up)
    ).fill_next_token_bitmask(bitmask, 0)
    per_phase: dict[str, list[float]] = {p: [] for p in PHASES}
    cumulative: dict[str, list[float]] = {p: [] for p in PHASES}
    relative: dict[str, list[float]] = {p: [] for p in PHASES}
    theirs_all: list[float] = []
    for i, w in enumerate(workloads):
        print(f"[{i + 1}/{len(workloads)}] {w.name}", file=sys.stderr)
        runs: list[dict[str, float]] = []
        for _ in range(args.repeat):
            gc.collect()
            gc.disable()
            clock.reset()
            t0 = time.perf_counter()
            compiled = tokensieve.GrammarCompiler(info).compile_json_schema(w.schema, strict=False)
            tokensieve.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask, 0)
            total = time.perf_counter() - t0
            gc.enable()
            spent = dict(clock.spent)
            spent["other"] = total - sum(spent.values())
            runs.append(spent)
        theirs = statistics.median(peer(w) for _ in range(args.repeat)) if peer else 0.0
        theirs_all.append(theirs)
        so_far = 0.0
        for p in PHASES:
            t = statistics.median(r[p] for r in runs)
            so_far += t
            per_phase[p].append(t)
            cumulative[p].append(so_far)
            if theirs:
                relative[p].append(so_far / theirs)
    print(f"{args.vocab}, {len(workloads)} schemas, median of {args.repeat} runs each")
    if peer:
        print(f"llguidance compile + first mask: geometric mean {_geomean(theirs_all) * 1e3:.2f} ms")
    print()
    print("| phase | mean ms | share of ours | cumulative ms (geomean) | cumulative / llguidance (geomean) |")
    print("|---|---:|---:|---:|---:|")
    grand = sum(sum(v) for v in per_phase.values())
    for p in PHASES:
        ratio = f"{_geomean(relative[p]):.2f}" if relative[p] else "—"
        mean = statistics.fmean(per_phase[p]) * 1e3
        share = sum(per_phase[p]) / grand
        print(f"| {p} | {mean:.2f} | {share:.1%} | {_geomean(cumulative[p]) * 1e3:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
