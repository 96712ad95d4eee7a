"""Prometheus metrics of the server (``GET /metrics``), with ``prometheus_client``.

Each application has its own registry. Request, token, compile and cache
counts are recorded by the server as requests go; the batch engine's own
figures (active rows, queue length, how many steps ran at each batch size,
mask time) are read from :meth:`Engine.stats` at every scrape and exported as
``tokensieve_engine_<name>``: a number as a gauge, a mapping as a gauge with
a ``key`` label (``tokensieve_engine_batch_sizes{key="8"}`` is the number of
steps that decoded 8 sequences together).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["ServerMetrics"]

_NAME = re.compile(r"[^a-zA-Z0-9_]")


class _EngineCollector(Collector):
    def __init__(self, stats: Callable[[], Mapping[str, Any]]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            stats = dict(self._stats())
        except Exception:  # a scrape never fails because the engine is shutting down
            return
        for name, value in sorted(stats.items()):
            metric = "tokensieve_engine_" + _NAME.sub("_", str(name))
            if isinstance(value, bool):
                yield GaugeMetricFamily(metric, f"engine: {name}", value=float(value))
            elif isinstance(value, (int, float)):
                yield GaugeMetricFamily(metric, f"engine: {name}", value=float(value))
            elif isinstance(value, Mapping):
                family = GaugeMetricFamily(metric, f"engine: {name}, by key", labels=["key"])
                for key, item in sorted(value.items(), key=lambda kv: str(kv[0])):
                    if isinstance(item, (int, float)):
                        family.add_metric([str(key)], float(item))
                yield family


class ServerMetrics:
    """The server's metrics in a registry of their own.

    Parameters
    ----------
    engine_stats
        Returns the engine's statistics (read at every scrape).
    """

    def __init__(self, engine_stats: Callable[[], Mapping[str, Any]]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "tokensieve_requests", "HTTP requests answered", ["endpoint", "status"], registry=r
        )
        self.prompt_tokens = Counter("tokensieve_prompt_tokens", "prompt tokens read", registry=r)
        self.completion_tokens = Counter("tokensieve_completion_tokens", "tokens generated", registry=r)
        self.constrained = Counter(
            "tokensieve_constrained_requests", "requests decoded under a constraint", ["kind"], registry=r
        )
        self.compile_seconds = Histogram(
            "tokensieve_compile_seconds",
            "time to compile a constraint (cache misses only)",
            ["kind"],
            buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.cache_hits = Counter(
            "tokensieve_constraint_cache_hits",
            "constraints found compiled (or compiling) already",
            registry=r,
        )
        self.cache_misses = Counter(
            "tokensieve_constraint_cache_misses", "constraints compiled anew", registry=r
        )
        self.time_to_first_token = Histogram(
            "tokensieve_time_to_first_token_seconds",
            "from the request's arrival to its first generated token",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
            registry=r,
        )
        r.register(_EngineCollector(engine_stats))

    def render(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
