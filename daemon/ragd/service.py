"""`ragd serve`: the long-running daemon and its lifecycle.

Owns start-up order, signals and shutdown. Start-up: take the data_dir lock, open the
stores, start watching, queue a full scan (it also covers any rescan missed while the
daemon was down, and a crash is reconciled by the first pass), start the writer thread,
bind the HTTP server, start the scheduler, then tell systemd READY=1. The first
SIGTERM/SIGINT stops gracefully (the writer finishes its current document and commits);
a second one exits at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any, NamedTuple

import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from ragd.app import Runtime
from ragd.config import ScheduleConfig
from ragd.errors import RagdError
from ragd.http_api import create_app
from ragd.indexer import Indexer
from ragd.jobs import JobKind, JobQueue
from ragd.keywords import KeywordStore
from ragd.logs import get_logger
from ragd.manifest_reader import ManifestReader
from ragd.metrics import Metrics, Snapshot
from ragd.notify import Notifier
from ragd.records import format_time, parse_time
from ragd.search import Mode, Searcher
from ragd.status import StatusReport
from ragd.stores import WriterLock, WriterStores
from ragd.vectors import VectorStore
from ragd.watcher import Change, Watcher
from ragd.webhook_intake import WebhookIntake
from ragd.writer import Writer

log = get_logger("ragd.service")


STOP_TIMEOUT = 8.0
# How long after its versions pass `cleanup_older_than` a compaction's follow-up runs.
CLEANUP_MARGIN = timedelta(minutes=1)
# A status read that disagrees while the writer is busy is retried this often, this far apart.
STATUS_RECHECKS = 3
STATUS_RECHECK_PAUSE = 0.25


class ScheduledJob(NamedTuple):
    """A periodic job: its id, how often it runs, what it queues, and when it first runs."""

    id: str
    interval: timedelta
    kind: JobKind
    first_after: timedelta


def scheduled_jobs(schedule: ScheduleConfig) -> list[ScheduledJob]:
    """The daemon's periodic jobs for a [schedule].

    A compaction's cleanup keeps the versions younger than `cleanup_older_than` (readers
    may still be on them), and with them the files the compaction rewrote: about the
    table's size again until the next compaction, 6 hours later by default. LanceDB
    cleans up only inside a compaction, so a second one runs once those versions are
    old enough. When compactions are that frequent anyway, the next one does it.
    """
    jobs = [
        ScheduledJob("rescan", schedule.rescan_interval, "scan", schedule.rescan_interval),
        ScheduledJob("compact", schedule.compact_interval, "compact", schedule.compact_interval),
    ]
    follow_up = schedule.cleanup_older_than + CLEANUP_MARGIN
    if follow_up < schedule.compact_interval:
        first = schedule.compact_interval + follow_up
        jobs.append(ScheduledJob("compact-cleanup", schedule.compact_interval, "compact", first))
    return jobs


class Readers:
    """Long-lived read-only store handles for queries; refreshed after each commit."""

    def __init__(self, runtime: Runtime) -> None:
        paths = runtime.data_dir
        self.manifest = ManifestReader.open(paths.manifest)
        self.vectors = VectorStore.open_readonly(paths.lancedb, ids_in_memory=True)
        self.keywords = KeywordStore.open_readonly(paths.tantivy)
        self.searcher: Searcher = runtime.searcher(self.manifest, self.vectors, self.keywords)
        self.lock = threading.Lock()
        self._seen = 0
        self.generation = 0

    def search(
        self, query: str, k: int | None, mode: Mode, exclude_stale: bool, expand: bool
    ) -> Any:
        """Run one query (queries are serialised: they share one SQLite connection)."""
        with self.lock:
            if self._seen != self.generation:
                self._seen = self.generation
                self.vectors.refresh()
                self.keywords.refresh()
            return self.searcher.search(
                query, k=k, mode=mode, exclude_stale=exclude_stale, expand=expand
            )

    def close(self) -> None:
        """Close the manifest connection."""
        self.manifest.close()


class Daemon:
    """Everything `ragd serve` runs, wired from a Runtime."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.notifier = notifier or Notifier()
        self.stop = threading.Event()
        self._signalled = False  # set by the signal handler; the main loop turns it into stop
        self.started = time.monotonic()
        self.state = "starting"
        self.webhooks = WebhookIntake(self.config.sources)
        self.metrics = Metrics(self._snapshot)

    # -- the backend the HTTP API calls ---------------------------------------------------

    @property
    def max_body_bytes(self) -> int:
        return self.config.http.max_body_bytes

    def search(
        self, query: str, k: int | None, mode: str | None, exclude_stale: bool, expand: bool
    ) -> Any:
        chosen: Mode = mode or self.config.search.mode  # type: ignore[assignment]
        started = time.perf_counter()
        result = self.readers.search(query, k, chosen, exclude_stale, expand).to_json()
        self.metrics.query_seconds.labels(mode=chosen).observe(time.perf_counter() - started)
        return result

    def status(self) -> dict[str, object]:
        # The daemon's counters first: the report, read after them, then holds at least
        # everything they count ("scan finished, queue empty" means the stores show it).
        daemon = {
            "state": self.state,
            "pid": os.getpid(),
            "data_dir": str(self.runtime.data_dir.root.resolve()),
            "uptime_seconds": round(time.monotonic() - self.started, 1),
            "queue_depth": self.queue.depth(),
            "watcher": self.watcher.health().__dict__,
            "writer": self.writer.stats.to_json(),
            "lancedb_versions": self.readers.vectors.version_count(),
            "next_jobs": {
                job.id: format_time(job.next_run_time)
                for job in self.scheduler.get_jobs()
                if job.next_run_time is not None
            },
        }
        report = self._settled_status().to_json()
        report["daemon"] = daemon
        return report

    def _settled_status(self) -> StatusReport:
        """The report; a disagreement seen while the writer works is checked again.

        The three stores are read one after another, so a batch written between the reads
        can look like a disagreement (16-32 of 139 samples in the soak, docs/soak.md). A
        real one (a crash's leftovers, a broken store) is still there after the writer has
        moved on, and is reported.
        """
        report = self.runtime.status()
        for _ in range(STATUS_RECHECKS):
            if report.agreement.agree or not self.writer.stats.busy:
                break
            time.sleep(STATUS_RECHECK_PAUSE)
            report = self.runtime.status()
        return report

    def has_webhook_source(self, source: str) -> bool:
        return self.webhooks.knows(source)

    def webhook(
        self, source: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        """Authenticate, validate and durably queue one delivery; (status, JSON body)."""
        outcome, answer = self.webhooks.accept(self.queue, source, headers, body)
        if outcome in ("queued", "duplicate"):
            self.writer.wake.set()
        self.metrics.webhook_deliveries.labels(source=source, outcome=outcome).inc()
        log.info(
            "webhook_delivery",
            source=source,
            outcome=outcome,
            status=answer[0],
            delivery_id=answer[1].get("delivery_id"),
        )
        return answer

    def note_webhook(self, source: str, outcome: str) -> None:
        self.metrics.webhook_deliveries.labels(source=source, outcome=outcome).inc()
        log.info("webhook_delivery", source=source, outcome=outcome)

    def metrics_text(self) -> bytes:
        return self.metrics.render()

    def _snapshot(self) -> Snapshot:
        oldest = self.queue.oldest_enqueued_at()
        lag = (datetime.now(UTC) - parse_time(oldest)).total_seconds() if oldest else 0.0
        with self.readers.lock:
            per_source = self.readers.manifest.source_counts()
        return Snapshot(
            per_source=per_source,
            queue_depth=self.queue.depth(),
            index_lag_seconds=max(lag, 0.0),
            chunks_embedded=self.writer.stats.chunks_embedded,
            chunks_reused=self.writer.stats.chunks_reused,
            watch_overflows=self.watcher.health().overflows,
        )

    def health(self) -> dict[str, object]:
        watcher = self.watcher.health()
        return {
            "status": self.state,
            "writer_alive": self.writer.is_alive(),
            "degraded": bool(watcher.unwatched_roots) or not self.writer.is_alive(),
        }

    # -- lifecycle ------------------------------------------------------------------------

    def serve(self) -> int:
        """Run until a signal; returns the exit code."""
        self._install_signal_handlers()
        lock = WriterLock(self.runtime.data_dir.lock)
        lock.acquire()
        try:
            with self._stores() as stores:
                return self._run(stores)
        finally:
            lock.release()

    @contextmanager
    def _stores(self) -> Iterator[WriterStores]:
        stores = WriterStores(self.runtime.data_dir)
        try:
            # Open both search stores now, so readers find them, and load the model (an
            # empty call embeds nothing) before READY=1 rather than on the first change.
            stores.vectors(self.runtime.embedder.dim)
            stores.keywords()
            self.runtime.embedder.embed([])
            yield stores
        finally:
            stores.close()

    def _run(self, stores: WriterStores) -> int:
        runtime = self.runtime
        self.queue = JobQueue.beside(stores.manifest)
        self.readers = Readers(runtime)
        indexer = Indexer(
            stores,
            runtime.folders,
            runtime.pipeline,
            runtime.embedder,
            stop=self.stop.is_set,
            cleanup_older_than=self.config.schedule.cleanup_older_than,
        )
        self.writer = Writer(
            indexer,
            self.queue,
            self.notifier,
            self.stop,
            compact=lambda: self._compact(stores),
            on_commit=self._committed,
            fetchers=self.webhooks.fetchers,
        )
        indexer.on_event = self.writer.on_document
        self.watcher = Watcher(runtime.folders, self._on_changes, self._on_overflow)
        self.watcher.start()  # before the scan, so nothing changed during it is missed
        self.queue.enqueue("scan")
        # The writer starts once the server listens: a busy port fails before any indexing,
        # and the server's start-up (imports on its thread) does not slow the first scan.
        server, server_thread = self._start_http()
        self.writer.start()
        self.scheduler = self._start_scheduler()
        self.state = "ok"
        self.notifier.ready()
        log.info(
            "serving", listen=self.config.http.listen, sources=len(runtime.folders), pid=os.getpid()
        )
        try:
            while not self._should_stop():
                time.sleep(0.1)  # a signal's handler runs within it; the flag is read next
        finally:
            self._shutdown(server, server_thread)
        return 0

    def _shutdown(self, server: uvicorn.Server, server_thread: threading.Thread) -> None:
        self.state = "stopping"
        self.notifier.stopping()
        log.info("stopping")
        deadline = time.monotonic() + STOP_TIMEOUT
        self.scheduler.shutdown(wait=False)
        server.should_exit = True
        self.watcher.stop()  # flushes pending changes into the durable queue
        self.writer.wake.set()
        self.writer.join(max(0.1, deadline - time.monotonic()))
        server_thread.join(max(0.1, deadline - time.monotonic()))
        self.readers.close()
        self.queue.close()
        log.info("stopped", writer_finished=not self.writer.is_alive())

    def _compact(self, stores: WriterStores) -> None:
        stores.vectors(self.runtime.embedder.dim).optimize(self.config.schedule.cleanup_older_than)
        # Watch events and webhooks never run a full pass, which is what prunes the vector
        # cache; without this the manifest grew 12x in a 10-minute soak (docs/soak.md).
        pruned = stores.manifest.prune_vectors()
        vacuumed = stores.manifest.reclaim_space()
        log.info("manifest_compacted", vectors_pruned=pruned, vacuumed=vacuumed)
        # Senders retry for about three days; older delivery ids can no longer repeat.
        self.queue.forget_deliveries(format_time(datetime.now(UTC) - timedelta(days=4)))

    def _committed(self) -> None:
        self.readers.generation += 1

    def _on_changes(self, changes: list[Change]) -> None:
        self.queue.enqueue_many(("tree" if c.is_dir else "path", c.source, c.key) for c in changes)
        self.writer.wake.set()

    def _on_overflow(self) -> None:
        log.warning("watch_events_lost", action="full rescan queued")
        self.queue.enqueue("scan")
        self.writer.wake.set()

    def _start_http(self) -> tuple[uvicorn.Server, threading.Thread]:
        http = self.config.http
        config = uvicorn.Config(
            create_app(self),
            host=http.host,
            port=http.port,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        # Off the main thread uvicorn leaves signals alone; this process handles them.
        thread = threading.Thread(target=server.run, name="ragd-http", daemon=True)
        thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop.set()
                raise RagdError(
                    f"cannot listen on {http.listen}",
                    hint="is another process using the port? set [http] listen",
                )
            time.sleep(0.02)
        return server, thread

    def _start_scheduler(self) -> BackgroundScheduler:
        schedule = self.config.schedule
        scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": int(schedule.misfire_grace.total_seconds()),
            },
        )
        now = datetime.now(UTC)
        for job in scheduled_jobs(schedule):
            scheduler.add_job(
                self._enqueue_job,
                IntervalTrigger(seconds=max(1, int(job.interval.total_seconds()))),
                args=[job.kind],
                id=job.id,
                replace_existing=True,
                next_run_time=now + max(job.first_after, timedelta(seconds=1)),
            )
        scheduler.start()
        return scheduler

    def _enqueue_job(self, kind: JobKind) -> None:
        self.queue.enqueue(kind)
        self.writer.wake.set()

    def _should_stop(self) -> bool:
        """Polled by the main loop: a stop signal, a stop from another thread, a dead writer."""
        if self._signalled:
            self.stop.set()
        elif not self.stop.is_set() and not self.writer.is_alive():
            log.error("writer_died")
            self.stop.set()
        return self.stop.is_set()

    def _install_signal_handlers(self) -> None:
        # The handler only sets a flag. Python runs it on the main thread between two
        # bytecodes, which can be inside `Event.wait` with the Event's lock held: there,
        # `stop.set()` waited for that lock forever (a SIGTERM'd daemon never exited; see
        # python/cpython#126434 for the same trap in multiprocessing.Event).
        def on_signal(signum: int, frame: FrameType | None) -> None:
            if self._signalled:
                os._exit(1)  # a second signal: the operator wants out now
            self._signalled = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
