"""The OpenAI-compatible HTTP server (``tokensieve serve``).

:func:`create_app` builds the FastAPI application around a local model and
the runtime's batch engine; ``tokensieve serve`` runs it with uvicorn. See
``docs/server.md`` for the endpoints, the constraint fields, the options and
the metrics.
"""

from __future__ import annotations

from .app import create_app
from .config import ServerConfig

__all__ = ["ServerConfig", "create_app"]
