"""The ``tokensieve`` command, run as a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DATE = r"\d{4}-\d{2}-\d{2}"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokensieve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_version_and_help() -> None:
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.startswith("tokensieve ")
    out = _run("generate", "--help")
    assert out.returncode == 0 and "--regex" in out.stdout and "--choices" in out.stdout


def test_bad_regex_exits_2_with_the_position() -> None:
    out = _run("generate", "--regex", r"\d{4}-(\d{2}", "When?")
    assert out.returncode == 2
    assert out.stdout == ""
    assert "invalid --regex" in out.stderr and "column" in out.stderr
    assert "Traceback" not in out.stderr


def test_missing_constraint_is_a_usage_error() -> None:
    out = _run("generate", "When?")
    assert out.returncode == 2 and "--regex" in out.stderr and out.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ("--max-tokens", "0"),
        ("--temperature", "-1"),
        ("--n", "0"),
        ("--model", "/definitely/not/here.gguf"),
        ("--choices-file", "/definitely/not/here.txt"),
    ],
)
def test_bad_options_exit_2_without_a_traceback(args: tuple[str, ...]) -> None:
    constraint = () if args[0] == "--choices-file" else ("--regex", "a")
    out = _run("generate", *constraint, *args, "When?")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("tokensieve: error:") and "Traceback" not in out.stderr
    assert out.stdout == ""


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_regex_samples_match_for_several_seeds(smollm2_converted: Path) -> None:
    out = _run(
        "generate",
        "--regex",
        DATE,
        "--n",
        "3",
        "--seed",
        "11",
        "--temperature",
        "1.3",
        "When was the Eiffel tower finished?",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[-1] == "" and len(lines) == 4  # one sample per line, final newline
    for line in lines[:3]:
        assert re.fullmatch(DATE, line), out.stdout


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_choices_output_is_one_of_them(smollm2_converted: Path, tmp_path: Path) -> None:
    choices = ["red", "green", "blue", "dark purple"]
    path = tmp_path / "choices.txt"
    path.write_text("\n".join(choices) + "\n", encoding="utf-8")
    out = _run("generate", "--choices-file", str(path), "--n", "2", "--temperature", "1.5", "Pick a colour")
    assert out.returncode == 0, out.stderr
    samples = out.stdout.split("\n")
    assert samples[-1] == "" and len(samples) == 3
    assert all(s in choices for s in samples[:2]), out.stdout
