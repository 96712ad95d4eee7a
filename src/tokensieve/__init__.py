"""tokensieve: language model output that is valid by construction."""

from __future__ import annotations

from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from .errors import GrammarError, LimitExceeded, SchemaError, TokensieveError, VocabularyError
from .limits import Limits

__version__ = "0.1.0"

__all__ = [
    "GrammarError",
    "LimitExceeded",
    "Limits",
    "SchemaError",
    "TokensieveError",
    "VocabularyError",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
]
