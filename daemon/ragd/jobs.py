"""The durable work queue in state.db: what the writer still has to do.

Owns the `jobs` table. Producers (the watcher, the scheduler, webhooks) enqueue from
their own threads through their own connection; the one writer takes jobs, does them,
and marks them done. A job is only removed when done, so work acknowledged before a
crash is done after the restart. Enqueueing a job that is already waiting bumps its
generation instead of adding a twin; `done` only removes the generation it took, so a
change that arrives while its job is being processed is processed again.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragd.manifest import Manifest, utc_now

JobKind = Literal["scan", "path", "tree", "compact"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    key TEXT NOT NULL DEFAULT '',
    generation INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    enqueued_at TEXT NOT NULL,
    UNIQUE (kind, source, key)
);
"""


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of pending work.

    kinds: `scan` (every source, in full), `path` (one file key of a source),
    `tree` (everything under a directory key of a source), `compact` (store housekeeping).
    """

    job_id: int
    kind: JobKind
    source: str
    key: str
    generation: int
    attempts: int
    enqueued_at: str


class JobQueue:
    """A thread-safe handle on the jobs table (one connection, serialised by a lock)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)
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
        rows = [(kind, source, key, utc_now()) for kind, source, key in jobs]
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT INTO jobs (kind, source, key, enqueued_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (kind, source, key) DO UPDATE SET generation = generation + 1",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def take(self, limit: int = 500) -> list[Job]:
        """The oldest waiting jobs (they stay queued until `done`)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT job_id, kind, source, key, generation, attempts, enqueued_at FROM jobs "
                "ORDER BY job_id LIMIT ?",
                (limit,),
            ).fetchall()
        return [Job(*row) for row in rows]

    def done(self, jobs: Sequence[Job]) -> None:
        """Remove jobs that were done, unless they were re-enqueued meanwhile."""
        with self._lock:
            self._conn.executemany(
                "DELETE FROM jobs WHERE job_id = ? AND generation = ?",
                [(j.job_id, j.generation) for j in jobs],
            )

    def failed(self, jobs: Sequence[Job], *, max_attempts: int) -> list[Job]:
        """Count a failed attempt; drop and return the jobs that used up their attempts."""
        dropped = [j for j in jobs if j.attempts + 1 >= max_attempts]
        with self._lock:
            self._conn.executemany(
                "UPDATE jobs SET attempts = attempts + 1 WHERE job_id = ?",
                [(j.job_id,) for j in jobs],
            )
            self._conn.executemany(
                "DELETE FROM jobs WHERE job_id = ?", [(j.job_id,) for j in dropped]
            )
        return dropped

    def depth(self) -> int:
        """How many jobs are waiting."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])

    def pending_keys(self, source: str) -> set[str]:
        """File keys of a source with a change waiting (for the `pending` stale reason)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key FROM jobs WHERE kind = 'path' AND source = ?", (source,)
            )
            return {r[0] for r in rows}
