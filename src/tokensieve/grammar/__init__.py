"""Front ends: constraint languages lowered to the regex IR (:mod:`tokensieve.grammar.ir`)."""

from __future__ import annotations

from . import ir
from .regex import parse_regex

__all__ = ["ir", "parse_regex"]
