"""Context-free grammar benchmark: tokensieve against xgrammar and llguidance.

Usage::

    python benchmarks/grammar_bench.py [--vocab tekken|smollm2] [--engines ours,xgrammar,llguidance]
                                       [--workloads json_gbnf,arith,sql,clike] [--repeat N] [--budget S]
                                       [--empty-jit-cache] [--json out.json]

The workloads (``grammar_workloads.py``) are grammars written for this
benchmark: JSON in GBNF with bounded white space, left-recursive arithmetic, a
SQL SELECT subset and a C-like statement language. tokensieve and xgrammar get
the same GBNF text, llguidance the same language in Lark syntax. As in the regex benchmark, every engine
compiles every workload in a process forked after imports and per-vocabulary
set-up (``cold.py``; the first compile there is the **cold** headline, the
repetitions after it the **warm** figures), with the same timed loop and
checks (``harness.py``). ``--empty-jit-cache`` measures the first run after
installation: tokensieve's frame-walk kernel is left out of the set-up and
every child compiles it from a new empty numba cache. The EOS
oracle and the judge of disputed tokens are an Earley recogniser over the GBNF
grammar (``tests/support/earley.py``), and the examples are first checked with
the ``lark`` package. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cold import (
    add_cold_arguments,
    failed,
    jit_cache_note,
    kernel_not_preloaded,
    render_cold_table,
    run_cold_workloads,
)
from grammar_workloads import GRAMMAR_WORKLOADS, GrammarWorkload, check_examples
from harness import comparable_words, compare_masks, prepare_walks, render_correctness
from peers import describe_engines, engine_names, run_metadata, set_up_engines
from vocabs import VOCAB_NAMES, Vocab, load_vocab

_TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from support.earley import Earley  # noqa: E402

from tokensieve.grammar.cfg import Grammar  # noqa: E402

DEFAULT_ENGINES = ("ours", "xgrammar", "llguidance")


class _EarleyOracle:
    """Viability and completeness of texts under one grammar, with memoised Earley sets per prefix."""

    def __init__(self, workload: GrammarWorkload) -> None:
        self.earley = Earley(Grammar.from_gbnf(workload.gbnf))
        self._sets: dict[str, list | None] = {"": self.earley.start()}

    def sets(self, text: str) -> list | None:
        """Earley sets of ``text`` (None: not a viable prefix)."""
        hit = self._sets.get(text, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        # extend the longest memoised prefix
        k = len(text)
        while k > 0 and text[:k] not in self._sets:
            k -= 1
        sets = self._sets[text[:k]]
        for i in range(k, len(text)):
            if sets is None:
                break
            sets = self.earley.step(sets, text[i])
            if i - k < 64:  # memoise the walk's prefixes, not every disputed token's tail
                self._sets[text[: i + 1]] = sets
        self._sets[text] = sets
        return sets

    def complete(self, data: bytes) -> bool:
        """Whether ``data`` is a sentence."""
        sets = self.sets(data.decode("utf-8"))
        return sets is not None and self.earley.is_complete(sets)


def _oracle_for(oracles: dict[str, _EarleyOracle]) -> Callable[[GrammarWorkload, Vocab], Callable]:
    def oracle_for(workload: GrammarWorkload, vocab: Vocab) -> Callable[[bytes, int], bool | None]:
        oracle = oracles[workload.name]
        eos = vocab.eos_token_id

        def judge(prefix: bytes, token_id: int) -> bool | None:
            try:
                if token_id == eos:
                    return oracle.complete(prefix)
                text = (prefix + vocab.tokens[token_id]).decode("utf-8")
            except UnicodeDecodeError:
                return None
            return oracle.sets(text) is not None

        return judge

    return oracle_for


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=VOCAB_NAMES, default="tekken", help="vocabulary (default: tekken)")
    parser.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help=f"comma-separated engines (default: {','.join(DEFAULT_ENGINES)}); missing ones are skipped",
    )
    parser.add_argument(
        "--workloads",
        default=",".join(w.name for w in GRAMMAR_WORKLOADS),
        help="comma-separated workloads (default: all)",
    )
    add_cold_arguments(parser)
    parser.add_argument(
        "--empty-jit-cache", action="store_true",
        help="the first run after installation: leave tokensieve's frame-walk kernel out of the set-up and "
        "give every child a new empty NUMBA_CACHE_DIR, so that its first rule-network walk compiles the kernel",
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every measurement to this JSON file"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report; returns 1 if any correctness check failed."""
    args = _parse_args(argv)
    names = engine_names(args.engines, DEFAULT_ENGINES)
    if names is None:
        return 2
    wanted = [n.strip() for n in args.workloads.split(",") if n.strip()]
    known = {w.name: w for w in GRAMMAR_WORKLOADS}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        print(f"unknown workloads {unknown}; expected some of {', '.join(known)}", file=sys.stderr)
        return 2
    workloads = [known[n] for n in wanted]
    for w in workloads:
        check_examples(w)

    t = time.perf_counter()
    vocab = load_vocab(args.vocab)
    print(
        f"vocabulary {vocab.name}: {vocab.vocab_size} ids, loaded in {time.perf_counter() - t:.2f} s",
        file=sys.stderr,
    )
    oracles = {w.name: _EarleyOracle(w) for w in workloads}
    walks = {w.name: prepare_walks(w, vocab, oracles[w.name].complete) for w in workloads}  # type: ignore[arg-type]

    # ours loads the frame-walk kernel of recursive grammars in its set-up (benchmarks/peers.py),
    # unless the run measures an empty JIT cache
    with kernel_not_preloaded() if args.empty_jit_cache else contextlib.nullcontext():
        engines, skipped, setup_s = set_up_engines(names, vocab)
    jit_note = jit_cache_note(args.empty_jit_cache)

    started = time.perf_counter()
    results = run_cold_workloads(
        engines, workloads, walks, args.repeat, args.budget, comparable_words(vocab), args.empty_jit_cache  # type: ignore[arg-type]
    )
    cold = [r.cold for r in results if r.compiled and r.cold is not None]
    diffs, disputes, notes = compare_masks(
        cold,
        vocab,
        workloads,
        walks,
        oracle_for=_oracle_for(oracles),  # type: ignore[arg-type]
    )
    ran = [e.name for e in engines]
    lines = render_cold_table(results, ran, workloads)
    if skipped:
        lines += ["", "Skipped engines:", "", *(f"- {n}: {why}" for n, why in skipped.items())]
    lines += render_correctness(
        cold, workloads, diffs, disputes, notes,
        oracle_note="an Earley recogniser over the GBNF grammar (is the text plus the token a viable prefix?)",
    )
    report = "\n".join(lines)
    steps = {w.name: sum(len(x.token_ids) + 1 for x in walks[w.name]) for w in workloads}
    print(
        f"# Grammar benchmark: {vocab.name} ({vocab.vocab_size} tokens); each engine and workload in a process "
        f"forked after set-up: 1 cold + up to {args.repeat - 1} warm repetitions (medians), "
        f"budget {args.budget:g} s\n\n"
        + describe_engines(engines, setup_s)
        + f"Steps per walk: {', '.join(f'{k} {v}' for k, v in steps.items())}. Cold = the first compile in "
        "the child and the per-token times of its walk; warm = medians over the repetitions after it. "
        f"JIT: {jit_note}. gc disabled during timed repetitions. Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs. Wall time {time.perf_counter() - started:.0f} s.\n"
    )
    print(report)

    if args.json is not None:
        payload = {
            **run_metadata(vocab, args.repeat),
            "budget_s": args.budget,
            "jit": jit_note,
            "engines": {
                e.name: {"dist": e.dist, "version": e.version, "setup_s": setup_s[e.name]} for e in engines
            },
            "skipped": skipped,
            "workloads": {
                w.name: {"gbnf": w.gbnf, "lark": w.lark, "examples": list(w.examples)} for w in workloads
            },
            "results": [r.summary() for r in results],
            "differences": [d.__dict__ for d in diffs],
            "disputes": [d.__dict__ for d in disputes],
            "notes": notes,
            "markdown": report,
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)

    return 1 if failed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
