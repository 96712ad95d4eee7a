"""The token-level view of automata: compiled grammars and their token masks."""

from .compiled_grammar import CompiledGrammar
from .compiler import GrammarCompiler
from .token_masks import TokenMaskBuilder

__all__ = ["CompiledGrammar", "GrammarCompiler", "TokenMaskBuilder"]
