"""The durable work queue in state.db: what the writer still has to do.

Owns the `jobs` table and its rules. Producers (the watcher, the scheduler, webhooks)
enqueue from their own threads through their own connection; the one writer takes jobs,
does them, and marks them done. The rules:

- A job is only removed when done, so work acknowledged before a crash is done after
  the restart.
- Enqueueing a job that is already waiting bumps its generation instead of adding a
  twin, and it starts its attempts afresh: it is new work. `done` only removes the
  generation it took, so a change that arrives while its job runs is processed again.
- Of two payloads for one job, the one with the newest version stays (a CMS entry's
  updated_at); without versions, the latest arrival.
- A failed attempt is counted on the generation that failed and the job waits
  `retry_in(attempts)` before it is taken again; once it has used up its attempts,
  `failed` returns it, still queued: the writer records why it failed, then marks it
  done. Nothing acknowledged leaves the queue unrecorded.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from ragd.stores.manifest import Manifest
from ragd.stores.records import format_time, utc_now

JobKind = Literal["scan", "path", "tree", "compact", "entry", "polled"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    key TEXT NOT NULL DEFAULT '',
    generation INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    enqueued_at TEXT NOT NULL,
    payload TEXT,
    version TEXT,
    retry_at REAL,
    UNIQUE (kind, source, key)
);
CREATE TABLE IF NOT EXISTS deliveries (
    source TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (source, delivery_id)
);
"""

_UPSERT = """
INSERT INTO jobs (kind, source, key, payload, version, enqueued_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (kind, source, key) DO UPDATE SET
    generation = generation + 1,
    attempts = 0,
    retry_at = NULL,
    payload = CASE WHEN excluded.version IS NULL OR jobs.version IS NULL
                     OR excluded.version >= jobs.version
                   THEN excluded.payload ELSE jobs.payload END,
    version = CASE WHEN excluded.version IS NULL OR jobs.version IS NULL
                     OR excluded.version >= jobs.version
                   THEN excluded.version ELSE jobs.version END
"""


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of pending work.

    kinds: `scan` (every source, in full), `path` (one file key of a source),
    `tree` (everything under a directory key of a source), `compact` (store housekeeping),
    `entry` (a CMS entry to upsert or delete; `payload` holds the delivery as JSON),
    `polled` (how a poll of `source` ended, to record; `payload` holds it as JSON).
    """

    job_id: int
    kind: JobKind
    source: str
    key: str
    generation: int
    attempts: int
    enqueued_at: str
    payload: str | None = None
    version: str | None = None


class JobQueue:
    """A thread-safe handle on the jobs table (one connection, serialised by a lock)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(jobs)")}
        if "retry_at" not in columns:  # a state.db from before retries waited
            self._conn.execute("ALTER TABLE jobs ADD COLUMN retry_at REAL")
        self._lock = threading.Lock()

    @classmethod
    def beside(cls, manifest: Manifest) -> JobQueue:
        """A queue in the same state.db as the manifest."""
        return cls(manifest.path)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def enqueue(self, kind: JobKind, source: str = "", key: str = "") -> None:
        """Add one job, durably, before returning."""
        self.enqueue_many([(kind, source, key)])

    def enqueue_many(self, jobs: Iterable[tuple[JobKind, str, str]]) -> None:
        """Add jobs in one transaction; a job already waiting gets a new generation."""
        self._enqueue_rows(
            [(kind, source, key, None, None, utc_now()) for kind, source, key in jobs]
        )

    def _enqueue_rows(
        self, rows: Sequence[tuple[str, str, str, str | None, str | None, str]]
    ) -> None:
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(_UPSERT, rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def accept_delivery(
        self,
        source: str,
        delivery_id: str,
        entries: Sequence[tuple[str, str, str | None]],
        *,
        repeat_after: timedelta | None = None,
    ) -> bool:
        """Durably queue a webhook delivery's entries (key, payload, version) as `entry`
        jobs, once per delivery id.

        Returns False (and queues nothing) when this delivery id was already accepted:
        senders retry, and a retry must not become a second job. With `repeat_after`, an
        id seen longer ago than that counts as new: for ids that are a hash of a body
        with no time in it, where the same body later is a new change (A, B, A again).
        """
        now = utc_now()
        fresh_since = (
            None if repeat_after is None else format_time(datetime.now(UTC) - repeat_after)
        )
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT received_at FROM deliveries WHERE source = ? AND delivery_id = ?",
                    (source, delivery_id),
                ).fetchone()
                seen = row is not None and (fresh_since is None or row[0] >= fresh_since)
                if not seen:
                    self._conn.execute(
                        "INSERT INTO deliveries (source, delivery_id, received_at) "
                        "VALUES (?, ?, ?) "
                        "ON CONFLICT DO UPDATE SET received_at = excluded.received_at",
                        (source, delivery_id, now),
                    )
                    self._conn.executemany(
                        _UPSERT,
                        [
                            ("entry", source, key, payload, version, now)
                            for key, payload, version in entries
                        ],
                    )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return not seen

    def enqueue_entries(self, source: str, entries: Sequence[tuple[str, str, str | None]]) -> None:
        """Queue entries a poll found (key, payload, version), in one transaction."""
        now = utc_now()
        rows = [("entry", source, key, payload, version, now) for key, payload, version in entries]
        self._enqueue_rows(rows)

    def enqueue_polled(self, source: str, outcome: str) -> None:
        """Queue how a poll of `source` ended (JSON), for the writer to record after the
        entries the poll queued before it."""
        self._enqueue_rows([("polled", source, "", outcome, None, utc_now())])

    def forget_deliveries(self, older_than: str) -> int:
        """Drop delivery ids received before `older_than` (senders stop retrying by then)."""
        with self._lock:
            return self._conn.execute(
                "DELETE FROM deliveries WHERE received_at < ?", (older_than,)
            ).rowcount

    def oldest_enqueued_at(self) -> str | None:
        """When the oldest waiting job was queued (the index lag starts there)."""
        with self._lock:
            row = self._conn.execute("SELECT MIN(enqueued_at) FROM jobs").fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def take(self, limit: int = 500) -> list[Job]:
        """The oldest jobs that are not waiting for a retry (they stay queued until `done`)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT job_id, kind, source, key, generation, attempts, enqueued_at, payload, "
                "version FROM jobs WHERE retry_at IS NULL OR retry_at <= ? "
                "ORDER BY job_id LIMIT ?",
                (time.time(), limit),
            ).fetchall()
        return [Job(*row) for row in rows]

    def done(self, jobs: Sequence[Job]) -> None:
        """Remove jobs that were done, unless they were re-enqueued meanwhile."""
        with self._lock:
            self._conn.executemany(
                "DELETE FROM jobs WHERE job_id = ? AND generation = ?",
                [(j.job_id, j.generation) for j in jobs],
            )

    def failed(self, job: Job, *, max_attempts: int, retry_in: Callable[[int], float]) -> bool:
        """Count a failed attempt of `job`; True when that used up its `max_attempts`.

        The job stays queued either way: until `retry_in(attempts so far)` seconds have
        passed, or, once its attempts are used up, until the caller has recorded the
        failure and marks it `done`. An attempt of a generation that was re-enqueued
        meanwhile is not counted: the new one is new work."""
        attempts = job.attempts + 1
        with self._lock:
            counted = self._conn.execute(
                "UPDATE jobs SET attempts = ?, retry_at = ? WHERE job_id = ? AND generation = ?",
                (attempts, time.time() + retry_in(attempts), job.job_id, job.generation),
            ).rowcount
        return counted == 1 and attempts >= max_attempts

    def depth(self) -> int:
        """How many jobs are waiting."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])
