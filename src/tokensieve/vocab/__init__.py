"""Vocabularies: every token id as the exact bytes it adds to the text.

:class:`TokenizerInfo` reads Hugging Face tokenizers (objects and
``tokenizer.json``), GGUF model files, Mistral Tekken files and SentencePiece
``.model`` files; :class:`TokenTrie` arranges the tokens' bytes as a trie in
flat arrays for the token-mask computation.
"""

from __future__ import annotations

from .tokenizer_info import TokenizerInfo
from .trie import TokenTrie

__all__ = ["TokenTrie", "TokenizerInfo"]
