"""The real server in a subprocess (``python -m tokensieve serve``) with the real model."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from runtime.model_support import converted_default_model

MODEL_ID = "SmolLM2-135M-Instruct"
API_KEY = "test-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``tokensieve serve`` on a free port, started and stopped by the tests."""

    def __init__(self, *options: str) -> None:
        converted_default_model()  # skips when the model packages are missing
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        env = dict(os.environ, TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tokensieve",
                "serve",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                *options,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start:\n{self.output()}")
            time.sleep(0.3)

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def terminate(self) -> None:
        """Send SIGTERM (the server drains its requests, then exits)."""
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)
        return int(self.proc.returncode)
