"""Prometheus metrics of `ragd serve` (GET /metrics).

Owns the metric names and their meaning. Counters and the query histogram are updated
as things happen; gauges that describe the index (documents and chunks per source,
queue depth, index lag, embeddings) are read at scrape time, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Snapshot:
    """What the daemon knows at scrape time."""

    per_source: dict[str, tuple[int, int]]  # source -> (documents, chunks)
    queue_depth: int
    index_lag_seconds: float
    chunks_embedded: int
    chunks_reused: int
    watch_overflows: int


class _IndexCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        documents = GaugeMetricFamily(
            "ragd_documents", "Documents in the index (not deleted), per source", labels=["source"]
        )
        chunks = GaugeMetricFamily(
            "ragd_chunks", "Chunks in the index, per source", labels=["source"]
        )
        for source, (docs, count) in sorted(snap.per_source.items()):
            documents.add_metric([source], docs)
            chunks.add_metric([source], count)
        yield documents
        yield chunks
        yield GaugeMetricFamily(
            "ragd_queue_depth", "Jobs waiting for the writer", value=snap.queue_depth
        )
        yield GaugeMetricFamily(
            "ragd_index_lag_seconds",
            "Age of the oldest job waiting for the writer (0 when the queue is empty)",
            value=snap.index_lag_seconds,
        )
        yield CounterMetricFamily(
            "ragd_chunks_embedded",
            "Chunk texts sent to the model since start",
            value=snap.chunks_embedded,
        )
        yield CounterMetricFamily(
            "ragd_chunks_reused",
            "Chunks whose stored vector was re-used since start",
            value=snap.chunks_reused,
        )
        yield CounterMetricFamily(
            "ragd_watch_overflows",
            "inotify queue overflows (each triggers a rescan)",
            value=snap.watch_overflows,
        )


class Metrics:
    """The daemon's registry."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self.registry = CollectorRegistry()
        self.webhook_deliveries = Counter(
            "ragd_webhook_deliveries",
            "Webhook deliveries by source and outcome (queued, duplicate, ignored, "
            "unauthorized, malformed, unknown_source, too_large); a source that is not "
            "configured counts as _unknown",
            ["source", "outcome"],
            registry=self.registry,
        )
        self.query_seconds = Histogram(
            "ragd_query_seconds",
            "Query latency, by mode",
            ["mode"],
            buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )
        self.registry.register(_IndexCollector(snapshot))

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
