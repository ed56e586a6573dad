"""`ragd serve`: the long-running daemon and its lifecycle.

Owns building the daemon (all of it, in `Daemon.__init__`, releasing what was taken if a
step fails), start-up order, the wait for a stop, and shutdown. Building takes the data_dir
lock, opens the stores, loads the model and binds the HTTP socket, so a busy port or a bad
secret fails before anything is indexed. Serving starts watching (before the scan, so
nothing changed during it is missed), queues a full scan (it also covers any rescan missed
while the daemon was down, and the first pass reconciles a crash), starts the HTTP server,
the writer thread and the scheduler, then tells systemd READY=1. The first SIGTERM/SIGINT
stops gracefully (the writer finishes its current document and commits); a second one
exits at once (`ragd.service.daemon.stopping`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from types import TracebackType

from ragd.config.sources import source_kinds
from ragd.errors import one_line
from ragd.indexing.indexer import Indexer
from ragd.indexing.passes import compact_vectors
from ragd.service.access import serving_tokens
from ragd.service.daemon.filler import SecondStageFiller
from ragd.service.daemon.index_builder import IndexBuilder
from ragd.service.daemon.intake import WebhookIntake
from ragd.service.daemon.notify import Notifier
from ragd.service.daemon.poller import Poller
from ragd.service.daemon.publisher import Publishing
from ragd.service.daemon.scheduler import PollJob, Scheduler
from ragd.service.daemon.stopping import StopSignal
from ragd.service.daemon.writer import Writer, WriterStats
from ragd.service.http.api import create_app
from ragd.service.http.backend import ServiceBackend
from ragd.service.http.gate import AccessGate
from ragd.service.http.server import HttpServer
from ragd.service.logs import get_logger
from ragd.service.mcp.endpoint import mcp_endpoint, ragd_server
from ragd.service.readers import Readers
from ragd.service.remote_sources import remote_sources
from ragd.service.runtime import Runtime
from ragd.sources.watcher import Change, Watcher
from ragd.stores.data_dir import WriterLock, WriterStores
from ragd.stores.jobs import JobKind, JobQueue
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import format_time

log = get_logger("ragd.service")

# Seconds a graceful stop waits for the writer and the HTTP server before giving up.
STOP_TIMEOUT = 8.0


class Daemon:
    """Everything `ragd serve` runs, built from a Runtime; use as a context manager."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        self.runtime = runtime
        config = runtime.config
        self.notifier = notifier or Notifier()
        self.stop = threading.Event()
        self.state = "starting"
        self.started = time.monotonic()
        self._resources = contextlib.ExitStack()
        try:
            self.stopping = StopSignal()
            self._resources.callback(self.stopping.close)
            self._resources.enter_context(self.stopping.installed())
            tokens = serving_tokens(config, os.environ)  # before anything is opened
            remote = remote_sources(config)  # reads the secrets and tokens, once
            self.webhooks = WebhookIntake(remote.formats, max_body_bytes=config.http.max_body_bytes)
            lock = WriterLock(runtime.data_dir.lock)
            lock.acquire()
            self._resources.callback(lock.release)
            self.stores = self._open_stores()
            self.queue = JobQueue.beside(self.stores.manifest)
            self._resources.callback(self.queue.close)
            self.readers = Readers(runtime)
            self._resources.callback(self.readers.close)
            # A long job (the first scan of a large tree) tells the watchdog it lives as its
            # documents are done, not only between jobs: WatchdogSec would restart it.
            stats = WriterStats(heartbeat=self.notifier.watchdog)
            indexer = Indexer(
                self.stores,
                runtime.folders,
                runtime.pipeline,
                runtime.embedder,
                stop=self.stop.is_set,
                on_event=stats.on_document,
                cleanup_older_than=config.schedule.cleanup_older_than,
                other_sources=runtime.other_sources,
            )
            self.index_builder = IndexBuilder(runtime.data_dir.lancedb, self.stop)
            indexer.index_builds = self.index_builder
            # With the stores on object storage, commits are published for replicas.
            self.publishing = Publishing(
                runtime.publisher(),
                self.stores,
                runtime.embedder.dim,
                ready=lambda: stats.last_scan_at is not None,
                min_interval=config.storage.refresh_interval.total_seconds(),
            )
            self.writer = Writer(
                indexer,
                runtime.wrap(self.queue),  # a test's may hold the writer (tests/faults.py)
                self.notifier,
                self.stop,
                stats=stats,
                host=self,
                readers=remote.readers,
            )
            self.filler = (
                None
                if runtime.second_stage is None
                else SecondStageFiller(
                    lambda: ManifestReader.open(runtime.data_dir.manifest),
                    runtime.second_stage,
                    self.writer.submit_second_stage,
                    self.stop,
                )
            )
            self._included_reader: ManifestReader | None = None
            self.watcher = Watcher(runtime.folders, self, included=self.included)
            self.poller = Poller(
                {name: source for name, (source, _) in remote.polled.items()},
                lambda: ManifestReader.open(runtime.data_dir.manifest),
                self.queue,
                self.writer.wake.set,
                self.stop,
            )
            polls = [
                PollJob(name, timedelta(seconds=every), self.poller.poll)
                for name, (_, every) in remote.polled.items()
            ]
            self.scheduler = Scheduler(config.schedule, self._enqueue, polls)
            backend = ServiceBackend(
                runtime,
                self.readers,
                self.queue,
                self.writer,
                self.watcher,
                self.scheduler,
                self.webhooks,
                self.filler,
                self.poller,
                state=lambda: self.state,
                started=self.started,
                publishing=self.publishing.to_json,
            )
            http = config.http
            mcp = mcp_endpoint(
                ragd_server(self.readers, backend.status),
                host=http.host,
                port=http.port,
                max_body_bytes=http.max_body_bytes,
                max_connections=http.max_connections,
            )
            app = AccessGate(create_app(backend, mcp), tokens, backend.metrics.denied)
            self.http = HttpServer(app, http, closed=backend.metrics.connection_closed)
            self._resources.callback(self.http.close)
        except BaseException:
            self._resources.close()
            raise

    def _open_stores(self) -> WriterStores:
        # Load the models before READY=1 rather than on the first change, the second stage
        # first: building its session briefly takes twice what it keeps, and the process
        # is smallest now (a peak here adds to nothing else).
        if self.runtime.second_stage is not None:
            self.runtime.second_stage.load()
        self.runtime.embedder.embed([])  # an empty call embeds nothing
        stores = self.runtime.writer_stores()
        self._resources.callback(stores.close)
        # Open both search stores now, so readers find them.
        stores.vectors(self.runtime.embedder.dim)
        stores.keywords()
        return stores

    def __enter__(self) -> Daemon:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._resources.close()

    def serve(self) -> int:
        """Run until told to stop; returns the exit code."""
        self.http.start()  # first: nothing else has started if it cannot
        self.watcher.start()
        self.queue.enqueue("scan")
        self.writer.start()
        self.index_builder.start()
        if self.filler is not None:
            self.filler.start()
        self.scheduler.start()
        self.state = "ok"
        self.notifier.ready()
        log.info(
            "serving",
            listen=self.runtime.config.http.listen,
            sources=source_kinds(self.runtime.config.sources),
            pid=os.getpid(),
        )
        try:
            while not self._should_stop():
                self.stopping.wait()
        finally:
            self._shutdown()
        return 0

    def _should_stop(self) -> bool:
        """A stop signal, a stop from another thread, or a dead writer."""
        if self.stopping.signalled:
            self.stop.set()
        elif not self.stop.is_set() and not self.writer.is_alive():
            log.error("writer_died")
            self.stop.set()
        return self.stop.is_set()

    def _shutdown(self) -> None:
        self.state = "stopping"
        self.notifier.stopping()
        log.info("stopping")
        deadline = time.monotonic() + STOP_TIMEOUT
        self.scheduler.stop()
        self.http.begin_stop()
        self.watcher.stop()  # flushes pending changes into the durable queue
        self.writer.wake.set()
        if self.filler is not None:
            self.filler.wake.set()
        self.writer.join(max(0.1, deadline - time.monotonic()))
        # A build under way finishes first: a cleanup would delete the files of an index
        # not yet committed (the builder stops once it is done).
        self.index_builder.join(max(0.1, deadline - time.monotonic()))
        if not self.writer.is_alive() and not self.index_builder.is_alive():
            self._drop_superseded_versions()
        self.http.join(max(0.1, deadline - time.monotonic()))
        log.info("stopped", writer_finished=not self.writer.is_alive())

    def _drop_superseded_versions(self) -> None:
        """The writer has finished: the LanceDB versions kept for this process's readers
        go (ragd.stores.vectors.VectorStore.drop_superseded_versions). A failure costs
        disk until the next compaction, not the stop."""
        started = time.monotonic()
        tables = [self.stores.vectors(self.runtime.embedder.dim), self.stores.second_vectors()]
        try:
            dropped = [t.name for t in tables if t is not None and t.drop_superseded_versions()]
        except Exception as exc:
            log.warning("versions_not_dropped", error=one_line(exc))
            return
        if dropped:
            seconds = round(time.monotonic() - started, 3)
            log.info("versions_dropped", tables=dropped, seconds=seconds)

    # -- what the writer calls (WriterHost) -----------------------------------------------

    def committed(self) -> None:
        """The writer committed: readers refresh, new chunks may want second-stage
        vectors, and replicas a new generation."""
        self.readers.committed()
        self.publishing.changed()
        if self.filler is not None:
            self.filler.wake.set()

    def second_stage_written(self) -> None:
        self.readers.second_stage_written()
        self.publishing.changed()

    def between_commits(self) -> None:
        self.publishing.between_commits()

    def writer_exited(self) -> None:
        self.stopping.wake()

    def compact(self) -> None:
        """The writer's `compact` job: LanceDB housekeeping, then the manifest's."""
        cleanup = self.runtime.config.schedule.cleanup_older_than
        builds = self.index_builder
        compact_vectors(self.stores.vectors(self.runtime.embedder.dim), cleanup, builds)
        self.publishing.changed()  # compaction makes new versions
        if (second := self.stores.second_vectors()) is not None:
            compact_vectors(second, cleanup, builds)
        # Watch events and webhooks never run a full pass, which is what prunes the vector
        # cache; without this the manifest would grow with every edit.
        pruned = self.stores.manifest.prune_vectors()
        vacuumed = self.stores.manifest.reclaim_space()
        log.info("manifest_compacted", vectors_pruned=pruned, vacuumed=vacuumed)
        # Senders retry for about three days; older delivery ids can no longer repeat.
        self.queue.forget_deliveries(format_time(datetime.now(UTC) - timedelta(days=4)))

    # -- what the watcher calls (WatchListener) -------------------------------------------

    def included(self, source: str, key: str) -> bool:
        """Whether a document includes this file, which no pattern selects: its change is
        then a hint too. The watcher's thread alone asks, so it alone uses this reader."""
        if self._included_reader is None:
            self._included_reader = ManifestReader.open(self.runtime.data_dir.manifest)
            self._resources.callback(self._included_reader.close)
        return self._included_reader.is_included(source, key)

    def on_changes(self, changes: list[Change]) -> None:
        self.queue.enqueue_many(("tree" if c.is_dir else "path", c.source, c.key) for c in changes)
        self.writer.wake.set()

    def on_overflow(self) -> None:
        log.warning("watch_events_lost", action="full rescan queued")
        self._enqueue("scan")

    def on_rewatched(self, source: str) -> None:
        # What changed while the root was gone only a scan sees. A scan of every source
        # rather than a tree job of this one: a scan refuses a root that suddenly lists
        # nothing (a disk not mounted back yet), where a tree job would delete all of it.
        log.info("root_watched_again", source=source, action="full rescan queued")
        self._enqueue("scan")

    def _enqueue(self, kind: JobKind) -> None:
        self.queue.enqueue(kind)
        self.writer.wake.set()
