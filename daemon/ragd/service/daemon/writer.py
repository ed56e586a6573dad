"""The writer thread of `ragd serve`: the only code in the daemon that writes the stores.

Owns the loop that takes jobs from the durable queue and does them with the Indexer:
a `scan` job runs a full pass (it covers any path jobs taken with it), `path`/`tree`
jobs sync those paths, `entry` jobs apply CMS deliveries and polled changes (reading
back an entry a delivery did not carry), `polled` jobs record how a poll ended, and
`compact` runs LanceDB housekeeping. Jobs leave the queue only
when done, so a crash or a stop mid-job means the job runs again after the restart.
One job that raises never fails another: a batch that fails is split in halves until
the jobs that fail alone are found, and only those count a failed attempt (the queue's
rules, ragd.stores.jobs). A document's job that fails MAX_ATTEMPTS times becomes a failed
document with its reason (`ragd status` lists it); any other job is given up with an
error line and listed in the daemon's status (`dropped_jobs`).
Second-stage vectors the filler thread embedded (ragd.service.daemon.filler) are
written when no job waits: jobs make changes searchable, these only improve ranking.
The loop pings the systemd watchdog, so a hung writer gets the service restarted, and
notes when it last went round or finished a document (`ragd_writer_alive`).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from queue import Empty, SimpleQueue
from typing import Any, NamedTuple, Protocol

from ragd.adapters import allocator
from ragd.errors import RagdError, one_line
from ragd.indexing.batches import DocumentEvent
from ragd.indexing.entries import EntryUpdate, entry_update
from ragd.indexing.indexer import Indexer
from ragd.indexing.passes import settle_vectors
from ragd.indexing.report import IndexReport
from ragd.indexing.second_stage import Embedded, SecondStageWriter
from ragd.service.daemon.notify import Notifier
from ragd.service.logs import get_logger
from ragd.sources.cms.formats import EntryReader
from ragd.sources.deliveries import from_job_payload
from ragd.sources.webhooks import WebhookRejected
from ragd.stores.jobs import Job, JobQueue
from ragd.stores.records import doc_id_of, format_time

log = get_logger("ragd.service.daemon.writer")

MAX_ATTEMPTS = 5
# Seconds a job that failed waits before its next attempt: doubled per failed attempt,
# at most RETRY_MAX (1, 2, 4, 8: a job that always fails is given up ~15 s after its
# first failure). Other jobs are taken meanwhile.
RETRY_BASE = 1.0
RETRY_MAX = 30.0
DROPPED_LISTED = 20
# Jobs whose failure makes a failed document; the others (scan, tree, compact, polled)
# are redone by the next rescan, compaction or poll.
_DOCUMENT_JOBS = ("entry", "path")
# Jobs a failing batch runs on their own before it is halved: each costs a whole pass
# (or a compaction), which the halving would otherwise repeat at every level.
_WHOLE_PASSES = ("scan", "compact")
RECENT_EVENTS = 50
# Documents written in one batch of jobs past which the writer trims the heap after it.
BIG_PASS = 1000


class DroppedJob(NamedTuple):
    """A job other than a document's that the writer gave up, and why."""

    at: str
    kind: str
    source: str
    key: str
    reason: str


class RecentEvent(NamedTuple):
    """A document the writer indexed, deleted or failed, and when."""

    at: str
    action: str
    doc_id: str
    reason: str | None


@dataclass
class WriterStats:
    """Counters since the daemon started, for /v1/status; `on_document` is the Indexer's
    event callback, which counts and logs each document."""

    started_at: str = field(default_factory=lambda: format_time(datetime.now(UTC)))
    last_scan_at: str | None = None
    last_change_at: str | None = None
    documents_indexed: int = 0
    documents_deleted: int = 0
    documents_failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    second_stage_embedded: int = 0  # texts the second-stage model embedded and were written
    jobs_done: int = 0
    jobs_dropped: int = 0
    errors: int = 0
    busy: bool = False
    # When the loop last went round or finished a document: a live thread silent for long
    # is stuck in a job (ragd.service.http.scrape).
    last_active_at: str = field(default_factory=lambda: format_time(datetime.now(UTC)))
    # Called on every document done (the daemon's watchdog ping).
    heartbeat: Callable[[], None] = field(default=lambda: None, repr=False)
    # The last documents indexed, deleted or failed, newest last: the status page's feed.
    recent: deque[RecentEvent] = field(default_factory=lambda: deque(maxlen=RECENT_EVENTS))
    # The last jobs given up that were no document's, newest last.
    dropped: deque[DroppedJob] = field(default_factory=lambda: deque(maxlen=DROPPED_LISTED))

    def to_json(self) -> dict[str, object]:
        """The writer section of the daemon status."""
        shown = {
            k: v for k, v in self.__dict__.items() if k not in ("recent", "heartbeat", "dropped")
        }
        return {**shown, "dropped_jobs": [d._asdict() for d in self.dropped]}

    def recent_events(self) -> list[RecentEvent]:
        """The last events, newest first (a copy: the writer keeps appending)."""
        return list(reversed(self.recent.copy()))

    def on_document(self, event: DocumentEvent) -> None:
        """Count and log one event per document, and beat the heart: a document done is
        the writer alive, however long its job."""
        self.heartbeat()
        self.last_active_at = format_time(datetime.now(UTC))
        if event.action in ("indexed", "deleted", "failed"):
            at = self.last_active_at
            self.recent.append(RecentEvent(at, event.action, event.doc_id, event.reason))
        fields: dict[str, Any] = {"doc_id": event.doc_id, "seconds": round(event.seconds, 4)}
        if event.action == "indexed":
            self.documents_indexed += 1
            log.info("document_indexed", chunks=event.chunks, **fields)
        elif event.action == "deleted":
            self.documents_deleted += 1
            log.info("document_deleted", **fields)
        elif event.action == "failed":
            self.documents_failed += 1
            log.warning("document_failed", reason=event.reason, **fields)
        else:
            log.debug("document_unchanged", reason=event.reason, **fields)


class WriterHost(Protocol):
    """The daemon around the writer: what the writer asks of it and tells it, each call on
    the writer's thread."""

    def compact(self) -> None:
        """Do a `compact` job: the stores' housekeeping."""

    def committed(self) -> None:
        """Documents were committed (readers refresh, replicas want a generation)."""

    def second_stage_written(self) -> None:
        """Second-stage vectors were written."""

    def between_commits(self) -> None:
        """Nothing is half-written: after a batch of jobs, after second-stage vectors, and
        while idle (publishing for replicas runs here)."""

    def writer_exited(self) -> None:
        """The writer's loop ended, however it ended."""


class Writer(threading.Thread):
    """Drains the job queue into the indexer until told to stop."""

    def __init__(
        self,
        indexer: Indexer,
        queue: JobQueue,
        notifier: Notifier,
        stop: threading.Event,
        *,
        stats: WriterStats,
        host: WriterHost,
        readers: Mapping[str, EntryReader] | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        retry_base: float = RETRY_BASE,
    ) -> None:
        super().__init__(name="ragd-writer", daemon=True)
        self.indexer = indexer
        self.queue = queue
        self.notifier = notifier
        self.stop = stop
        self.wake = threading.Event()
        self.stats = stats
        self.host = host
        self.readers = dict(readers or {})  # how a thin delivery's entry is read back
        self._second: SimpleQueue[tuple[Embedded, Future[int]]] = SimpleQueue()
        # Passes asked for by `ragd index` beside the daemon, by `full`: one waiting pass
        # serves every request made before it starts.
        self._passes: dict[bool, Future[IndexReport]] = {}
        self._passes_lock = threading.Lock()
        self.max_attempts = max_attempts
        self._retry_base = retry_base

    def submit_second_stage(self, embedded: Embedded) -> Future[int]:
        """Queue second-stage vectors to be written between jobs (from the filler thread);
        the future holds the number of chunk rows written."""
        done: Future[int] = Future()
        self._second.put((embedded, done))
        self.wake.set()
        return done

    def request_pass(self, *, full: bool) -> Future[IndexReport]:
        """A pass over every folder source (`ragd index` beside the daemon), run once the
        queue holds nothing to take, so that what was queued before it is applied first;
        the future holds its report. A request made while one with the same `full` waits
        shares it."""
        with self._passes_lock:
            waiting = self._passes.get(full)
            if waiting is None or waiting.done():
                waiting = self._passes[full] = Future()
        self.wake.set()
        return waiting

    def run(self) -> None:
        """The loop until a stop; `writer_exited` is called however it ends, and a pass
        still asked for fails rather than leave its requester waiting."""
        try:
            self._loop()
        finally:
            with self._passes_lock:
                waiting, self._passes = list(self._passes.values()), {}
            for future in waiting:
                if future.set_running_or_notify_cancel():
                    future.set_exception(RagdError("the daemon stopped before the pass ran"))
            self.host.writer_exited()

    def _loop(self) -> None:
        """Go round until a stop; an error of the queue itself (state.db locked for longer
        than its busy timeout) costs one round, not the thread."""
        while not self.stop.is_set():
            try:
                self._round()
            except Exception as exc:
                self.stats.errors += 1
                log.exception("writer_round_failed", error=one_line(exc))
                self.stop.wait(1.0)

    def _round(self) -> None:
        """Take jobs, do them, mark them done; a job that fails waits for its retry."""
        self.notifier.watchdog()
        self.stats.last_active_at = format_time(datetime.now(UTC))
        jobs = self.queue.take()
        if not jobs:
            if not self._run_requested_pass() and not self._write_second_stage():
                self.host.between_commits()
                self.wake.wait(1.0)
                self.wake.clear()
            return
        self.stats.busy = True
        try:
            self._do_apart(jobs)
        finally:
            self.stats.busy = False
        self.host.between_commits()

    def _do_apart(self, jobs: list[Job]) -> None:
        """Do `jobs` and mark them done; if they fail together, do each whole pass alone
        and each half of the rest apart, down to the jobs that fail alone (one poisoned
        job among n costs ~2 log2 n tries)."""
        try:
            finished = self._do(jobs)
        except Exception as exc:  # one bad job must not fail the others, nor the daemon
            if len(jobs) == 1:
                self._failed(jobs[0], exc)
                return
            log.warning("batch_failed", jobs=len(jobs), error=one_line(exc))
            for part in batch_parts(jobs):
                if not self.stop.is_set():
                    self._do_apart(part)
            return
        if finished:
            self.queue.done(jobs)
            self.stats.jobs_done += len(jobs)

    def _failed(self, job: Job, exc: Exception) -> None:
        """Count a failed attempt of a job that failed alone; give it up after its last."""
        self.stats.errors += 1
        reason = one_line(exc)
        exhausted = self.queue.failed(job, max_attempts=self.max_attempts, retry_in=self._retry_in)
        log.error(
            "job_failed",
            kind=job.kind,
            source=job.source,
            key=job.key,
            attempt=job.attempts + 1,
            error=reason,
            exc_info=exc,
        )
        if exhausted:
            self._give_up(job, f"failed {self.max_attempts} times: {reason}")

    def _retry_in(self, attempts: int) -> float:
        return float(min(self._retry_base * 2 ** (attempts - 1), RETRY_MAX))

    def _give_up(self, job: Job, reason: str) -> None:
        """Record why `job` could not be done, then let it go. A document's job makes
        the document failed (an entry's as any failed delivery does: not over a newer
        one applied since); if even that cannot be written, the job stays queued."""
        if job.kind in _DOCUMENT_JOBS:
            try:
                report = (
                    self._apply_failed_entry(job, reason)
                    if job.kind == "entry"
                    else self.indexer.record_failure(job.source, job.key, reason)
                )
            except Exception:
                log.exception("failure_not_recorded", doc_id=doc_id_of(job.source, job.key))
                self.stats.errors += 1
                return
            self._account(report)
        else:
            at = format_time(datetime.now(UTC))
            self.stats.dropped.append(DroppedJob(at, job.kind, job.source, job.key, reason))
            name = " ".join(filter(None, (job.kind, job.source, job.key)))
            self.stats.recent.append(RecentEvent(at, "gave up", name, reason))
        log.error("job_given_up", kind=job.kind, source=job.source, key=job.key, error=reason)
        self.queue.done([job])
        self.stats.jobs_dropped += 1

    def _apply_failed_entry(self, job: Job, reason: str) -> IndexReport:
        delivery = from_job_payload(job.key, job.payload, job.version)
        failed = replace(entry_update(job.source, delivery, error=reason), deleted=False)
        return self.indexer.apply_entries(job.source, [failed])

    def _write_second_stage(self) -> bool:
        """Write one batch of second-stage vectors, if one waits; False if none did."""
        try:
            embedded, done = self._second.get_nowait()
        except Empty:
            return False
        stores = self.indexer.stores
        try:
            rows = SecondStageWriter(stores).write(embedded)
            if (table := stores.second_vectors()) is not None:
                settle_vectors(table, self.indexer.cleanup_older_than, self.indexer.index_builds)
        except Exception as exc:  # a bad batch costs that batch; the filler reads it again
            self.stats.errors += 1
            log.exception("second_stage_write_failed", error=str(exc))
            done.set_exception(exc)
            return True
        self.stats.second_stage_embedded += len(embedded.keys)
        done.set_result(rows)
        self.host.second_stage_written()
        return True

    def _do(self, jobs: list[Job]) -> bool:
        """Do a batch of jobs; False when a stop interrupted it (the jobs stay queued)."""
        kinds = {j.kind for j in jobs}
        reports = self._apply_entries([j for j in jobs if j.kind == "entry"])
        self._record_polls([j for j in jobs if j.kind == "polled"])
        if "scan" in kinds:
            reports.append(self._scan())  # a full pass covers the path and tree hints too
        else:
            reports.extend(self._sync_paths([j for j in jobs if j.kind in ("path", "tree")]))
        if "compact" in kinds and not self.stop.is_set():
            self.host.compact()
            log.info("compacted")
        for report in reports:
            self._account(report)
        if "scan" in kinds or sum(r.added + r.changed + r.deleted for r in reports) >= BIG_PASS:
            allocator.trim()  # a big pass's buffers are free now: give them back at once
        return not any(r.interrupted for r in reports)

    def _run_requested_pass(self) -> bool:
        """Run one pass `request_pass` asked for, if one waits; False if none did."""
        with self._passes_lock:
            if not self._passes:
                return False
            full, future = self._passes.popitem()
        if not future.set_running_or_notify_cancel():
            return True
        self.stats.busy = True
        try:
            report = self._scan(full=full)
        except Exception as exc:  # the requester hears why; the daemon goes on
            self.stats.errors += 1
            log.exception("requested_pass_failed", full=full, error=one_line(exc))
            future.set_exception(exc)
        else:
            self._account(report)
            future.set_result(report)
        finally:
            self.stats.busy = False
        self.host.between_commits()
        return True

    def _scan(self, *, full: bool = False) -> IndexReport:
        report = self.indexer.run(full=full)
        if not report.interrupted:
            self.stats.last_scan_at = format_time(datetime.now(UTC))
        event = "scan_interrupted" if report.interrupted else "scan_finished"
        log.info(event, **report.to_json())
        return report

    def _sync_paths(self, jobs: list[Job]) -> list[IndexReport]:
        by_source: dict[str, tuple[list[str], list[str]]] = {}
        for job in jobs:
            keys, trees = by_source.setdefault(job.source, ([], []))
            (keys if job.kind == "path" else trees).append(job.key)
        return [
            self.indexer.sync(source, keys=keys, trees=trees)
            for source, (keys, trees) in by_source.items()
        ]

    def _apply_entries(self, jobs: list[Job]) -> list[IndexReport]:
        by_source: dict[str, list[EntryUpdate]] = {}
        for job in jobs:
            by_source.setdefault(job.source, []).append(self._entry_update(job))
        reports = []
        for source, updates in by_source.items():
            report = self.indexer.apply_entries(source, updates)
            if report.ignored:
                log.info("stale_deliveries_ignored", source=source, count=report.ignored)
            reports.append(report)
        return reports

    def _entry_update(self, job: Job) -> EntryUpdate:
        """Turn a queued delivery into an update, reading back the entry of a delivery
        that came without content (a CMS that answers "gone" makes it a delete)."""
        delivery = from_job_payload(job.key, job.payload, job.version)
        if delivery.event == "upsert" and delivery.content is None:
            reader = self.readers.get(job.source)
            if reader is None:
                return entry_update(
                    job.source, delivery, error="no content, and no way to fetch it"
                )
            # A batch may read back many entries, each up to fetch_timeout: the watchdog
            # hears from the loop between them, not once per batch.
            self.notifier.watchdog()
            try:
                fetched = reader.fetch_entry(job.key)
            except (RagdError, WebhookRejected) as exc:
                return entry_update(job.source, delivery, error=str(exc))
            delivery = (
                replace(delivery, event="delete")
                if fetched is None
                else replace(
                    fetched,
                    title=fetched.title or delivery.title,
                    url=fetched.url or delivery.url,
                    updated_at=delivery.updated_at or fetched.updated_at,
                )
            )
        return entry_update(job.source, delivery)

    def _record_polls(self, jobs: list[Job]) -> None:
        """Record how polls ended (ragd.service.daemon.poller queued these after their entries)."""
        for job in jobs:
            outcome = json.loads(job.payload or "{}")
            self.indexer.manifest.record_poll(
                job.source,
                began_at=str(outcome.get("began_at")),
                error=outcome.get("error"),
                unconfirmed=outcome.get("unconfirmed") or [],
            )

    def _account(self, report: IndexReport) -> None:
        self.stats.chunks_embedded += report.embedded
        self.stats.chunks_reused += report.reused
        for error in report.errors:
            log.error("source_error", error=error)
        for skipped in report.skipped:
            log.warning("file_skipped", reason=skipped)
        if report.added or report.changed or report.deleted or report.failed:
            self.stats.last_change_at = format_time(datetime.now(UTC))
            self.host.committed()


def batch_parts(jobs: list[Job]) -> list[list[Job]]:
    """A failed batch's parts, each smaller than it, to try apart: each whole pass alone
    and the rest together, or, with no whole pass in it, its two halves."""
    passes = [[job] for job in jobs if job.kind in _WHOLE_PASSES]
    rest = [job for job in jobs if job.kind not in _WHOLE_PASSES]
    if not passes:
        half = len(rest) // 2
        return [rest[:half], rest[half:]]
    return [*passes, rest] if rest else passes
