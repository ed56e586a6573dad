"""The daemon's side of publishing for read replicas (ragd.stores.publishing).

Owns when `ragd serve` publishes a generation: once a commit, a compaction or
second-stage vectors have changed what replicas would read, on the writer's thread
between commits (so the stores it copies agree), not before the first full pass has
repaired whatever a crash left, and not more often than replicas look for one
([storage] refresh_interval): a burst of edits makes one generation, not one each. A
publish that fails (the object store down) is logged, counted and tried again
PUBLISH_RETRY_SECONDS later; the daemon goes on. It also keeps the writer's LanceDB
cleanups off the versions published generations name, and says what it last did for
/v1/status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from ragd.service.logs import get_logger
from ragd.stores.data_dir import WriterStores
from ragd.stores.publishing import Publisher
from ragd.stores.records import format_time

log = get_logger("ragd.service")

# A publish that failed (the object store is down) is tried again this long after.
PUBLISH_RETRY_SECONDS = 5.0


class Publishing:
    """Publishes generations for the daemon's writer; `publisher` None does nothing."""

    def __init__(
        self,
        publisher: Publisher | None,
        stores: WriterStores,
        dim: int,
        *,
        ready: Callable[[], bool],
        min_interval: float = 0.0,
    ) -> None:
        self.publisher = publisher
        # Replicas look for a new generation this often: publishing more often (a burst
        # of edits) would upload snapshots no replica reads.
        self._min_interval = min_interval
        self._stores = stores
        self._dim = dim
        self._ready = ready  # the first full pass is done
        self._due = publisher is not None  # the start-up state, once repaired
        self._not_before = 0.0
        self.published_at: str | None = None
        self.failures = 0
        self.last_error: str | None = None
        self._keep_published()

    def changed(self) -> None:
        """What replicas read has changed: publish when the writer is next between commits."""
        self._due = self.publisher is not None

    def between_commits(self) -> None:
        """Publish a generation if one is due (called on the writer's thread)."""
        publisher = self.publisher
        if (
            publisher is None
            or not self._due
            or not self._ready()
            or time.monotonic() < self._not_before
        ):
            return
        started = time.perf_counter()
        try:
            generation = publisher.publish(self._stores.vector_versions(self._dim))
        except Exception as exc:  # the object store is down, or refuses a write
            self.failures += 1
            self.last_error = str(exc)
            self._not_before = time.monotonic() + PUBLISH_RETRY_SECONDS
            log.warning("publish_failed", error=str(exc), retry_in=PUBLISH_RETRY_SECONDS)
            return
        self._due = False
        self.last_error = None
        self.published_at = format_time(datetime.now(UTC))
        self._not_before = time.monotonic() + self._min_interval
        self._keep_published()
        log.info(
            "published",
            generation=generation.number,
            seconds=round(time.perf_counter() - started, 3),
        )

    def _keep_published(self) -> None:
        """Cleanups keep the vector versions of the generations replicas may read."""
        if self.publisher is not None:
            self._stores.keep_published(self.publisher.oldest_versions(), self._dim)

    def to_json(self) -> dict[str, object] | None:
        """The daemon's publishing for /v1/status; None with the stores on local disk."""
        if self.publisher is None:
            return None
        return {
            "storage_uri": self.publisher.store.location.uri,
            "generation": self.publisher.last or None,
            "published_at": self.published_at,
            "due": self._due,
            "failures": self.failures,
            "last_error": self.last_error,
        }
