"""JSON-Schema-Test-Suite (draft 2020-12), token by token on the real SmolLM2 vocabulary.

Every group's schema is compiled once (``strict=True``, ``property_order="any"``);
every instance is serialised compactly and with ``indent=2``, encoded by
SmolLM2's own tokenizer and fed to a matcher with the stop token at the end
(see ``suite_runner`` for what "accepted" and "pass" mean). The oracle is the
suite's own ``valid`` flag.

The test fails when a file passes fewer tests than ``conformance_ratchet.json``
records, when a file accepts more invalid instances than the ratchet allows
(a file at 0 must stay at 0), or when a mask disagrees with ``accept_token``.
Raise the ratchet after an improvement with
``python scripts/json_suite_report.py --update-ratchet --write-docs``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from json_schema import suite_runner as sr
from support.real_vocabs import smollm2_gguf

from tokensieve import TokenizerInfo

RATCHET = Path(__file__).with_name("conformance_ratchet.json")


def _run_suite() -> sr.SuiteResult:
    directory = sr.suite_dir()
    if not directory.is_dir():
        pytest.skip(
            f"the JSON-Schema-Test-Suite is not at {directory}: set TOKENSIEVE_SHARED_DATA to the folder "
            "that holds JSON-Schema-Test-Suite/ (a clone of github.com/json-schema-org/JSON-Schema-Test-Suite)"
        )
    path = smollm2_gguf()
    pytest.importorskip(
        "transformers", reason="encoding the instances needs transformers (pip install transformers gguf)"
    )
    pytest.importorskip("gguf", reason="reading the tokenizer from the GGUF needs gguf (pip install gguf)")
    info = TokenizerInfo.from_file(path)
    tokenizer = sr.load_hf_tokenizer(str(path))
    return sr.run_suite(info, tokenizer)


def _mask_mismatches(result: sr.SuiteResult) -> list[str]:
    return [
        f"{g.file} #{g.index} {g.description!r}: instance {json.dumps(t.instance)[:80]}: {t.mask_mismatch}"
        for g in result.groups
        for t in g.tests
        if t.mask_mismatch
    ]


def _crashes(result: sr.SuiteResult) -> list[str]:
    out = [f"{g.file} #{g.index} {g.description!r}: {g.error}" for g in result.groups if g.crashed]
    out += [
        f"{g.file} #{g.index}: instance {json.dumps(t.instance)[:80]}: {t.detail}"
        for g in result.groups
        for t in g.tests
        if t.cls == "crash"
    ]
    return out


@pytest.mark.slow
def test_json_schema_test_suite() -> None:
    # One test (not several sharing a fixture) so that pytest-xdist runs the suite once.
    result = _run_suite()
    print(sr.markdown_tables(result))
    problems: list[str] = []

    # 1. every test of the suite was run and classified
    expected = sum(
        len(g["tests"])
        for which in ("keywords", "format")
        for _, groups in sr.load_suite(sr.suite_dir(), which)
        for g in groups
    )
    ran = sum(len(g.tests) for g in result.groups)
    if ran != expected:
        problems.append(f"{ran} tests were run, the suite holds {expected}")

    # 2. the ratchet: per file, no fewer passes and no more invalid instances accepted
    ratchet = json.loads(RATCHET.read_text(encoding="utf-8"))
    regressions, improvements = sr.check_ratchet(result, ratchet)
    if regressions:
        problems.append("conformance regressed:\n" + "\n".join(regressions))
    if improvements:
        print(
            "More tests pass than the ratchet records; raise it with "
            "`python scripts/json_suite_report.py --update-ratchet --write-docs`:\n  "
            + "\n  ".join(improvements)
        )

    # 3. the mask filled before each token agrees with accept_token (and the stop token)
    mismatches = _mask_mismatches(result)
    if mismatches:
        problems.append(
            f"{len(mismatches)} tests where the mask and accept_token disagree:\n"
            + "\n".join(mismatches[:30])
        )

    # 4. bad or unsupported schemas get typed errors; the matcher never raises
    crashes = _crashes(result)
    if crashes:
        problems.append("untyped exceptions while compiling or matching:\n" + "\n".join(crashes[:30]))

    assert not problems, "\n\n".join(problems)


# --- the ratchet logic itself, on hand-made results (no vocabulary needed) ------------------------


def _result(file: str, classes: list[str]) -> sr.SuiteResult:
    tests = [sr.TestResult(f"t{i}", i, c.startswith("valid"), c) for i, c in enumerate(classes)]
    group = sr.GroupResult(file, 0, "g", {}, compiled="not-compiled" not in classes, tests=tests)
    return sr.SuiteResult([group], 0.0, "test")


def test_ratchet_flags_fewer_passes_and_new_unsound_cases() -> None:
    ratchet = {"files": {"a.json": {"passed": 2, "invalid_accepted": 0}}}
    same = _result("a.json", ["valid-accepted", "invalid-rejected", "valid-rejected"])
    assert sr.check_ratchet(same, ratchet) == ([], [])
    fewer = _result("a.json", ["valid-accepted", "valid-rejected", "valid-rejected"])
    regressions, _ = sr.check_ratchet(fewer, ratchet)
    assert len(regressions) == 1 and "1 tests pass" in regressions[0]
    unsound = _result("a.json", ["valid-accepted", "invalid-rejected", "invalid-accepted"])
    regressions, _ = sr.check_ratchet(unsound, ratchet)
    assert len(regressions) == 1 and "invalid instances accepted" in regressions[0]
    more = _result("a.json", ["valid-accepted", "invalid-rejected", "invalid-rejected"])
    regressions, improvements = sr.check_ratchet(more, ratchet)
    assert regressions == [] and len(improvements) == 1


def test_ratchet_flags_files_without_entries_and_entries_without_files() -> None:
    ratchet = {"files": {"a.json": {"passed": 1, "invalid_accepted": 0}}}
    other = _result("b.json", ["valid-accepted"])
    regressions, _ = sr.check_ratchet(other, ratchet)
    assert any(r.startswith("b.json: no ratchet entry") for r in regressions)
    assert any(r.startswith("a.json: has a ratchet entry but was not run") for r in regressions)
    # a run of some files only (a file filter) checks only the files it ran
    assert sr.check_ratchet(other, ratchet, whole_suite=False) == ([], [])
    # deleting every entry does not switch the check off
    regressions, _ = sr.check_ratchet(_result("a.json", ["valid-rejected"]), {"files": {}})
    assert regressions


def test_ratchet_update_only_raises_passes() -> None:
    old = {"files": {"a.json": {"passed": 3, "invalid_accepted": 2}}}
    worse = _result("a.json", ["valid-accepted", "invalid-accepted"])
    new = sr.updated_ratchet(worse, old)
    assert new["files"]["a.json"] == {"passed": 3, "invalid_accepted": 1}
    better = _result("a.json", ["valid-accepted"] * 5)
    assert sr.updated_ratchet(better, old)["files"]["a.json"] == {"passed": 5, "invalid_accepted": 0}
    gone = {"files": {"a.json": {"passed": 1, "invalid_accepted": 0}, "old.json": {"passed": 4, "invalid_accepted": 0}}}
    assert set(sr.updated_ratchet(better, gone)["files"]) == {"a.json"}


def test_mask_mismatch_fails_a_test() -> None:
    t = sr.TestResult("t", 1, True, "valid-accepted", mask_mismatch="token #0 not in the mask")
    assert not t.passed
    assert sr.TestResult("t", 1, True, "valid-accepted").passed
