"""Typed errors raised by tokensieve.

Every error derives from :class:`TokensieveError`::

    TokensieveError
    ├── GrammarError        bad grammar or regex text; carries line, column, excerpt
    ├── SchemaError         bad or unsatisfiable JSON Schema; carries a JSON pointer
    ├── VocabularyError     unreadable or inconsistent tokenizer files
    └── LimitExceeded       a configured resource bound was hit (see :class:`tokensieve.Limits`)

``LimitExceeded`` is raised instead of hanging or exhausting memory: grammars,
schemas and patterns are untrusted input.
"""

from __future__ import annotations

__all__ = [
    "TokensieveError",
    "GrammarError",
    "SchemaError",
    "VocabularyError",
    "LimitExceeded",
]


class TokensieveError(Exception):
    """Base class of every error tokensieve raises on purpose."""


class GrammarError(TokensieveError, ValueError):
    """Grammar, regex or choice-list text that cannot be compiled.

    Parameters
    ----------
    message
        What is wrong.
    source
        The offending text (pattern or grammar), used to build the excerpt.
    position
        0-based character offset of the problem in ``source``.
    unsupported
        Whether the text is valid but uses a construct that is not supported
        (a lookahead in a pattern, say), rather than being malformed.

    Attributes
    ----------
    line, column
        1-based line and column of the problem (``None`` when unknown).
    excerpt
        The offending line with a caret under the column.
    unsupported
        As the parameter: a JSON Schema compiled with ``strict=False`` reports
        such a pattern in ``unenforced`` instead of failing.
    """

    def __init__(
        self,
        message: str,
        source: str | None = None,
        position: int | None = None,
        *,
        unsupported: bool = False,
    ) -> None:
        self.message = message
        self.unsupported = unsupported
        self.source = source
        self.position = position
        self.line: int | None = None
        self.column: int | None = None
        self.excerpt: str = ""
        if source is not None and position is not None:
            position = max(0, min(position, len(source)))
            before = source[:position]
            self.line = before.count("\n") + 1
            line_start = before.rfind("\n") + 1
            self.column = position - line_start + 1
            line_end = source.find("\n", position)
            if line_end < 0:
                line_end = len(source)
            text = source[line_start:line_end]
            self.excerpt = f"{text}\n{' ' * (self.column - 1)}^"
        super().__init__(self._render())

    def _render(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.message} (line {self.line}, column {self.column})\n{self.excerpt}"


class SchemaError(TokensieveError, ValueError):
    """A JSON Schema that is invalid, unsupported or unsatisfiable.

    Attributes
    ----------
    pointer
        JSON pointer (RFC 6901) of the offending keyword, e.g. ``/properties/age/minimum``.
    """

    def __init__(self, message: str, pointer: str = "") -> None:
        self.message = message
        self.pointer = pointer
        super().__init__(f"{message} (at {pointer or '/'})")


class VocabularyError(TokensieveError, ValueError):
    """Tokenizer files that cannot be read or are inconsistent."""


class LimitExceeded(TokensieveError):
    """A configured resource limit was exceeded.

    Attributes
    ----------
    limit
        Name of the :class:`tokensieve.Limits` field that was hit.
    value
        The configured bound.
    """

    def __init__(self, limit: str, value: int, detail: str = "") -> None:
        self.limit = limit
        self.value = value
        msg = f"limit {limit}={value} exceeded"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)
