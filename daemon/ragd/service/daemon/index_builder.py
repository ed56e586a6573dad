"""Building vector indexes off the writer: the daemon's edits never wait for one.

An IVF_SQ index over a million rows takes ~22 s to build, once each time the table
doubles (`ragd.stores.vectors.INDEX_REGROWTH`). Built by the writer, that is 22 s in which
no edit is searchable. So the writer only asks (`request`), and this thread builds the
index on a table handle of its own while the writer goes on committing: LanceDB commits
an index beside appends, upserts and deletes made meanwhile, and rows written after the
build began are searched exactly until a compaction folds them in. A compaction rewrites
files an index build reads, so the writer compacts only while no build runs
(`exclusive`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from queue import Empty, Queue

from ragd.adapters.lancedb import VectorLocation
from ragd.service.logs import get_logger
from ragd.stores.vectors import VectorStore

log = get_logger("ragd.service.index_builder")

# How often the thread looks at its stop event while nothing is asked of it.
POLL_SECONDS = 1.0


class IndexBuilder(threading.Thread):
    """Builds the vector index of each table the writer asks for, one at a time."""

    def __init__(self, directory: VectorLocation, stop: threading.Event) -> None:
        super().__init__(name="ragd-vector-index", daemon=True)
        self.directory = directory
        self.stop = stop
        self.built = 0
        self._asked: Queue[tuple[str, int]] = Queue()
        self._pending: set[str] = set()
        self._building = threading.Lock()

    def request(self, vectors: VectorStore) -> None:
        """Build `vectors`' index in the background if it is due (a check of the table's
        size; the writer's call costs milliseconds)."""
        dim = vectors.dim
        if dim is None or vectors.name in self._pending or not vectors.vector_index_due():
            return
        self._pending.add(vectors.name)
        self._asked.put((vectors.name, dim))

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off builds while the caller compacts (it waits for one under way)."""
        with self._building:
            yield

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                name, dim = self._asked.get(timeout=POLL_SECONDS)
            except Empty:
                continue
            try:
                with self._building:
                    self._build(name, dim)
            except Exception as exc:  # asked again after the writer's next write
                log.exception("vector_index_failed", table=name, error=str(exc))
            finally:
                self._pending.discard(name)

    def _build(self, name: str, dim: int) -> None:
        started = time.monotonic()
        table = VectorStore.open(self.directory, dim, name=name)
        if table.ensure_vector_index():
            self.built += 1
            log.info(
                "vector_index_built",
                table=name,
                rows=table.count(),
                seconds=round(time.monotonic() - started, 3),
            )
