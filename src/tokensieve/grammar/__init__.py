"""Front ends: constraint languages lowered to the IR (:mod:`tokensieve.ir`)."""

from __future__ import annotations

from . import ir
from .regex import parse_regex, regex_to_dfa

__all__ = ["ir", "parse_regex", "regex_to_dfa"]
