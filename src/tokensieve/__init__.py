"""tokensieve: language model output that is valid by construction.

The pipeline, one sub-package per stage: ``vocab`` (tokenizer vocabularies as
bytes, the token trie), ``grammar`` (front ends to the IR), ``automata`` (byte
DFAs), ``compile`` (token masks per automaton state), ``matcher`` (per-sequence
runtime state), ``retrieval`` (catalogs of ID sequences).
"""

from __future__ import annotations

from ._memo import set_memory_budget
from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from .compile import CompiledGrammar, GrammarCompiler
from .errors import GrammarError, LimitExceeded, SchemaError, TokensieveError, VocabularyError
from .limits import Limits
from .matcher import BatchGrammarMatcher, GrammarMatcher
from .vocab import TokenizerInfo

__version__ = "0.1.0"

__all__ = [
    "BatchGrammarMatcher",
    "CompiledGrammar",
    "GrammarCompiler",
    "GrammarError",
    "GrammarMatcher",
    "LimitExceeded",
    "Limits",
    "SchemaError",
    "TokenizerInfo",
    "TokensieveError",
    "VocabularyError",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "set_memory_budget",
]
