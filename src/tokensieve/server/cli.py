"""The ``tokensieve serve`` sub-command: options and handler."""

from __future__ import annotations

import argparse
import logging
from typing import Any, TextIO

from .config import ServerConfig

__all__ = ["add_serve_parser", "config_from_args"]

logger = logging.getLogger("tokensieve")

_DEFAULTS = ServerConfig()


def add_serve_parser(commands: Any) -> None:
    """Register ``serve`` on the ``tokensieve`` command's sub-parsers.

    Parameters
    ----------
    commands
        The object ``argparse.ArgumentParser.add_subparsers`` returned.
    """
    p = commands.add_parser(
        "serve",
        help="run the OpenAI-compatible HTTP server",
        description=(
            "Serve a local model over an OpenAI-compatible HTTP API (/v1/chat/completions, "
            "/v1/completions, /v1/models, /health, /metrics) with structured outputs and tool calls."
        ),
    )
    p.add_argument(
        "--model",
        metavar="PATH",
        help="a .gguf file or a Hugging Face folder (default: SmolLM2-135M-Instruct)",
    )
    p.add_argument(
        "--served-model-name", metavar="NAME", help="the model id clients send (default: from the file name)"
    )
    p.add_argument(
        "--host",
        default=None,
        help="address to bind (default 127.0.0.1; give 0.0.0.0 to accept other machines, best with --api-key)",
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--max-batch", type=int, default=_DEFAULTS.max_batch, help="most sequences decoded together"
    )
    p.add_argument(
        "--max-queue", type=int, default=_DEFAULTS.max_queue, help="most waiting requests (429 beyond)"
    )
    p.add_argument(
        "--threads", type=int, metavar="N", help="CPU threads for the model (default: 1 for small models)"
    )
    p.add_argument(
        "--weights",
        choices=("bf16", "int8", "fp32"),
        help="weight format of the batch engine's forward pass (default: bf16)",
    )
    p.add_argument("--cache-dir", metavar="DIR", help="where converted models and compiled grammars are kept")
    p.add_argument("--api-key", metavar="KEY", help="bearer token every /v1/ request must carry")
    limits = p.add_argument_group("limits")
    limits.add_argument(
        "--max-body-bytes", type=int, default=_DEFAULTS.max_body_bytes, help="largest request body (413)"
    )
    limits.add_argument(
        "--max-schema-bytes", type=int, default=_DEFAULTS.max_schema_bytes, help="largest schema as JSON text"
    )
    limits.add_argument("--max-n", type=int, default=_DEFAULTS.max_n, help="most samples per request")
    limits.add_argument(
        "--max-tokens-limit",
        type=int,
        default=_DEFAULTS.max_tokens_limit,
        help="largest max_tokens a request may ask",
    )
    limits.add_argument(
        "--default-max-tokens",
        type=int,
        default=_DEFAULTS.default_max_tokens,
        help="max_tokens when none is given",
    )
    limits.add_argument(
        "--compile-timeout",
        type=float,
        default=_DEFAULTS.compile_timeout_s,
        metavar="SECONDS",
        help="longest a request waits for its constraint to compile",
    )
    limits.add_argument(
        "--max-compile-queue",
        type=int,
        default=_DEFAULTS.max_compile_queue,
        metavar="N",
        help="most constraint compiles running or waiting at once (429 beyond)",
    )
    limits.add_argument(
        "--constraint-cache-mib",
        type=int,
        default=_DEFAULTS.constraint_cache_mib,
        metavar="MIB",
        help="memory the compiled constraints kept in memory may hold (least recently used go first)",
    )
    limits.add_argument(
        "--compile-processes",
        type=int,
        default=_DEFAULTS.compile_processes,
        metavar="N",
        help="processes that build new constraints' automata beside the engine (0: none)",
    )
    p.add_argument(
        "--open-objects",
        action="store_true",
        help="let objects whose schema is silent about additionalProperties take other keys "
        "(JSON Schema's own default; by default they take only the keys the schema names)",
    )
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    p.set_defaults(handler=_cmd_serve)


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The server configuration the command-line options give.

    Raises
    ------
    ValueError
        For a limit below its minimum.
    """
    for name in (
        "max_batch",
        "max_queue",
        "max_n",
        "max_tokens_limit",
        "default_max_tokens",
        "max_body_bytes",
        "max_compile_queue",
        "constraint_cache_mib",
    ):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    if args.threads is not None and args.threads < 1:
        raise ValueError("--threads must be at least 1")
    if args.compile_processes < 0:
        raise ValueError("--compile-processes must be at least 0")
    if not args.compile_timeout > 0:
        raise ValueError("--compile-timeout must be more than 0")
    return ServerConfig(
        model=args.model,
        served_model_name=args.served_model_name,
        cache_dir=args.cache_dir,
        max_batch=args.max_batch,
        max_queue=args.max_queue,
        threads=args.threads,
        api_key=args.api_key,
        max_body_bytes=args.max_body_bytes,
        max_schema_bytes=args.max_schema_bytes,
        max_n=args.max_n,
        max_tokens_limit=args.max_tokens_limit,
        default_max_tokens=args.default_max_tokens,
        compile_timeout_s=args.compile_timeout,
        closed_objects=not args.open_objects,
        weights=args.weights,
        compile_processes=args.compile_processes,
        max_compile_queue=args.max_compile_queue,
        constraint_cache_mib=args.constraint_cache_mib,
    )


def _cmd_serve(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import uvicorn

    from .app import create_app

    try:
        config = config_from_args(args)
    except ValueError as exc:
        stderr.write(f"tokensieve: error: {exc}\n")
        return 2
    logger.setLevel(getattr(logging, args.log_level.upper()))
    host = args.host or "127.0.0.1"
    if host not in ("127.0.0.1", "localhost", "::1") and config.api_key is None:
        stderr.write(
            f"tokensieve: warning: serving on {host} without --api-key: anyone who can reach it may use it\n"
        )
    from ..runtime import load_model

    # loaded before the server starts, so that a bad --model is a clear error (exit status 2)
    loaded = load_model(config.model, cache_dir=config.cache_dir, progress=True)
    app = create_app(config, loaded=loaded)
    # uvicorn stops accepting on SIGTERM or SIGINT, lets the requests in flight finish, then runs the
    # application's shutdown, which drains the engine
    uvicorn.run(app, host=host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=120)
    return 0
