"""Adapters that plug tokensieve into inference engines.

* :mod:`tokensieve.integrations.transformers`: :class:`TokensieveLogitsProcessor`
  for ``model.generate`` in Hugging Face ``transformers``.

Each adapter imports its engine only when it is used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TokensieveLogitsProcessor"]


def __getattr__(name: str) -> Any:
    if name == "TokensieveLogitsProcessor":
        from .transformers import TokensieveLogitsProcessor

        return TokensieveLogitsProcessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
