"""Fixtures for the runtime tests: the real model, loaded once per process."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime.model_support import converted_default_model, shared_model

from tokensieve.runtime import LoadedModel


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    return shared_model()


@pytest.fixture(scope="session")
def smollm2_converted() -> Path:
    return converted_default_model()
