"""Run the JSON-Schema-Test-Suite (draft 2020-12) through the token-level matcher.

Used by ``tests/json_schema/test_suite_conformance.py`` (the ratchet test) and by
``scripts/json_suite_report.py`` (the table in ``docs/json-schema.md``).

What "pass" means
-----------------
Every test group's schema is compiled once with ``strict=True`` and
``property_order="any"`` (the suite lists keys in arbitrary order). A
:class:`~tokensieve.SchemaError` or :class:`~tokensieve.LimitExceeded` marks the
group *not compiled*; any other exception is a *compile crash* (also not
compiled, and reported as such, because bad input must get a typed error).

Each instance is written two ways, ``json.dumps(instance)`` and
``json.dumps(instance, indent=2)`` (both escape non-ASCII characters as
``\\uXXXX``), and, when it holds non-ASCII characters, a third way with
``ensure_ascii=False`` (UTF-8, the way a model usually writes them). Each text is
encoded by the vocabulary's own tokenizer (no special tokens) and fed token
by token to a fresh :class:`~tokensieve.GrammarMatcher`. The text is
*accepted* when every token is accepted and, after the last one, the stop token
is set in the mask, is accepted, and terminates the matcher. Before each
``accept_token`` the next-token mask is filled and must agree with the answer
(a token is in the mask exactly when it is accepted); any disagreement is a
*mask mismatch* and fails the test.

A valid instance passes when every text is accepted; an invalid one when every
text is rejected. The classes recorded per test are ``valid-accepted`` and
``invalid-rejected`` (passing), ``valid-rejected`` (incomplete),
``invalid-accepted`` (unsound), ``not-compiled``, ``untokenizable`` (the
tokenizer's tokens do not spell the text back) and ``crash`` (an exception
while matching).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tokensieve import (
    GrammarCompiler,
    GrammarMatcher,
    LimitExceeded,
    SchemaError,
    TokenizerInfo,
    allocate_token_bitmask,
)

__all__ = [
    "CLASSES",
    "LLGUIDANCE_PASSED",
    "FileSummary",
    "GroupResult",
    "SuiteResult",
    "TestResult",
    "check_ratchet",
    "compile_strict",
    "failure_report",
    "load_hf_tokenizer",
    "load_suite",
    "markdown_tables",
    "run_suite",
    "suite_dir",
    "updated_ratchet",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DRAFT = "draft2020-12"
#: Tests of draft 2020-12 that llguidance reports passing (its published conformance figure).
LLGUIDANCE_PASSED = 934

PASSING = ("valid-accepted", "invalid-rejected")
CLASSES = (
    "valid-accepted",
    "invalid-rejected",
    "valid-rejected",
    "invalid-accepted",
    "not-compiled",
    "untokenizable",
    "crash",
)

CompileFn = Callable[[GrammarCompiler, Any], Any]


def suite_dir() -> Path:
    """Where the draft 2020-12 tests live.

    ``$TOKENSIEVE_SHARED_DATA/JSON-Schema-Test-Suite/tests/draft2020-12``, with
    ``TOKENSIEVE_SHARED_DATA`` defaulting to ``../shared/data`` beside the
    repository. The folder may not exist (check before use).
    """
    base = os.environ.get("TOKENSIEVE_SHARED_DATA") or str(REPO_ROOT.parent / "shared" / "data")
    return Path(base) / "JSON-Schema-Test-Suite" / "tests" / DRAFT


def load_suite(directory: Path, which: str = "keywords") -> list[tuple[str, list[dict[str, Any]]]]:
    """The suite's files as ``(name, groups)`` pairs, sorted by name.

    ``which="keywords"`` reads the top-level ``*.json`` files (names like
    ``"type.json"``); ``which="format"`` reads ``optional/format/*.json``
    (names like ``"format/date.json"``).
    """
    if which == "keywords":
        files = sorted(directory.glob("*.json"))
        prefix = ""
    elif which == "format":
        files = sorted((directory / "optional" / "format").glob("*.json"))
        prefix = "format/"
    else:
        raise ValueError(f"which must be 'keywords' or 'format', not {which!r}")
    return [(prefix + f.name, json.loads(f.read_text(encoding="utf-8"))) for f in files]


@lru_cache(maxsize=2)
def load_hf_tokenizer(gguf_path: str) -> Any:
    """The Hugging Face fast tokenizer stored in a GGUF file (a few seconds; cached)."""
    import transformers

    path = Path(gguf_path)
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def compile_strict(compiler: GrammarCompiler, schema: Any) -> Any:
    """The compile call under test: strict, keys in any order, default whitespace."""
    return compiler.compile_json_schema(schema, strict=True, property_order="any")


# ------------------------------------------------------------------ results


@dataclass
class TestResult:
    """One instance of one group."""

    description: str
    instance: Any
    valid: bool
    cls: str
    #: what went wrong, per serialisation (empty when the test passes)
    detail: str = ""
    mask_mismatch: str = ""

    @property
    def passed(self) -> bool:
        return self.cls in PASSING and not self.mask_mismatch

    __test__ = False  # not a pytest class


@dataclass
class GroupResult:
    """One schema of one file."""

    file: str
    index: int
    description: str
    schema: Any
    compiled: bool
    error: str = ""
    crashed: bool = False
    compile_seconds: float = 0.0
    run_seconds: float = 0.0
    unenforced: tuple[str, ...] = ()
    tests: list[TestResult] = field(default_factory=list)


@dataclass
class FileSummary:
    """Counts for one suite file."""

    name: str
    groups: int = 0
    groups_compiled: int = 0
    tests: int = 0
    passed: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    mask_mismatches: int = 0
    compile_crashes: int = 0
    #: groups that compiled but report parts of the schema as not enforced
    groups_unenforced: int = 0
    #: invalid instances accepted by such groups (the compiler said so)
    invalid_accepted_declared: int = 0

    def add(self, other: FileSummary) -> None:
        self.groups += other.groups
        self.groups_compiled += other.groups_compiled
        self.tests += other.tests
        self.passed += other.passed
        for k, v in other.counts.items():
            self.counts[k] += v
        self.mask_mismatches += other.mask_mismatches
        self.groups_unenforced += other.groups_unenforced
        self.invalid_accepted_declared += other.invalid_accepted_declared
        self.compile_crashes += other.compile_crashes


@dataclass
class SuiteResult:
    """Everything one run produced."""

    groups: list[GroupResult]
    seconds: float
    tokenizer: str

    def summaries(self, prefix_filter: str | None = None) -> dict[str, FileSummary]:
        """Per-file counts; ``prefix_filter="format/"`` selects the format files, ``""`` the others."""
        out: dict[str, FileSummary] = {}
        for g in self.groups:
            is_format = g.file.startswith("format/")
            if prefix_filter == "format/" and not is_format:
                continue
            if prefix_filter == "" and is_format:
                continue
            s = out.setdefault(g.file, FileSummary(g.file))
            s.groups += 1
            s.groups_compiled += g.compiled
            s.compile_crashes += g.crashed
            s.groups_unenforced += bool(g.unenforced)
            for t in g.tests:
                s.tests += 1
                s.passed += t.passed
                s.counts[t.cls] += 1
                s.mask_mismatches += bool(t.mask_mismatch)
                s.invalid_accepted_declared += bool(g.unenforced) and t.cls == "invalid-accepted"
        return dict(sorted(out.items()))

    def total(self, prefix_filter: str | None = None) -> FileSummary:
        tot = FileSummary("total")
        for s in self.summaries(prefix_filter).values():
            tot.add(s)
        return tot


# ------------------------------------------------------------------ running


class _Encoder:
    """Token ids for texts, encoded in one batch and checked against the vocabulary's bytes."""

    def __init__(self, tokenizer: Any, info: TokenizerInfo) -> None:
        self._backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        self._vocab = info.decoded_vocab
        self._ids: dict[str, list[int] | None] = {}

    def prepare(self, texts: Iterable[str]) -> None:
        todo = sorted({t for t in texts if t not in self._ids})
        if not todo:
            return
        encodings = self._backend.encode_batch(todo, add_special_tokens=False)
        for text, enc in zip(todo, encodings, strict=True):
            ids = [int(i) for i in enc.ids]
            try:
                want = text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: not UTF-8 text at all
                self._ids[text] = None
                continue
            got = b"".join(self._vocab[i] if i < len(self._vocab) else b"\xff\xff" for i in ids)
            self._ids[text] = ids if got == want else None

    def ids(self, text: str) -> list[int] | None:
        if text not in self._ids:
            self.prepare([text])
        return self._ids[text]


def _texts(instance: Any) -> list[str]:
    """The serialisations an instance is tried in (duplicates dropped)."""
    forms = [
        json.dumps(instance),
        json.dumps(instance, indent=2),
        json.dumps(instance, ensure_ascii=False),
    ]
    return list(dict.fromkeys(forms))


def _bit(mask_row: np.ndarray, token: int) -> bool:
    return bool((int(mask_row[token >> 5]) >> (token & 31)) & 1)


def _feed(
    compiled: Any, ids: list[int], eos: int, bitmask: np.ndarray, check_masks: bool
) -> tuple[bool, str, str]:
    """Feed ``ids`` then the stop token; (accepted, why rejected, mask mismatch)."""
    m = GrammarMatcher(compiled)
    row = bitmask[0]
    mismatch = ""
    for pos, tid in enumerate(ids):
        if check_masks:
            m.fill_next_token_bitmask(bitmask)
            in_mask = _bit(row, tid)
        ok = m.accept_token(tid)
        if check_masks and in_mask != ok and not mismatch:
            mismatch = f"token #{pos} ({tid}) {'in' if in_mask else 'not in'} the mask but accept_token returned {ok}"
        if not ok:
            return False, f"token #{pos} ({tid}) rejected", mismatch
    m.fill_next_token_bitmask(bitmask)
    eos_in_mask = _bit(row, eos)
    ok = m.accept_token(eos) and m.is_terminated()
    if eos_in_mask != ok and not mismatch:
        mismatch = f"stop token {'in' if eos_in_mask else 'not in'} the mask but accepting it gave {ok}"
    if not (eos_in_mask and ok):
        return False, "stop token not allowed at the end", mismatch
    return True, "", mismatch


def _run_group(
    compiler: GrammarCompiler,
    compile_fn: CompileFn,
    encoder: _Encoder,
    eos: int,
    bitmask: np.ndarray,
    file: str,
    index: int,
    group: Mapping[str, Any],
    check_masks: bool,
) -> GroupResult:
    res = GroupResult(file, index, str(group.get("description", "")), group["schema"], compiled=False)
    t0 = time.perf_counter()
    compiled = None
    try:
        compiled = compile_fn(compiler, group["schema"])
        res.compiled = True
        res.unenforced = tuple(getattr(compiled, "unenforced", ()) or ())
    except (SchemaError, LimitExceeded) as exc:
        res.error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - every other exception is a bug to report
        res.error = f"{type(exc).__name__} (untyped): {exc}"
        res.crashed = True
    res.compile_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    for test in group["tests"]:
        instance, valid = test["data"], bool(test["valid"])
        tr = TestResult(str(test.get("description", "")), instance, valid, "not-compiled")
        res.tests.append(tr)
        if compiled is None:
            tr.detail = res.error
            continue
        accepted: list[bool] = []
        reasons: list[str] = []
        forms = _texts(instance)
        for k, text in enumerate(forms):
            ids = encoder.ids(text)
            label = "UTF-8" if k and not text.isascii() else ("compact", "indented")[min(k, 1)]
            if ids is None:
                tr.cls = "untokenizable"
                tr.detail = f"{label} text {text!r} does not round-trip through the tokenizer"
                break
            try:
                ok, why, mismatch = _feed(compiled, ids, eos, bitmask, check_masks)
            except Exception as exc:  # noqa: BLE001
                tr.cls = "crash"
                tr.detail = f"{label}: {type(exc).__name__}: {exc}"
                break
            if mismatch and not tr.mask_mismatch:
                tr.mask_mismatch = f"{label}: {mismatch}"
            accepted.append(ok)
            if ok != valid:
                reasons.append(f"{label} {'accepted' if ok else why}")
        else:
            if valid:
                tr.cls = "valid-accepted" if all(accepted) else "valid-rejected"
            else:
                tr.cls = "invalid-rejected" if not any(accepted) else "invalid-accepted"
            tr.detail = "; ".join(reasons)
    res.run_seconds = time.perf_counter() - t1
    return res


class _GroupTimeout(BaseException):
    pass


def _run_group_timed(seconds: float, args: tuple[Any, ...]) -> GroupResult:
    import signal

    def on_alarm(signum: int, frame: Any) -> None:
        raise _GroupTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return _run_group(*args)
    except _GroupTimeout:
        name, index, group = args[5], args[6], args[7]
        res = GroupResult(name, index, str(group.get("description", "")), group["schema"], compiled=False)
        res.crashed = True
        res.error = f"timeout: compile and match took more than {seconds:g} s"
        res.compile_seconds = seconds
        res.tests = [
            TestResult(str(t.get("description", "")), t["data"], bool(t["valid"]), "crash", res.error)
            for t in group["tests"]
        ]
        return res
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_suite(
    info: TokenizerInfo,
    tokenizer: Any,
    *,
    directory: Path | None = None,
    include_format: bool = True,
    compile_fn: CompileFn = compile_strict,
    files: Iterable[str] | None = None,
    check_masks: bool = True,
    compiler: GrammarCompiler | None = None,
    group_timeout: float | None = None,
) -> SuiteResult:
    """Run every group of the suite and classify every test.

    Parameters
    ----------
    info
        The vocabulary the schemas are compiled for.
    tokenizer
        A Hugging Face (fast) tokenizer of the same vocabulary, used to encode
        the instances exactly as a model would see them.
    directory
        The draft folder (default :func:`suite_dir`).
    include_format
        Also run ``optional/format/*.json`` (reported separately).
    compile_fn
        ``(compiler, schema) -> compiled grammar`` (default :func:`compile_strict`).
    files
        Only these file names (e.g. ``["type.json", "format/date.json"]``).
    check_masks
        Fill the mask before every token and compare it with ``accept_token``.
    compiler
        The compiler to use (default: a new one for ``info`` with its cache off).
    group_timeout
        Seconds allowed per group (compile and all its tests) before the group
        is recorded as a crash; uses ``SIGALRM``, so only from the main thread
        of a POSIX process. ``None``: no limit.
    """
    t0 = time.perf_counter()
    directory = directory or suite_dir()
    suites = load_suite(directory, "keywords")
    if include_format:
        suites += load_suite(directory, "format")
    if files is not None:
        wanted = set(files)
        suites = [(n, g) for n, g in suites if n in wanted]
    compiler = compiler or GrammarCompiler(info, cache_enabled=False)
    encoder = _Encoder(tokenizer, info)
    encoder.prepare(
        text for _, groups in suites for g in groups for t in g["tests"] for text in _texts(t["data"])
    )
    eos = int(info.stop_token_ids[0])
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    groups: list[GroupResult] = []
    for name, file_groups in suites:
        for i, group in enumerate(file_groups):
            args = (compiler, compile_fn, encoder, eos, bitmask, name, i, group, check_masks)
            groups.append(_run_group(*args) if not group_timeout else _run_group_timed(group_timeout, args))
    return SuiteResult(groups, time.perf_counter() - t0, type(tokenizer).__name__)


# ------------------------------------------------------------------ ratchet


def check_ratchet(
    result: SuiteResult, ratchet: Mapping[str, Any], *, whole_suite: bool = True
) -> tuple[list[str], list[str]]:
    """Compare a run with the ratchet.

    Parameters
    ----------
    result
        The run.
    ratchet
        The recorded entries, per suite file.
    whole_suite
        The run covers every file of the suite (no file filter). Then a file
        the run has and the ratchet lacks is a regression, and so is an entry
        for a file the run did not have: deleting entries cannot switch the
        check off, and a file that left the suite needs the ratchet rewritten.

    Returns
    -------
    (regressions, improvements)
        Human-readable lines. A regression: a file passes fewer tests than its
        ``passed`` entry, or has more invalid instances accepted than its
        ``invalid_accepted`` entry, or (``whole_suite``) a file with no entry
        or an entry with no file.
    """
    summaries = result.summaries()
    entries = ratchet.get("files", {})
    regressions: list[str] = []
    improvements: list[str] = []
    if whole_suite:
        regressions += [
            f"{name}: no ratchet entry (run `python scripts/json_suite_report.py --update-ratchet`)"
            for name in sorted(set(summaries) - set(entries))
        ]
        regressions += [
            f"{name}: has a ratchet entry but was not run (no longer in the suite?)"
            for name in sorted(set(entries) - set(summaries))
        ]
    for name, entry in sorted(entries.items()):
        s = summaries.get(name)
        if s is None:
            continue  # not run: a file filter, or reported above
        if s.passed < entry["passed"]:
            regressions.append(f"{name}: {s.passed} tests pass, the ratchet says {entry['passed']}")
        elif s.passed > entry["passed"]:
            improvements.append(f"{name}: {s.passed} tests pass (ratchet {entry['passed']})")
        if s.counts["invalid-accepted"] > entry["invalid_accepted"]:
            cases = [
                f"    - group {g.index} {g.description!r}: {t.description!r} {json.dumps(t.instance)[:80]}"
                for g in result.groups
                if g.file == name
                for t in g.tests
                if t.cls == "invalid-accepted"
            ]
            regressions.append(
                f"{name}: {s.counts['invalid-accepted']} invalid instances accepted, "
                f"the ratchet allows {entry['invalid_accepted']}\n" + "\n".join(cases)
            )
    return regressions, improvements


def updated_ratchet(result: SuiteResult, old: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ratchet after a run of the whole suite.

    ``passed`` only rises, ``invalid_accepted`` becomes the current count, and
    the entries are exactly the files the run had.
    """
    previous = (old or {}).get("files", {})
    files = {}
    for name, s in result.summaries().items():
        prev = previous.get(name, {})
        files[name] = {
            "passed": max(int(prev.get("passed", 0)), s.passed),
            "invalid_accepted": s.counts["invalid-accepted"],
        }
    return {
        "about": (
            "Per JSON-Schema-Test-Suite file (draft 2020-12): the fewest tests that must pass and the "
            "most invalid instances that may be accepted. Regenerate with "
            "`python scripts/json_suite_report.py --update-ratchet`."
        ),
        "draft": DRAFT,
        "files": dict(sorted(files.items())),
    }


# ------------------------------------------------------------------ reports


def _table(summaries: Mapping[str, FileSummary], total: FileSummary) -> list[str]:
    lines = [
        "| file | groups compiled | tests passed | valid rejected | invalid accepted | not compiled |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def row(name: str, s: FileSummary) -> str:
        other = s.counts["untokenizable"] + s.counts["crash"] + s.mask_mismatches
        note = f" ({other} other)" if other else ""
        n_declared = s.invalid_accepted_declared
        declared = f" ({n_declared} declared unenforced)" if n_declared else ""
        return (
            f"| {name} | {s.groups_compiled} / {s.groups} | {s.passed} / {s.tests}{note} | "
            f"{s.counts['valid-rejected']} | {s.counts['invalid-accepted']}{declared} | {s.counts['not-compiled']} |"
        )

    for name, s in summaries.items():
        lines.append(row(f"`{name}`", s))
    lines.append(row("**total**", total))
    return lines


def markdown_tables(result: SuiteResult) -> str:
    """The conformance tables (keyword files, then format files) as markdown."""
    kw = result.summaries("")
    kw_total = result.total("")
    pct = 100.0 * kw_total.passed / kw_total.tests if kw_total.tests else 0.0
    out = ["### Keyword files", ""]
    out += _table(kw, kw_total)
    out += [
        "",
        f"Total: {kw_total.passed} of {kw_total.tests} tests pass ({pct:.1f}%), "
        f"{kw_total.counts['invalid-accepted']} invalid instances accepted, "
        f"{kw_total.groups_compiled} of {kw_total.groups} schemas compiled"
        f"{f' ({kw_total.groups_unenforced} of them reporting parts as unenforced)' if kw_total.groups_unenforced else ''}. "
        f"llguidance publishes {LLGUIDANCE_PASSED} passing tests for this draft "
        f"({kw_total.passed - LLGUIDANCE_PASSED:+d} here).",
    ]
    fmt = result.summaries("format/")
    if fmt:
        fmt_total = result.total("format/")
        out += [
            "",
            "### Format files (`optional/format`, format as an assertion)",
            "",
        ]
        out += _table(fmt, fmt_total)
        if fmt_total.invalid_accepted_declared:
            out += [
                "",
                "*Declared unenforced*: the compiled grammar lists the format in `unenforced` "
                "(in draft 2020-12 `format` is an annotation unless asserted), so those acceptances "
                "are reported by the compiler, not silent.",
            ]
    other = result.total()
    extras = []
    if other.mask_mismatches:
        extras.append(f"{other.mask_mismatches} tests with a mask/accept mismatch")
    if other.counts["untokenizable"]:
        extras.append(f"{other.counts['untokenizable']} instances the tokenizer does not round-trip")
    if other.counts["crash"] or other.compile_crashes:
        extras.append(
            f"{other.compile_crashes} untyped compile errors, {other.counts['crash']} matcher crashes"
        )
    if extras:
        out += ["", "Also: " + "; ".join(extras) + " (counted as not passing)."]
    return "\n".join(out) + "\n"


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_report(result: SuiteResult) -> str:
    """Every failing test, grouped by file and schema, as markdown."""
    total = result.total("")
    fmt = result.total("format/")
    out = [
        "# JSON-Schema-Test-Suite failures (draft 2020-12)",
        "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} in {result.seconds:.1f} s.",
        "Runner: `python scripts/json_suite_report.py --failures PATH` "
        "(strict=True, property_order='any'; instances as json.dumps compact, indent=2 and, if non-ASCII, "
        "ensure_ascii=False; "
        "UTF-8, SmolLM2 tokenization, stop token required at the end).",
        "",
        f"Keyword files: {total.passed}/{total.tests} pass; valid rejected {total.counts['valid-rejected']}, "
        f"invalid accepted {total.counts['invalid-accepted']}, not compiled {total.counts['not-compiled']} "
        f"({total.groups - total.groups_compiled} of {total.groups} schemas), mask mismatches "
        f"{total.mask_mismatches}, crashes {total.counts['crash']} + {total.compile_crashes} at compile.",
        f"Format files: {fmt.passed}/{fmt.tests} pass.",
        "",
    ]
    unsound = [(g, t) for g in result.groups for t in g.tests if t.cls == "invalid-accepted"]
    if unsound:
        out += ["## Unsound (invalid accepted), all files", ""]
        for g, t in unsound[:80]:
            declared = " [declared unenforced]" if g.unenforced else ""
            out.append(
                f"- `{g.file}` #{g.index} {g.description}: `{_short(g.schema, 160)}` accepts `{_short(t.instance, 120)}` ({t.description}){declared}"
            )
        if len(unsound) > 80:
            out.append(f"- ... and {len(unsound) - 80} more (see the files below)")
        out.append("")
    crashes = [g for g in result.groups if g.crashed]
    if crashes:
        out += ["## Untyped exceptions and timeouts", ""]
        for g in crashes:
            out.append(f"- `{g.file}` #{g.index} {g.description}: `{_short(g.schema, 160)}` -> {g.error}")
        out.append("")
    partial = [g for g in result.groups if g.unenforced]
    if partial:
        out += ["## Compiled with unenforced parts (strict=True)", ""]
        for g in partial:
            out.append(f"- `{g.file}` #{g.index} {g.description}: " + "; ".join(g.unenforced))
        out.append("")
    slow = sorted(result.groups, key=lambda g: -(g.compile_seconds + g.run_seconds))[:8]
    out += ["## Slowest groups (compile + run)", ""]
    for g in slow:
        out.append(
            f"- {g.compile_seconds + g.run_seconds:.2f} s (compile {g.compile_seconds:.2f}): `{g.file}` #{g.index} {g.description}"
        )
    out += ["", "## By file", ""]
    by_file: dict[str, list[GroupResult]] = {}
    for g in result.groups:
        by_file.setdefault(g.file, []).append(g)
    for name, groups in by_file.items():
        bad = [g for g in groups if not g.compiled or any(not t.passed for t in g.tests)]
        if not bad:
            continue
        n_fail = sum(not t.passed for g in groups for t in g.tests)
        out += [f"### {name} ({n_fail} failing)", ""]
        for g in bad:
            out.append(f"- #{g.index} **{g.description}** schema `{_short(g.schema)}`")
            if g.unenforced:
                out.append("  - compiled with unenforced parts: " + "; ".join(g.unenforced))
            if not g.compiled:
                out.append(f"  - not compiled: {g.error}")
                continue
            for t in g.tests:
                if t.passed:
                    continue
                what = t.cls if not t.mask_mismatch else f"{t.cls}, MASK MISMATCH: {t.mask_mismatch}"
                detail = f" — {t.detail}" if t.detail else ""
                out.append(f"  - {what}: `{_short(t.instance, 160)}` ({t.description}){detail}")
        out.append("")
    return "\n".join(out) + "\n"
