"""The batch engine the server decodes with.

The runtime's continuous-batching engine (:mod:`tokensieve.runtime.engine`)
when it is available; otherwise a stand-in with the same interface that
decodes one request at a time.
"""

from __future__ import annotations

try:
    from ..runtime.engine import Engine, QueueFull, SamplingParams
except ImportError:  # the runtime's engine is not part of this build yet
    from ._serial_engine import Engine, QueueFull, SamplingParams  # type: ignore[assignment]

__all__ = ["Engine", "QueueFull", "SamplingParams"]
