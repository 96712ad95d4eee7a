"""The error raised for bad catalogs and bad step arguments."""

from __future__ import annotations

from ..errors import TokensieveError

__all__ = ["CatalogError"]


class CatalogError(TokensieveError, ValueError):
    """A catalog, node array, level or token array that the index cannot use.

    Raised for wrong shapes or dtypes, token ids outside ``[0, vocab_size)``, an
    empty catalog, a level out of range, node ids that do not belong to the
    level, and tokens that are not allowed where :meth:`StaticIndex.next_nodes`
    is asked to follow them. It is a :class:`ValueError`, so ``except ValueError``
    catches it too.
    """
