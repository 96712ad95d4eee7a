"""A real ``vllm.LLM`` on the converted SmolLM2 folder with tokensieve's logits processor, loaded once.

These tests need vLLM, which lives in its own environment: ``bash
scripts/install-vllm.sh`` makes ``.venv-vllm``, and ``.venv-vllm/bin/python -m
pytest -q tests/vllm`` runs them. Under any other interpreter the modules that
need vLLM skip, saying so. (Without ``__init__.py`` this folder never shadows
the real ``vllm`` package, but where vLLM is missing ``import vllm`` finds the
folder as a namespace package: the modules skip on ``vllm.v1`` instead.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROCESSOR = "tokensieve.integrations.vllm:LogitsProcessor"
#: An explicit KV cache (46 KB a token for this model: 23k tokens). On the CPU, vLLM otherwise
#: reserves gpu_memory_utilization of all RAM and refuses to start when that much is not free.
KV_CACHE_BYTES = 1 << 30


@pytest.fixture(scope="session")
def model_dir() -> Path:
    from tokensieve.runtime import convert_model

    return convert_model(progress=False)


@pytest.fixture(scope="module")
def llm(model_dir: Path) -> Iterator[Any]:
    """The engine (once per module that uses it), with at most 4 rows a step, so a longer list of requests comes and goes through the batch."""
    from vllm import LLM

    engine = LLM(
        model=str(model_dir),
        dtype="float32",
        enforce_eager=True,
        max_model_len=1024,
        max_num_seqs=4,
        kv_cache_memory_bytes=KV_CACHE_BYTES,
        seed=0,
        logits_processors=[PROCESSOR],
    )
    yield engine
    # stop the engine process now, while pytest still holds the output streams vLLM logs to
    engine.llm_engine.engine_core.shutdown()
