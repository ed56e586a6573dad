"""The writer thread of `ragd serve`: the only code in the daemon that writes the stores.

Owns the loop that takes jobs from the durable queue and does them with the Indexer:
a `scan` job runs a full pass (it covers any path jobs taken with it), `path`/`tree`
jobs sync those paths, `compact` runs LanceDB housekeeping. Jobs leave the queue only
when done, so a crash or a stop mid-job means the job runs again after the restart.
The loop pings the systemd watchdog, so a hung writer gets the service restarted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ragd.indexer import DocumentEvent, Indexer, IndexReport
from ragd.jobs import Job, JobQueue
from ragd.logs import get_logger
from ragd.manifest import format_time
from ragd.notify import Notifier

log = get_logger("ragd.writer")

MAX_ATTEMPTS = 5


@dataclass
class WriterStats:
    """Counters since the daemon started, for /v1/status."""

    started_at: str = field(default_factory=lambda: format_time(datetime.now(UTC)))
    last_scan_at: str | None = None
    last_change_at: str | None = None
    documents_indexed: int = 0
    documents_deleted: int = 0
    documents_failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    jobs_done: int = 0
    jobs_dropped: int = 0
    errors: int = 0
    busy: bool = False

    def to_json(self) -> dict[str, object]:
        """The writer section of the daemon status."""
        return dict(self.__dict__)


class Writer(threading.Thread):
    """Drains the job queue into the indexer until told to stop."""

    def __init__(
        self,
        indexer: Indexer,
        queue: JobQueue,
        notifier: Notifier,
        stop: threading.Event,
        *,
        compact: Callable[[], None],
        on_commit: Callable[[], None],
    ) -> None:
        super().__init__(name="ragd-writer", daemon=True)
        self.indexer = indexer
        self.queue = queue
        self.notifier = notifier
        self.stop = stop
        self.wake = threading.Event()
        self.stats = WriterStats()
        self._compact = compact
        self._on_commit = on_commit

    def run(self) -> None:
        """The loop: take jobs, do them, mark them done; back off on errors."""
        backoff = 1.0
        while not self.stop.is_set():
            self.notifier.watchdog()
            jobs = self.queue.take()
            if not jobs:
                self.wake.wait(1.0)
                self.wake.clear()
                continue
            self.stats.busy = True
            try:
                finished = self._do(jobs)
            except Exception as exc:  # one bad batch must not kill the daemon
                self.stats.errors += 1
                dropped = self.queue.failed(jobs, max_attempts=MAX_ATTEMPTS)
                self.stats.jobs_dropped += len(dropped)
                log.exception("job_failed", jobs=len(jobs), error=str(exc), dropped=len(dropped))
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            finally:
                self.stats.busy = False
            backoff = 1.0
            if finished:
                self.queue.done(jobs)
                self.stats.jobs_done += len(jobs)

    def _do(self, jobs: list[Job]) -> bool:
        """Do a batch of jobs; False when a stop interrupted it (the jobs stay queued)."""
        kinds = {j.kind for j in jobs}
        reports: list[IndexReport] = []
        if "scan" in kinds:
            report = self.indexer.run()
            reports.append(report)
            if not report.interrupted:
                self.stats.last_scan_at = format_time(datetime.now(UTC))
            log.info(
                "scan_interrupted" if report.interrupted else "scan_finished", **report.to_json()
            )
        else:
            by_source: dict[str, tuple[list[str], list[str]]] = {}
            for job in jobs:
                keys, trees = by_source.setdefault(job.source, ([], []))
                if job.kind == "path":
                    keys.append(job.key)
                elif job.kind == "tree":
                    trees.append(job.key)
            for source, (keys, trees) in by_source.items():
                reports.append(self.indexer.sync(source, keys=keys, trees=trees))
        if "compact" in kinds and not self.stop.is_set():
            self._compact()
            log.info("compacted")
        for report in reports:
            self._account(report)
        return not any(r.interrupted for r in reports)

    def _account(self, report: IndexReport) -> None:
        self.stats.chunks_embedded += report.embedded
        self.stats.chunks_reused += report.reused
        for error in report.errors:
            log.error("source_error", error=error)
        if report.added or report.changed or report.deleted or report.failed:
            self.stats.last_change_at = format_time(datetime.now(UTC))
            self._on_commit()

    def on_document(self, event: DocumentEvent) -> None:
        """Log one event per document (the Indexer calls this)."""
        fields: dict[str, Any] = {"doc_id": event.doc_id, "seconds": round(event.seconds, 4)}
        if event.action == "indexed":
            self.stats.documents_indexed += 1
            log.info("document_indexed", chunks=event.chunks, **fields)
        elif event.action == "deleted":
            self.stats.documents_deleted += 1
            log.info("document_deleted", **fields)
        elif event.action == "failed":
            self.stats.documents_failed += 1
            log.warning("document_failed", reason=event.reason, **fields)
        else:
            log.debug("document_unchanged", reason=event.reason, **fields)
