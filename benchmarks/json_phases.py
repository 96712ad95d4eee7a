"""Where tokensieve's JSON Schema compile time goes, phase by phase, beside llguidance's whole compile.

Usage::

    python benchmarks/json_phases.py [--vocab tekken|smollm2] [--groups api,tools,...] [--schemas NAME,...]
                                     [--limit N] [--repeat N] [--warm] [--precompute auto|false]
                                     [--json out.json]

Compiles every schema of the JSON corpus (``data/json_schemas/``) with a new
``GrammarCompiler`` and fills the first mask, timing each phase by wrapping the
functions that carry it out where their callers look them up (a phase's time
leaves out the phases it calls):

* ``lower``: the cache key (the schema read and written canonically) and the
  schema to the grammar IR (``schema_to_grammar``), less the automata it
  builds for leaves;
* ``leaf automata``: what the lowering does to build the automata of
  strings, formats, numbers, other keys and enums (products, differences,
  counted repetitions, lookaheads), less the steps below;
* ``network plan``: the grammar's rules made ready for automata: left
  recursion, the rules called and inlined (``automata/outline.py``), the
  inlining itself, rule references as markers;
* ``nfa``, ``determinize``, ``minimize``, ``splice``: the IR to byte automata
  (``automata/build.py``'s steps; ``splice`` includes its plan);
* ``blank runs``: the runs of layout blanks counted into a DFA;
* ``automaton, rest``: what else building the automaton does (the byte
  tables of class automata, rule automata's call edges, layered products,
  memo look-ups);
* ``prepare``: the compiled grammar's own tables (a rule network's global
  tables, a DFA's views), the shared-mask classes, the walk's arrays and
  chains (also where a walk builds them on first use);
* ``walks``: the token masks computed at compile time and the first mask;
* ``gc``: the cyclic garbage collector's pauses, wherever they fell (the
  collector stays on, as in any process);
* ``other``: what no phase above covers (the compiler's memo and cache
  look-ups, the matcher, the clock's own calls: a few tens of microseconds per
  wrapped call).

By default every run of a schema is **cold**: it compiles in a process forked
after imports and per-vocabulary set-up (as ``json_bench.py``'s headline
compile figure), so no process-wide memo holds anything built for an earlier
schema or run. ``--warm`` compiles in the driver's own process instead, each
schema after the ones before it, so a run finds what the earlier ones left in
the process-wide memos (the first run of a schema as a server that has seen
other schemas would; later runs also what the earlier runs of the same schema
built). ``--precompute false`` compiles with ``GrammarCompiler(precompute=False)``:
no walk ahead of the first mask.

In the same run, llguidance (when installed) compiles the same schema and
fills its first mask, with the options of ``json_bench.py``, in the driver's
process (llguidance keeps no memo across its compilers). Prints, per phase,
its mean time and share of ours over the corpus, and the geometric means over
the schemas of our cumulative time up to and including it and of that time
divided by llguidance's whole compile plus first mask; a schema's figures are
the medians over ``--repeat`` runs (default 3). ``--json`` writes every
schema's phase medians.

This is a diagnostic: it answers how much of the gap to llguidance each phase
alone accounts for, not how fast a full decode is (``json_bench.py``).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import math
import os
import pickle
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from json_bench import HAND_WRITTEN_GROUPS, load_corpus
from vocabs import VOCAB_NAMES, load_vocab

#: (phase, module, attribute path) of every wrapped function; a phase may have several. A function
#: is wrapped where its callers look it up (the module that imports it by name), so a function that
#: several modules import is listed once per importer.
WRAPPED: tuple[tuple[str, str, str], ...] = (
    ("lower", "tokensieve.compile.compiler", "canonical_key"),
    ("lower", "tokensieve.compile.compiler", "schema_to_grammar"),
    ("leaf automata", "tokensieve.grammar.json_automata", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_automata", "choices_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_automata", "layered_intersection"),
    ("leaf automata", "tokensieve.grammar.json_automata", "cached_counted_repeat"),
    ("leaf automata", "tokensieve.grammar.json_schema._lower", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_schema._other_keys", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.json_schema._unique", "ir_to_dfa"),
    ("leaf automata", "tokensieve.grammar.lookahead", "ir_intersect"),
    ("leaf automata", "tokensieve.grammar.lookahead", "ir_difference"),
    ("leaf automata", "tokensieve.automata.ops", "ir_intersect"),
    ("leaf automata", "tokensieve.automata.ops", "ir_difference"),
    ("leaf automata", "tokensieve.automata.ops", "is_empty_ir"),
    ("network plan", "tokensieve.automata.pushdown", "drop_unproductive"),
    ("network plan", "tokensieve.automata.pushdown", "rewrite_left_recursion"),
    ("network plan", "tokensieve.automata.pushdown", "left_cycle"),
    ("network plan", "tokensieve.automata.pushdown", "without_empty"),
    ("network plan", "tokensieve.automata.pushdown", "rule_references"),
    ("network plan", "tokensieve.automata.pushdown", "recursive_rules"),
    ("network plan", "tokensieve.automata.pushdown", "outlined_rules"),
    ("network plan", "tokensieve.automata.pushdown", "split_heavy"),
    ("network plan", "tokensieve.automata.pushdown", "check_left_recursion"),
    ("network plan", "tokensieve.automata.pushdown", "rewrite"),
    ("network plan", "tokensieve.automata.pushdown", "_Inliner.expand"),
    ("network plan", "tokensieve.automata.pushdown", "_markers"),
    ("network plan", "tokensieve.automata.pushdown", "_uses_marker_bytes"),
    ("nfa", "tokensieve.automata.build", "build_nfa"),
    ("determinize", "tokensieve.automata.build", "determinize"),
    ("minimize", "tokensieve.automata.build", "minimize"),
    ("minimize", "tokensieve.automata.build", "minimize_edges"),
    ("minimize", "tokensieve.automata.build", "trim"),
    ("minimize", "tokensieve.automata.build", "trim_edges"),
    ("splice", "tokensieve.automata.build", "plan_splice"),
    ("splice", "tokensieve.automata.build", "splice"),
    ("blank runs", "tokensieve.automata.build", "bound_blank_runs"),
    ("automaton, rest", "tokensieve.compile.compiler", "compile_grammar_automaton"),
    ("prepare", "tokensieve.compile.compiled_grammar", "CompiledGrammar.__init__"),
    ("prepare", "tokensieve.compile.compiled_grammar", "CompiledGrammar.prepare"),
    ("prepare", "tokensieve.compile.compiled_grammar", "CompiledGrammar._representatives"),
    ("prepare", "tokensieve.compile.token_masks", "AutomatonView.of"),
    ("prepare", "tokensieve.compile.pushdown", "CompiledPushdownGrammar.__init__"),
    ("walks", "tokensieve.compile.compiled_grammar", "CompiledGrammar.precompute"),
    ("walks", "tokensieve.compile.compiled_grammar", "CompiledGrammar.token_mask"),
    ("walks", "tokensieve.compile.pushdown", "CompiledPushdownGrammar.precompute"),
    ("walks", "tokensieve.compile.pushdown", "CompiledPushdownGrammar.token_mask"),
)
PHASES = tuple(dict.fromkeys([p for p, _, _ in WRAPPED] + ["gc", "other"]))


class PhaseClock:
    """Exclusive time per phase: a wrapped call's time less that of the wrapped calls inside it.

    The cyclic garbage collector's pauses are a phase of their own (``gc``), left
    out of the phase they interrupt. Only calls on the thread that made the clock
    are timed: work a compile leaves to a background thread is not part of its
    compile time (nor of the compile's total).
    """

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._inner: list[float] = []
        self._thread = threading.get_ident()
        self._gc_start = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.spent["gc"] += time.perf_counter() - self._gc_start

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return fn(*args, **kwargs)
            self._inner.append(0.0)
            gc0 = self.spent["gc"]
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                # the call's time less the collector's pauses within it
                total = time.perf_counter() - t0 - (self.spent["gc"] - gc0)
                inner = self._inner.pop()
                self.spent[phase] += total - inner
                if self._inner:
                    self._inner[-1] += total

        return timed

    def reset(self) -> None:
        self.spent = dict.fromkeys(PHASES, 0.0)


def install(clock: PhaseClock) -> None:
    """Wrap every function of :data:`WRAPPED` where its caller looks it up (one that is gone is noted)."""
    for phase, module, path in WRAPPED:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        try:
            for part in outer:
                owner = getattr(owner, part)
            fn = getattr(owner, name)
        except AttributeError:
            print(f"json_phases: {module}.{path} is gone; {phase!r} misses it", file=sys.stderr)
            continue
        setattr(owner, name, clock.wrap(phase, fn))


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


def _one_run(run: Callable[[], None], clock: PhaseClock) -> dict[str, float]:
    """The phases of one call of ``run`` (after a full collection, so that each run starts alike)."""
    gc.collect()
    clock.reset()
    t0 = time.perf_counter()
    run()
    total = time.perf_counter() - t0
    spent = dict(clock.spent)
    spent["other"] = total - sum(spent.values())
    return spent


def _forked(run: Callable[[], None], clock: PhaseClock, budget_s: int) -> dict[str, float] | str:
    """:func:`_one_run` in a child forked from this process: its phases, or why it gave none."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compile, send the phases, leave without running the parent's clean-up
        os.close(r)
        signal.alarm(budget_s)
        try:
            out: dict[str, float] | str = _one_run(run, clock)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            out = f"{type(exc).__name__}: {exc}"[:300]
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return f"no result (child status {status}; over the {budget_s} s budget?)"
    result: dict[str, float] | str = pickle.loads(data)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", default="tekken", choices=VOCAB_NAMES)
    parser.add_argument("--groups", default="", help="corpus groups (by default the hand-written ones)")
    parser.add_argument("--schemas", default="", help="only these schemas (comma-separated names)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N schemas")
    parser.add_argument("--repeat", type=int, default=3, help="runs per schema (median)")
    parser.add_argument("--warm", action="store_true", help="compile in this process, memos kept")
    parser.add_argument("--precompute", default="auto", choices=("auto", "false"))
    parser.add_argument("--budget", type=int, default=120, help="seconds per cold run")
    parser.add_argument("--json", default="", help="write each schema's phase medians here")
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()] or list(HAND_WRITTEN_GROUPS)

    import tokensieve
    from tokensieve.compile.frame_walk import load_kernel

    clock = PhaseClock()
    install(clock)
    vocab = load_vocab(args.vocab)
    info = tokensieve.TokenizerInfo.from_file(str(vocab.path), stop_token_ids=[vocab.eos_token_id])
    bitmask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    precompute: Any = "auto" if args.precompute == "auto" else False
    peer = _llguidance(vocab)
    workloads = load_corpus(groups)
    if args.schemas:
        wanted = {n.strip() for n in args.schemas.split(",")}
        workloads = [w for w in workloads if w.name in wanted]
    if args.limit:
        workloads = workloads[: args.limit]
    # the set-up of json_bench.py's engine: the per-vocabulary token trie and the frame-walk kernel
    tokensieve.GrammarCompiler(info)
    load_kernel()
    if args.warm:
        # the per-vocabulary tables some walks build on first use are not any schema's compile time
        warm_up = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}
        tokensieve.GrammarMatcher(
            tokensieve.GrammarCompiler(info).compile_json_schema(warm_up)
        ).fill_next_token_bitmask(bitmask, 0)
    per_phase: dict[str, list[float]] = {p: [] for p in PHASES}
    cumulative: dict[str, list[float]] = {p: [] for p in PHASES}
    relative: dict[str, list[float]] = {p: [] for p in PHASES}
    theirs_all: list[float] = []
    record: dict[str, dict[str, float]] = {}
    failed: list[str] = []
    for i, w in enumerate(workloads):
        print(f"[{i + 1}/{len(workloads)}] {w.name}", file=sys.stderr)

        def run(schema: Any = w.schema) -> None:
            compiled = tokensieve.GrammarCompiler(info, precompute=precompute).compile_json_schema(
                schema, strict=False
            )
            tokensieve.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask, 0)

        runs: list[dict[str, float]] = []
        for _ in range(args.repeat):
            got = _one_run(run, clock) if args.warm else _forked(run, clock, args.budget)
            if isinstance(got, str):
                print(f"  failed: {got}", file=sys.stderr)
                break
            runs.append(got)
        if len(runs) < args.repeat:
            failed.append(w.name)
            continue
        try:
            theirs = statistics.median(peer(w) for _ in range(args.repeat)) if peer else 0.0
        except Exception as exc:  # a schema llguidance refuses (lookarounds) has no ratio
            print(f"  llguidance: {type(exc).__name__}", file=sys.stderr)
            theirs = 0.0
        if theirs:
            theirs_all.append(theirs)
        so_far = 0.0
        record[w.name] = {}
        for p in PHASES:
            t = statistics.median(r[p] for r in runs)
            record[w.name][p] = t
            so_far += t
            per_phase[p].append(t)
            cumulative[p].append(so_far)
            if theirs:
                relative[p].append(so_far / theirs)
        record[w.name]["total"] = so_far
        if theirs:
            record[w.name]["llguidance"] = theirs
    mode = "warm (one process)" if args.warm else "cold (a forked process per run)"
    print(
        f"{args.vocab}, {len(record)} schemas, median of {args.repeat} runs each, {mode}, "
        f"precompute={args.precompute}"
    )
    if failed:
        print(f"failed (left out): {', '.join(failed)}")
    if peer:
        print(f"llguidance compile + first mask: geometric mean {_geomean(theirs_all) * 1e3:.2f} ms")
    print()
    print("| phase | mean ms | share of ours | cumulative ms (geomean) | cumulative / llguidance (geomean) |")
    print("|---|---:|---:|---:|---:|")
    grand = sum(sum(v) for v in per_phase.values()) or 1.0
    for p in PHASES:
        ratio = f"{_geomean(relative[p]):.2f}" if relative[p] else "—"
        mean = statistics.fmean(per_phase[p]) * 1e3 if per_phase[p] else 0.0
        share = sum(per_phase[p]) / grand
        print(f"| {p} | {mean:.2f} | {share:.1%} | {_geomean(cumulative[p]) * 1e3:.2f} | {ratio} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
