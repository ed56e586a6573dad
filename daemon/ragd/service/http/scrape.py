"""Reading the running daemon for one /metrics scrape (the gauges of ragd.service.http.metrics).

Owns turning the daemon's parts into the gauges' values: the manifest's aggregates
(ragd.search.freshness, through the readers), the stores' chunk counts, the writer's and
the watcher's health, and when each source was last scanned. Nothing here visits every document: at
100k documents a scrape takes milliseconds (bench/metrics_scrape.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ragd.search.freshness import SourceFreshness
from ragd.service.daemon.writer import WriterStats
from ragd.service.http.metrics import Snapshot, SourceGauges
from ragd.service.readers import Readers
from ragd.service.runtime import Runtime
from ragd.sources.watcher import WatchHealth
from ragd.stores.jobs import JobQueue
from ragd.stores.records import parse_time

# A live writer thread silent this long is stuck in a job. Its loop goes round every second
# when idle and notes every document it finishes; one batch of a pass (up to 8192
# documents, ragd.indexing.batches) takes well under this.
WRITER_STALL_SECONDS = 300.0


@dataclass
class Scraper:
    """Builds the snapshot behind /metrics from the daemon's parts: its stores, the writer's
    counters and whether its thread runs, the watcher's health, and when each polled
    source was last listed whole (`Poller.last_listed`)."""

    runtime: Runtime
    readers: Readers
    queue: JobQueue
    writer: WriterStats
    writer_running: Callable[[], bool]
    watch_health: Callable[[], WatchHealth]
    polls_listed: Mapping[str, str]
    _agreed: bool = field(default=True, init=False)  # the last answer read while settled

    def snapshot(self) -> Snapshot:
        """What the daemon knows now."""
        now = datetime.now(UTC)
        freshness = self.readers.freshness(now)
        watch = self.watch_health()
        roots = {folder.name: str(folder.root) for folder in self.runtime.folders}
        oldest_job = self.queue.oldest_enqueued_at()
        lag = (now - parse_time(oldest_job)).total_seconds() if oldest_job else 0.0
        return Snapshot(
            sources={
                name: source_gauges(
                    source,
                    now,
                    scanned_at=source.checked_at or self.polls_listed.get(name),
                    degraded=None
                    if name not in roots
                    else watcher_degraded(watch, roots[name], source.checked_at),
                )
                for name, source in freshness.items()
            },
            queue_depth=self.queue.depth(),
            index_lag_seconds=max(lag, 0.0),
            chunks_embedded=self.writer.chunks_embedded,
            chunks_reused=self.writer.chunks_reused,
            watch_overflows=watch.overflows,
            stores_agree=self._stores_agree(),
            writer_alive=writer_alive(self.writer_running(), self.writer, now),
        )

    def _stores_agree(self) -> bool:
        """Whether the stores hold as many chunks as each other. The writer writes LanceDB,
        then Tantivy, then the manifest: counts read while it works may catch a batch
        between two of them, so those keep the last answer read while it did nothing. A
        real disagreement (a crash's leftovers, a lost store) outlasts the batch."""
        stats = self.writer
        before = (stats.busy, stats.jobs_done, stats.errors)
        manifest, lancedb, tantivy = self.readers.chunk_counts()
        if before[0] or (stats.busy, stats.jobs_done, stats.errors) != before:
            return self._agreed
        self._agreed = manifest == lancedb == tantivy
        return self._agreed


def writer_alive(thread_alive: bool, stats: WriterStats, now: datetime) -> bool:
    """The writer thread runs and went round its loop or finished a document within
    WRITER_STALL_SECONDS."""
    silent = (now - parse_time(stats.last_active_at)).total_seconds()
    return thread_alive and silent <= WRITER_STALL_SECONDS


def watcher_degraded(watch: WatchHealth, root: str, checked_at: str | None) -> bool:
    """Whether changes under a folder source's `root` may go unseen until a rescan: the
    watcher does not run or could not watch the root, or events were lost (an inotify
    overflow) after the source's last complete scan began (`checked_at`)."""
    if not watch.watching or root in watch.unwatched_roots:
        return True
    lost = watch.last_overflow_at
    return lost is not None and (checked_at is None or checked_at < lost)


def source_gauges(
    source: SourceFreshness, now: datetime, *, scanned_at: str | None, degraded: bool | None
) -> SourceGauges:
    oldest = source.oldest_confirmed_at
    return SourceGauges(
        documents=source.documents,
        chunks=source.chunks,
        failed=source.failed,
        stale_by_reason=source.stale_by_reason,
        oldest_unconfirmed_age=max((now - parse_time(oldest)).total_seconds(), 0.0)
        if oldest
        else 0.0,
        last_scan=parse_time(scanned_at).timestamp() if scanned_at else None,
        watcher_degraded=degraded,
    )
