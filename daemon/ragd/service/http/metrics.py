"""Prometheus metrics of `ragd serve` (GET /metrics).

Owns the metric names and their meaning. Counters and the query histogram are updated
as things happen; gauges that describe the index (documents and chunks per source,
queue depth, index lag, embeddings) and whether it can be trusted (stale and failed
documents, store agreement, writer and watcher health, scans) are read at scrape time
(ragd.service.http.scrape), so they are never stale. Every label value is bounded: source names
come from the config (or a manifest written under an earlier one), stale reasons from
ragd.search.staleness.REASONS, reasons a connection was closed from
ragd.service.http.connections.CLOSE_REASONS. deploy/prometheus/ragd-rules.yml alerts on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ragd.search.staleness import REASONS
from ragd.service.http.connections import CLOSE_REASONS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class SourceGauges:
    """What the daemon knows of one source at scrape time."""

    documents: int
    chunks: int
    failed: int
    stale_by_reason: Mapping[str, int]  # every reason of REASONS
    oldest_unconfirmed_age: float  # seconds; 0 when no document was ever confirmed
    last_scan: float | None  # unix time the last complete scan or poll began; None: unknown
    watcher_degraded: bool | None  # None: not a folder source


@dataclass(frozen=True)
class Snapshot:
    """What the daemon knows at scrape time."""

    sources: Mapping[str, SourceGauges]
    stores_agree: bool
    writer_alive: bool | None  # None on a read replica, which has no writer
    queue_depth: int = 0
    index_lag_seconds: float = 0.0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    watch_overflows: int = 0


ReplicaGauges = Callable[[], tuple[int, float] | None]
"""A read replica's (generation served, seconds since it was published); None before one."""


class _IndexCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot], replica: ReplicaGauges | None) -> None:
        self._snapshot = snapshot
        self._replica = replica

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        yield from _source_families(snap.sources)
        yield GaugeMetricFamily(
            "ragd_stores_agree",
            "1 when the manifest, LanceDB and Tantivy hold as many chunks as each other "
            "(ragd status compares the ids); a batch being written is not a disagreement",
            value=int(snap.stores_agree),
        )
        if snap.writer_alive is not None:
            yield GaugeMetricFamily(
                "ragd_writer_alive",
                "1 when the writer thread runs and its loop went round or finished a document "
                "recently",
                value=int(snap.writer_alive),
            )
        served = None if self._replica is None else self._replica()
        if served is not None:
            yield GaugeMetricFamily(
                "ragd_replica_generation",
                "The published generation a read replica serves",
                value=served[0],
            )
            yield GaugeMetricFamily(
                "ragd_replica_lag_seconds",
                "How long a read replica has known of a newer generation than the one it "
                "serves (0 while it serves the newest it has seen)",
                value=served[1],
            )
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


def _source_families(sources: Mapping[str, SourceGauges]) -> Iterator[Metric]:
    """The per-source gauges, each source under each."""
    documents = GaugeMetricFamily(
        "ragd_documents", "Documents in the index (not deleted), per source", labels=["source"]
    )
    chunks = GaugeMetricFamily("ragd_chunks", "Chunks in the index, per source", labels=["source"])
    stale = GaugeMetricFamily(
        "ragd_documents_stale",
        "Documents whose indexed chunks may no longer say what the source says, per source "
        "and reason (a document counts under each of its reasons). source_changed and "
        "source_deleted count the documents a change is queued for, as the daemon stats "
        "their files; ragd status stats every file",
        labels=["source", "reason"],
    )
    failed = GaugeMetricFamily(
        "ragd_documents_failed", "Documents whose processing failed, per source", labels=["source"]
    )
    unconfirmed = GaugeMetricFamily(
        "ragd_oldest_unconfirmed_age_seconds",
        "Time since the least recently indexed or confirmed document of the source was "
        "last indexed or confirmed unchanged (0 when none ever was)",
        labels=["source"],
    )
    scanned = GaugeMetricFamily(
        "ragd_last_scan_timestamp_seconds",
        "When the last complete scan (folder sources) or poll that listed the source "
        "(polled sources) began, as unix time; absent until one is known",
        labels=["source"],
    )
    degraded = GaugeMetricFamily(
        "ragd_watcher_degraded",
        "1 when changes under a folder source's root may go unseen until a rescan: the "
        "root is not watched, or watch events were lost since its last complete scan began",
        labels=["source"],
    )
    for name, source in sorted(sources.items()):
        documents.add_metric([name], source.documents)
        chunks.add_metric([name], source.chunks)
        for reason in REASONS:
            stale.add_metric([name, reason], source.stale_by_reason.get(reason, 0))
        failed.add_metric([name], source.failed)
        unconfirmed.add_metric([name], source.oldest_unconfirmed_age)
        if source.last_scan is not None:
            scanned.add_metric([name], source.last_scan)
        if source.watcher_degraded is not None:
            degraded.add_metric([name], int(source.watcher_degraded))
    yield from (documents, chunks, stale, failed, unconfirmed, scanned, degraded)


class Metrics:
    """The daemon's registry."""

    def __init__(
        self, snapshot: Callable[[], Snapshot], *, replica: ReplicaGauges | None = None
    ) -> None:
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
        self.http_connections_closed = Counter(
            "ragd_http_connections_closed",
            "HTTP connections the server closed on its client, by reason: header_timeout "
            "or body_timeout (the client took longer than [http] header_timeout or "
            "body_timeout to send a request), over_limit (it had waited longest for its "
            "client when a new connection needed its place under [http] max_connections), "
            "refused (a new connection found every open one being answered)",
            ["reason"],
            registry=self.registry,
        )
        for reason in CLOSE_REASONS:
            self.http_connections_closed.labels(reason)
        self.http_denied = Counter(
            "ragd_http_denied",
            "Requests refused by the access gate, by token (its [access] name; unknown when "
            "none matched) and reason: missing (no token), malformed (not 'Bearer <token>', "
            "or sent twice), invalid (no such token), scope (a token of some sources asked "
            "for what needs every source)",
            ["token", "reason"],
            registry=self.registry,
        )
        self.registry.register(_IndexCollector(snapshot, replica))

    def connection_closed(self, reason: str) -> None:
        """Count an HTTP connection closed on its client (CLOSE_REASONS)."""
        self.http_connections_closed.labels(reason).inc()

    def denied(self, token: str, reason: str) -> None:
        """Count a request the access gate refused (ragd.service.http.gate)."""
        self.http_denied.labels(token, reason).inc()

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
