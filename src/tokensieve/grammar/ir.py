"""The regex IR nodes, under their former name (they live in :mod:`tokensieve.ir.nodes`)."""

from __future__ import annotations

from ..ir.nodes import *  # noqa: F403
from ..ir.nodes import __all__ as __all__
