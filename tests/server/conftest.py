"""Fixtures for the server tests: one real server per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server.server_support import API_KEY, ServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    proc = ServerProcess(
        "--api-key", API_KEY, "--max-batch", "8", "--max-queue", "16", "--max-body-bytes", "200000"
    )
    try:
        yield proc
    finally:
        proc.stop()
