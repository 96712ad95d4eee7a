"""``tokensieve serve`` options, without a model."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokensieve", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_serve_help_lists_the_options() -> None:
    out = _run("serve", "--help")
    assert out.returncode == 0
    for option in (
        "--model",
        "--host",
        "--port",
        "--max-batch",
        "--max-queue",
        "--threads",
        "--cache-dir",
        "--api-key",
    ):
        assert option in out.stdout


def test_bad_limits_exit_2_before_loading_a_model() -> None:
    out = _run("serve", "--max-batch", "0")
    assert out.returncode == 2 and "--max-batch must be at least 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_missing_model_is_a_clear_error() -> None:
    out = _run("serve", "--model", "/nonexistent/model.gguf")
    assert out.returncode == 2 and "no such file or folder" in out.stderr
    assert "Traceback" not in out.stderr
