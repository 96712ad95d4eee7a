"""The server's options and limits."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerConfig"]


@dataclass(frozen=True)
class ServerConfig:
    """Options of :func:`tokensieve.server.create_app`; every limit has a safe default.

    Attributes
    ----------
    model
        A ``.gguf`` file or Hugging Face folder (``None``: SmolLM2-135M-Instruct).
    served_model_name
        The model id clients send (default: the model file's or folder's name).
    cache_dir
        Where converted models (and compiled grammars) are kept.
    max_batch
        Most sequences decoded together in one forward pass.
    max_queue
        Most requests waiting for a slot; beyond it a request gets 429.
    threads
        CPU threads for the model (default: 1 for small models).
    api_key
        Bearer token every ``/v1/`` request must carry (``None``: no check).
    max_body_bytes
        Largest request body (413 beyond).
    max_schema_bytes
        Largest schema (or tool ``parameters``) as JSON text (400 beyond).
    max_n
        Most samples per request.
    max_tokens_limit
        Largest ``max_tokens`` a request may ask for.
    default_max_tokens
        ``max_tokens`` when a request gives none.
    compile_timeout_s
        Longest a request waits for its constraint to compile (400 beyond;
        the compile's own work is bounded by :class:`~tokensieve.Limits`).
    compile_workers
        Threads that compile constraints.
    max_compile_queue
        Most constraint compiles running or waiting at once; a request
        needing a new compile past it gets 429 with ``Retry-After``.
    constraint_cache_mib
        Memory the compiled constraints kept for later requests may hold
        (automata and token masks); least recently used go first beyond it.
    compile_processes
        Processes that build new constraints' automata beside the engine
        (``0``: all compile work in this process; see
        :class:`~tokensieve.server.constraints.ConstraintCache`).
    closed_objects
        Objects whose schema is silent about ``additionalProperties`` take no
        keys beyond those it names (a request's ``closed_objects: false``
        opts out).
    retry_after_s
        The ``Retry-After`` of a 429.
    weights
        The engine's weight format (``"bf16"``, ``"int8"`` or ``"fp32"``;
        ``None``: the engine's default).
    """

    model: str | None = None
    served_model_name: str | None = None
    cache_dir: str | None = None
    max_batch: int = 16
    max_queue: int = 64
    threads: int | None = None
    api_key: str | None = None
    max_body_bytes: int = 4 << 20
    max_schema_bytes: int = 256 << 10
    max_n: int = 8
    max_tokens_limit: int = 4096
    default_max_tokens: int = 512
    compile_timeout_s: float = 60.0
    compile_workers: int = 2
    max_compile_queue: int = 32
    constraint_cache_mib: int = 1024
    compile_processes: int = 1
    closed_objects: bool = True
    retry_after_s: int = 1
    weights: str | None = None
