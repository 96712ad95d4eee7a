"""Measurement loop, correctness checks and reporting shared by the benchmarks.

For one (engine, workload) pair and each repetition:

1. a fresh compiler (no grammar cache), then ``compile`` is timed;
2. for every example string, a fresh matcher walks the example's tokens: at each
   step the mask is filled (only this call is timed), the next token of the
   example is checked against the mask and then accepted; after the last token
   the mask must allow EOS, EOS is accepted and the matcher must report that it
   terminated;
3. "compile + first mask" runs from the start of ``compile`` to the end of the
   first fill of the first example (so it includes creating the matcher).

The garbage collector is disabled for the whole repetition (collected before).
Per-token statistics are computed per repetition over every step of every
example; every reported figure is the median over repetitions.

Correctness, checked on every step of every repetition:

- the example's next token must be allowed (a disallowed token is a failure);
- the EOS bit must be set exactly when the text so far is a complete match
  (Python's ``re.fullmatch`` on the bytes is the oracle);
- the engine must accept the token, and must be terminated after EOS.

The masks of the first repetition are kept and compared across engines, over
regular tokens and the EOS id (other control ids are reported separately). With a
:class:`MaskStore` they are copied into rows allocated and written before any
timing, so the memory they take never comes from what a compile has just freed
(see :class:`MaskStore`).
"""

from __future__ import annotations

import gc
import math
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from peers import Engine
from vocabs import Vocab
from workloads import Workload

__all__ = [
    "Walk", "EngineResult", "MaskStore", "Difference", "Dispute", "prepare_walks", "run_engine_workload",
    "compare_masks", "comparable_words", "render_markdown", "render_correctness", "iter_rows", "geomean",
    "fmt",
]

_MAX_FAILURE_MESSAGES = 10


@dataclass
class Walk:
    """One example string as token ids, with the EOS oracle for every step.

    ``eos_expected[j]`` says whether EOS must be allowed before token ``j``
    (``j == len(token_ids)`` is the step after the last token).
    """

    text: str
    token_ids: list[int]
    eos_expected: list[bool]


@dataclass
class TokenStats:
    """Per-token fill time of one repetition, in microseconds."""

    mean: float
    p50: float
    p99: float
    max: float
    count: int

    @staticmethod
    def of(samples_ns: Sequence[int]) -> TokenStats:
        """Statistics of fill durations given in nanoseconds."""
        arr = np.asarray(samples_ns, dtype=np.float64) / 1e3
        return TokenStats(
            mean=float(arr.mean()),
            p50=float(np.percentile(arr, 50)),
            p99=float(np.percentile(arr, 99)),
            max=float(arr.max()),
            count=int(arr.size),
        )


@dataclass
class EngineResult:
    """Everything measured for one engine on one workload."""

    engine: str
    workload: str
    error: str | None = None
    compile_ms: list[float] = field(default_factory=list)
    first_mask_ms: list[float] = field(default_factory=list)
    token_stats: list[TokenStats] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failure_count: int = 0
    masks: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)
    #: the engine's compiled object of the last repetition (not part of the summary)
    compiled: Any = field(default=None, repr=False, compare=False)

    def median(self, metric: str) -> float | None:
        """Median over repetitions of ``compile_ms``, ``first_mask_ms`` or a token statistic."""
        if metric == "compile_ms":
            values = self.compile_ms
        elif metric == "first_mask_ms":
            values = self.first_mask_ms
        else:
            values = [getattr(s, metric) for s in self.token_stats]
        return statistics.median(values) if values else None

    def fail(self, message: str) -> None:
        """Record a correctness failure (the first few messages are kept verbatim)."""
        self.failure_count += 1
        if len(self.failures) < _MAX_FAILURE_MESSAGES:
            self.failures.append(message)

    def summary(self) -> dict[str, Any]:
        """JSON-ready medians, raw samples and failures."""
        return {
            "engine": self.engine,
            "workload": self.workload,
            "error": self.error,
            "compile_ms_median": self.median("compile_ms"),
            "first_mask_ms_median": self.median("first_mask_ms"),
            "per_token_us_median": {k: self.median(k) for k in ("mean", "p50", "p99", "max")},
            "steps_per_repetition": self.token_stats[0].count if self.token_stats else 0,
            "compile_ms": self.compile_ms,
            "first_mask_ms": self.first_mask_ms,
            "per_token_us": [s.__dict__ for s in self.token_stats],
            "failure_count": self.failure_count,
            "failures": self.failures,
        }


@dataclass
class Difference:
    """Steps where two engines' masks disagree on one workload."""

    workload: str
    engine_a: str
    engine_b: str
    steps_compared: int
    steps_differing: int


@dataclass
class Dispute:
    """One engine's record on tokens that some engines allow and others do not.

    ``missing``: valid tokens (the oracle says they keep the output a viable prefix)
    the engine does not allow, i.e. incompleteness. ``invalid``: tokens the engine
    allows that the oracle rejects, i.e. unsoundness. ``undetermined``: tokens the
    oracle cannot judge (they split a UTF-8 character).
    """

    workload: str
    engine: str
    missing: int = 0
    invalid: int = 0
    undetermined: int = 0
    missing_examples: list[str] = field(default_factory=list)
    invalid_examples: list[str] = field(default_factory=list)

    def record(self, valid: bool | None, allowed: bool, prefix: bytes, token: str) -> None:
        """Account for one disputed token at one step."""
        if valid is None:
            self.undetermined += allowed
        elif valid and not allowed:
            self.missing += 1
            if len(self.missing_examples) < 4:
                self.missing_examples.append(f"after {prefix!r}: {token}")
        elif not valid and allowed:
            self.invalid += 1
            if len(self.invalid_examples) < 4:
                self.invalid_examples.append(f"after {prefix!r}: {token}")

    def total(self) -> int:
        """Number of disputed tokens that count against this engine."""
        return self.missing + self.invalid + self.undetermined


def prepare_walks(
    workload: Workload, vocab: Vocab, complete: Callable[[bytes], bool] | None = None
) -> list[Walk]:
    """Tokenize the workload's examples and compute the EOS oracle for each step.

    ``complete(text)`` says whether ``text`` is a full match; by default Python's
    ``re.fullmatch`` with the workload's regex.
    """
    if complete is None:
        pattern = re.compile(workload.as_regex().encode("utf-8"))

        def complete(data: bytes) -> bool:
            return pattern.fullmatch(data) is not None

    walks = []
    for text in workload.examples:
        ids = vocab.tokenize(text)
        prefix = b""
        eos = []
        for token_id in ids:
            eos.append(complete(prefix))
            prefix += vocab.tokens[token_id]
        eos.append(complete(prefix))
        walks.append(Walk(text=text, token_ids=ids, eos_expected=eos))
    return walks


def _bit(mask: np.ndarray, token_id: int) -> bool:
    return bool((int(mask[token_id >> 5]) >> (token_id & 31)) & 1)


def _token_repr(vocab: Vocab, token_id: int) -> str:
    if token_id == vocab.eos_token_id:
        return f"{token_id}:<eos>"
    return f"{token_id}:{vocab.tokens[token_id]!r}"


class MaskStore:
    """Rows for the recorded masks, allocated and written once, before any timing.

    Copying each step's mask into an array of its own grows the process between
    two compiles (about 12 MB per schema for three engines on a 131k vocabulary,
    3 GB over the JSON corpus), and those copies take the memory that the last
    compile freed, so the next compile gets pages the process has never
    touched. A first touch is slow on some machines (on one virtual machine
    these benchmarks ran on, about 10 µs per 4 KB page): in a reproduction with
    tokensieve alone (``benchmarks/alloc_check.py``), the same retention made its
    compile-plus-first-mask geometric mean 1.35 times longer there, and recording
    into rows written up front took that back to within 4 %; on another (six
    times fewer page faults while timed) 1.10 against 1.07. Past ``rows``
    masks, a row is copied as before.

    Parameters
    ----------
    rows
        How many masks to hold.
    words
        ``uint32`` words per mask.
    """

    def __init__(self, rows: int, words: int) -> None:
        self._rows = np.ones((rows, words), dtype=np.uint32)  # written: every page touched now
        self._used = 0

    def keep(self, row: np.ndarray) -> np.ndarray:
        """A copy of ``row`` (viewed as ``uint32``), in the next free row."""
        words = row.view(np.uint32)
        if self._used >= self._rows.shape[0] or words.shape != self._rows.shape[1:]:
            return words.copy()
        out = self._rows[self._used]
        out[:] = words
        self._used += 1
        return out


def run_engine_workload(
    engine: Engine,
    workload: Workload,
    walks: list[Walk],
    repeat: int,
    *,
    log: bool = True,
    store: MaskStore | None = None,
    keep_compiled: bool = False,
) -> EngineResult:
    """Measure ``engine`` on ``workload`` ``repeat`` times (see the module docstring).

    ``store``: where the masks of the first repetition are kept (by default
    each in an array of its own). ``keep_compiled``: keep the last repetition's
    compiled object in :attr:`EngineResult.compiled` (by default it is dropped,
    so that results kept across workloads do not hold compiled grammars).
    """
    assert engine.vocab is not None, "engine.setup(vocab) first"
    vocab = engine.vocab
    eos = vocab.eos_token_id
    result = EngineResult(engine=engine.name, workload=workload.name)
    row = engine.bitmask[0]
    clock = time.perf_counter_ns
    for rep in range(repeat):
        keep_masks = rep == 0
        engine.new_compiler()
        gc.collect()
        gc.disable()
        try:
            t0 = clock()
            compiled = engine.compile(workload)
            t1 = clock()
            first_end = 0
            fills: list[int] = []
            for ex_index, walk in enumerate(walks):
                matcher = engine.matcher(compiled)
                steps = [*walk.token_ids, eos]
                for step, token_id in enumerate(steps):
                    s = clock()
                    matcher.fill()
                    e = clock()
                    fills.append(e - s)
                    if not first_end:
                        first_end = e
                    if keep_masks:
                        kept = row.view(np.uint32).copy() if store is None else store.keep(row)
                        result.masks[(ex_index, step)] = kept
                    where = f"{walk.text!r} step {step}"
                    if not _bit(row, token_id):
                        result.fail(
                            f"{where}: next token {_token_repr(vocab, token_id)} not allowed by the mask"
                        )
                    if token_id != eos and _bit(row, eos) != walk.eos_expected[step]:
                        expected = "allowed" if walk.eos_expected[step] else "forbidden"
                        result.fail(f"{where}: EOS should be {expected}")
                    if not matcher.accept(token_id):
                        result.fail(
                            f"{where}: accept({_token_repr(vocab, token_id)}) rejected; rest of walk skipped"
                        )
                        break
                else:
                    if not matcher.is_terminated():
                        result.fail(f"{walk.text!r}: not terminated after EOS")
        except Exception as exc:  # an engine that cannot compile or crashes is reported, not fatal
            result.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            return result
        finally:
            gc.enable()
        if keep_compiled:
            result.compiled = compiled
        result.compile_ms.append((t1 - t0) / 1e6)
        result.first_mask_ms.append((first_end - t0) / 1e6)
        result.token_stats.append(TokenStats.of(fills))
    if log:
        print(
            f"  {engine.name:<10} {workload.name:<12} compile {fmt(result.median('compile_ms'))} ms, "
            f"mean {fmt(result.median('mean'))} µs/token, failures {result.failure_count}",
            file=sys.stderr,
        )
    return result


def comparable_words(vocab: Vocab) -> np.ndarray:
    """uint32 word mask of the ids every engine must agree on: regular tokens and EOS."""
    allowed = np.array([bool(t) for t in vocab.tokens], dtype=bool)
    allowed[vocab.eos_token_id] = True
    return _pack(allowed)


def _pack(flags: np.ndarray) -> np.ndarray:
    words = (flags.size + 31) // 32
    padded = np.zeros(words * 32, dtype=bool)
    padded[: flags.size] = flags
    return np.packbits(padded, bitorder="little").view(np.uint32)


def _ids(words: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))


def _viability_oracle(workload: Workload, vocab: Vocab) -> Callable[[bytes, int], bool | None] | None:
    """``oracle(prefix, token_id)``: is ``prefix + token`` still a prefix of a match (EOS: a match)?

    Uses the ``regex`` module's partial matching; ``None`` when it is not installed.
    The oracle answers ``None`` when the bytes do not decode as UTF-8 (a token that
    splits a character), where partial matching on ``str`` cannot decide.
    """
    try:
        import regex
    except ImportError:
        return None
    pattern = regex.compile(workload.as_regex())
    eos = vocab.eos_token_id

    def oracle(prefix: bytes, token_id: int) -> bool | None:
        try:
            if token_id == eos:
                return pattern.fullmatch(prefix.decode("utf-8")) is not None
            text = (prefix + vocab.tokens[token_id]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return pattern.fullmatch(text, partial=True) is not None

    return oracle


Oracle = Callable[[bytes, int], "bool | None"]


def compare_masks(
    results: Iterable[EngineResult],
    vocab: Vocab,
    workloads: Sequence[Workload],
    walks_by_workload: dict[str, list[Walk]],
    oracle_for: Callable[[Workload, Vocab], Oracle | None] | None = None,
) -> tuple[list[Difference], list[Dispute], list[str]]:
    """Compare the kept masks of every engine on every workload.

    Returns pairwise differences, per-engine verdicts on the disputed tokens
    (allowed by some engines but not all; judged by ``oracle_for(workload, vocab)``,
    by default :func:`_viability_oracle`), and notes (control ids other than EOS
    being allowed, oracle unavailable).
    """
    if oracle_for is None:
        oracle_for = _viability_oracle
    comparable = comparable_words(vocab)
    by_workload: dict[str, list[EngineResult]] = {}
    for r in results:
        if r.error is None and r.masks:
            by_workload.setdefault(r.workload, []).append(r)
    workload_index = {w.name: w for w in workloads}
    diffs: list[Difference] = []
    disputes: list[Dispute] = []
    notes: list[str] = []
    for name, rs in by_workload.items():
        walks = walks_by_workload[name]
        for r in rs:
            extra: set[int] = set()
            for words in r.masks.values():
                extra.update(int(t) for t in _ids(words & ~comparable) if t < vocab.vocab_size)
            if extra:
                notes.append(f"{name}/{r.engine}: control ids allowed besides EOS: {sorted(extra)[:10]}")
        for i, a in enumerate(rs):
            for b in rs[i + 1 :]:
                keys = sorted(set(a.masks) & set(b.masks))
                differing = sum(1 for k in keys if ((a.masks[k] ^ b.masks[k]) & comparable).any())
                diffs.append(Difference(name, a.engine, b.engine, len(keys), differing))
        if len(rs) < 2:
            continue
        oracle = oracle_for(workload_index[name], vocab)
        if oracle is None:
            notes.append("the `regex` module is not installed: disputed tokens are not judged")
            continue
        verdicts = {r.engine: Dispute(name, r.engine) for r in rs}
        keys = sorted(set.intersection(*(set(r.masks) for r in rs)))
        for key in keys:
            masks = [r.masks[key] & comparable for r in rs]
            union = np.bitwise_or.reduce(masks)
            common = np.bitwise_and.reduce(masks)
            disputed = _ids(union & ~common)
            if disputed.size == 0:
                continue
            walk = walks[key[0]]
            prefix = b"".join(vocab.tokens[t] for t in walk.token_ids[: key[1]])
            for token_id in disputed.tolist():
                valid = oracle(prefix, token_id)
                for r, mask in zip(rs, masks, strict=True):
                    allowed = _bit(mask.view(np.int32), token_id)
                    verdicts[r.engine].record(valid, allowed, prefix, _token_repr(vocab, token_id))
        disputes.extend(v for v in verdicts.values() if v.total())
    return diffs, disputes, notes


def fmt(value: float | None) -> str:
    """Compact number: 3 significant digits below 100, integers above."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _ratio(ours: float | None, peer: float | None) -> float | None:
    if ours is None or peer is None or peer <= 0:
        return None
    return ours / peer


def geomean(values: list[float]) -> float | None:
    """Geometric mean of the positive values (``None`` when there are none)."""
    values = [v for v in values if v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


_RATIO_METRICS = (("compile_ms", "compile"), ("first_mask_ms", "1st mask"), ("mean", "mean"), ("p50", "p50"))


def iter_rows(
    results: Iterable[Any], workloads: Sequence[Workload], engines: Sequence[str], baseline: str = "ours"
) -> Iterator[tuple[Workload, str, Any, Any]]:
    """``(workload, engine, result, baseline's result or None)`` in workload then engine order, for the
    results (anything with ``workload`` and ``engine`` names) that exist."""
    index = {(r.workload, r.engine): r for r in results}
    for w in workloads:
        base = index.get((w.name, baseline))
        for name in engines:
            r = index.get((w.name, name))
            if r is not None:
                yield w, name, r, base


def render_markdown(
    results: list[EngineResult],
    engines: Sequence[str],
    workloads: Sequence[Workload],
    diffs: list[Difference],
    disputes: list[Dispute],
    notes: list[str],
    skipped: dict[str, str],
    baseline: str = "ours",
    oracle_note: str = "partial matching with the `regex` module",
) -> str:
    """The results table, ratio summary and correctness report as markdown.

    ``oracle_note`` says how disputed tokens were judged.
    """
    has_baseline = baseline in engines
    lines: list[str] = []
    header = ["workload", "engine", "compile ms", "compile + 1st mask ms", "mean µs", "p50 µs", "p99 µs", "max µs",
              "steps", "failures"]
    if has_baseline:
        header += [f"{baseline}/peer {label}" for _, label in _RATIO_METRICS]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|")
    ratios: dict[str, dict[str, list[float]]] = {e: {m: [] for m, _ in _RATIO_METRICS} for e in engines}
    for w, name, r, base in iter_rows(results, workloads, engines, baseline):
        if r.error is not None:
            cells = [w.name, name, f"error: {r.error}"] + [""] * (len(header) - 3)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        cells = [w.name, name, *(fmt(r.median(m)) for m in ("compile_ms", "first_mask_ms", "mean", "p50", "p99", "max")),
                 str(r.token_stats[0].count), str(r.failure_count)]
        if has_baseline:
            for metric, _ in _RATIO_METRICS:
                if name == baseline or base is None or base.error is not None:
                    cells.append("—")
                    continue
                q = _ratio(base.median(metric), r.median(metric))
                if q is not None:
                    ratios[name][metric].append(q)
                cells.append("—" if q is None else f"{q:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    if has_baseline and len(engines) > 1:
        lines += ["", f"Geometric mean over workloads of {baseline}/peer (below 1: {baseline} is faster):", "",
                  "| peer | " + " | ".join(label for _, label in _RATIO_METRICS) + " |", "|---|" + "---:|" * len(_RATIO_METRICS)]
        for name in engines:
            if name == baseline:
                continue
            gm = [geomean(ratios[name][m]) for m, _ in _RATIO_METRICS]
            lines.append(f"| {name} | " + " | ".join("—" if g is None else f"{g:.2f}" for g in gm) + " |")
    if skipped:
        lines += ["", "Skipped engines:", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()]
    lines += render_correctness(results, workloads, diffs, disputes, notes, oracle_note)
    return "\n".join(lines)


def render_correctness(
    results: Sequence[EngineResult],
    workloads: Sequence[Workload],
    diffs: list[Difference],
    disputes: list[Dispute],
    notes: list[str],
    oracle_note: str = "partial matching with the `regex` module",
) -> list[str]:
    """The correctness report's markdown lines: walk checks, errors, mask agreement, disputed tokens, notes."""
    lines = ["", "### Correctness", "", "Walk checks (next token allowed, EOS bit, accept, termination):", ""]
    failing = [r for r in results if r.failure_count]
    for r in failing:
        lines.append(f"- {r.workload}/{r.engine}: {r.failure_count} failures, e.g.")
        lines += [f"  - {m}" for m in r.failures[:5]]
    if not failing:
        lines.append("- every engine allowed every next token of every walk, set EOS exactly on complete matches, "
                     "and terminated after EOS.")
    errors = [r for r in results if r.error]
    lines += [f"- {r.workload}/{r.engine}: error {r.error}" for r in errors]

    if diffs:
        pairs = list(dict.fromkeys((d.engine_a, d.engine_b) for d in diffs))
        lines += ["", "Mask agreement: steps on which two engines' masks differ (regular tokens and EOS):", "",
                  "| workload | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |", "|---|" + "---:|" * len(pairs)]
        by_key = {(d.workload, d.engine_a, d.engine_b): d for d in diffs}
        for w in workloads:
            row = []
            for a, b in pairs:
                d = by_key.get((w.name, a, b))
                row.append("—" if d is None else f"{d.steps_differing}/{d.steps_compared}")
            if any(c != "—" for c in row):
                lines.append(f"| {w.name} | " + " | ".join(row) + " |")
    if disputes:
        lines += ["", f"Disputed tokens (allowed by some engines, not all), judged by {oracle_note}:", ""]
        for d in disputes:
            parts = []
            if d.missing:
                parts.append(f"misses {d.missing} valid (e.g. {'; '.join(d.missing_examples[:2])})")
            if d.invalid:
                parts.append(f"allows {d.invalid} invalid (e.g. {'; '.join(d.invalid_examples[:2])})")
            if d.undetermined:
                parts.append(f"allows {d.undetermined} that split a UTF-8 character (not judged)")
            lines.append(f"- {d.workload}/{d.engine}: " + "; ".join(parts))
    elif diffs:
        lines += ["", "- every engine's mask agrees with every other's on every compared step."]
    lines += [f"- {n}" for n in notes]
    return lines
