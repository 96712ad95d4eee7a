"""The ``tokensieve serve`` sub-command: options and handler."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

__all__ = ["add_serve_parser"]


def add_serve_parser(commands: Any) -> None:
    """Register ``serve`` on the ``tokensieve`` command's sub-parsers.

    Parameters
    ----------
    commands
        The object ``argparse.ArgumentParser.add_subparsers`` returned.
    """
    p = commands.add_parser("serve", help="run the OpenAI-compatible HTTP server")
    p.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    stderr.write("tokensieve: the server is not built yet\n")
    return 1
