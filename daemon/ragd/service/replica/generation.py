"""The read side of a replica: the generation it serves, and moving to a newer one.

Owns which published generation (ragd.stores.publishing) a `ragd serve --reader` answers
from: its local copy (ragd.stores.replica), the read handles over it (a `Readers` whose
runtime points at the copy, its vector tables pinned to the generation's versions, and no
folder sources: a replica has no files to stat), and the swap to a newer one, which
queries never wait for: the new handles are opened before the swap, and the old ones
are closed a refresh later, after the queries that started on them have ended.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ragd.errors import RagdError, StoreError
from ragd.search.context import Context
from ragd.search.parents import ParentHit
from ragd.search.results import QueryRequest, SearchResponse
from ragd.service.logs import get_logger
from ragd.service.readers import Readers
from ragd.service.runtime import Runtime
from ragd.stores.data_dir import DataDir
from ragd.stores.records import parse_time
from ragd.stores.replica import LocalGeneration, Replica

log = get_logger("ragd.replica")


class NotReady(StoreError):
    """No generation has been published (or fetched) yet."""


@dataclass(frozen=True)
class Served:
    """One generation, open for reading."""

    local: LocalGeneration
    runtime: Runtime
    readers: Readers

    @property
    def number(self) -> int:
        return self.local.generation.number


class ServedGeneration:
    """The generation a replica serves, and the refresh that replaces it."""

    def __init__(self, runtime: Runtime, replica: Replica) -> None:
        self.runtime = runtime
        self.replica = replica
        self._current: Served | None = None
        self._retired: Served | None = None
        self._lock = threading.Lock()
        self.latest_seen: int | None = None
        self.last_checked_at: datetime | None = None
        self.last_error: str | None = None
        # When this replica first saw a generation newer than the one it serves: its lag
        # behind the writer runs from then (None while it serves the newest it has seen).
        self._behind_since: datetime | None = None

    def current(self) -> Served:
        """The generation being served; NotReady before the first."""
        served = self._current
        if served is None:
            raise NotReady(
                "no generation to serve yet: the writer has not published one",
                hint="run `ragd index` or `ragd serve` with the same [storage] uri",
            )
        return served

    def refresh(self) -> bool:
        """Serve the newest published generation if it is newer; True if it moved. A
        failure (the store unreachable, a generation pruned mid-download) is logged and
        leaves the current generation served."""
        try:
            latest = self.replica.latest()
            self.last_checked_at = now = datetime.now(UTC)
            self.latest_seen = latest
            served = self._current
            if latest is None or (served is not None and latest <= served.number):
                self.last_error = None
                self._behind_since = None
                return False
            if self._behind_since is None:
                self._behind_since = now
            fresh = self._open(self.replica.fetch(latest))
        except RagdError as exc:
            self.last_error = str(exc)
            log.warning("replica_refresh_failed", error=str(exc))
            return False
        self.last_error = None
        with self._lock:
            retired, self._retired = self._retired, self._current
            self._current = fresh
        self._behind_since = None
        if retired is not None:
            retired.readers.close()
        keep = {s.number for s in (self._current, self._retired) if s is not None}
        self.replica.prune(keep)
        log.info("replica_generation", generation=fresh.number)
        return True

    def _open(self, local: LocalGeneration) -> Served:
        generation = local.generation
        runtime = replace(
            self.runtime,
            data_dir=DataDir(local.root, self.runtime.config.storage.uri),
            folders=(),
            pinned=dict(generation.vector_versions),
        )
        return Served(local, runtime, Readers(runtime))

    def close(self) -> None:
        """Close every handle."""
        with self._lock:
            for served in (self._current, self._retired):
                if served is not None:
                    served.readers.close()
            self._current = self._retired = None

    # -- what the HTTP API and /mcp read through ----------------------------------------

    def search(self, request: QueryRequest) -> SearchResponse:
        return self.current().readers.search(request)

    def context(self, request: QueryRequest, max_chars: int) -> Context:
        return self.current().readers.context(request, max_chars)

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        return self.current().readers.section(chunk_id, max_chars)

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        return self.current().readers.document(doc_id, max_chars)

    def lag_seconds(self, now: datetime) -> float:
        """How long this replica has known of a newer generation than the one it serves
        (0 while it serves the newest it has seen; it looks every refresh_interval)."""
        since = self._behind_since
        return 0.0 if since is None else max((now - since).total_seconds(), 0.0)

    def describe(self, now: datetime) -> dict[str, object]:
        """The replica's section of the status report: what it serves and how far behind."""
        served = self._current
        published = None if served is None else served.local.generation.published_at
        return {
            "generation": None if served is None else served.number,
            "published_at": published,
            "generation_age_seconds": None
            if published is None
            else round(max((now - parse_time(published)).total_seconds(), 0.0), 3),
            "lag_seconds": round(self.lag_seconds(now), 3),
            "latest_generation": self.latest_seen,
            "behind": 0
            if served is None or self.latest_seen is None
            else max(self.latest_seen - served.number, 0),
            "last_checked_at": None
            if self.last_checked_at is None
            else self.last_checked_at.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "last_error": self.last_error,
            "staleness": "as of the generation: source_changed is not checked on a replica",
        }
