"""One indexing pass's bookkeeping: what it has decided so far, and finishing it.

Owns the state a pass builds up and nothing that outlives it: its report, the documents
it has decided (a watcher hint may name one twice), the unchanged ones it will confirm,
and the BatchWriter its writes go through. `ragd.indexing.indexer` starts one per full pass,
watcher hint or webhook batch and makes the decisions; finishing flushes the writes,
confirms what was found unchanged and marks the stores clean.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Protocol

from ragd.indexing.batches import BatchWriter
from ragd.indexing.pipeline import PreparedWrite
from ragd.indexing.report import IndexReport
from ragd.stores.records import DocumentRecord, DocumentWrite
from ragd.stores.vectors import VectorStore


class IndexingPass:
    """The running state of one pass; a new one per pass."""

    def __init__(
        self,
        batches: BatchWriter,
        *,
        stop: Callable[[], bool] | None,
        cleanup_older_than: timedelta,
        builds: IndexBuilds | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.batches = batches  # for this pass alone: it writes with this pass's checked_at
        self.checked_at = batches.checked_at
        self.report = IndexReport()
        self._stop = stop
        self._cleanup_older_than = cleanup_older_than  # LanceDB versions kept for readers
        self._builds = builds  # who builds vector indexes, when not this pass
        self._seen: set[str] = set()
        # Documents whose included files changed (ragd.sources.includes): parsed again
        # even when their own bytes are the same.
        self.includes_changed: set[str] = set()
        self._confirmed: list[tuple[str, int, int]] = []

    def stopping(self) -> bool:
        """True once the pass was asked to stop; its report then says it was interrupted."""
        if self._stop is not None and self._stop():
            self.report.interrupted = True
        return self.report.interrupted

    def first_time(self, doc_id: str) -> bool:
        """True the first time this pass decides a document, False after."""
        if doc_id in self._seen:
            return False
        self._seen.add(doc_id)
        return True

    def count(self, kind: str) -> None:
        """Count one more document of a kind the report counts (added, changed, failed)."""
        setattr(self.report, kind, getattr(self.report, kind) + 1)

    def unchanged(self, doc_id: str, size: int, mtime_ns: int) -> None:
        """Count a document found unchanged and confirm it at this stat when finishing."""
        self.report.unchanged += 1
        self._confirmed.append((doc_id, size, mtime_ns))

    def confirm(self, stats: Iterable[tuple[str, int, int]]) -> None:
        """Confirm documents at these stats, already counted: (doc_id, size, mtime_ns)."""
        self._confirmed.extend(stats)

    def delete(self, record: DocumentRecord) -> None:
        """Remove a document from every store, once."""
        if not self.first_time(record.doc_id):
            return
        self.report.deleted += 1
        write: PreparedWrite = DocumentWrite(
            record.doc_id, record.source, record.key, record.uri, "deleted"
        )
        self.batches.add(write, record)

    def finish(self) -> IndexReport:
        """Write what is batched, confirm the unchanged, mark the stores clean; the report."""
        self.batches.flush()
        counts = self.batches.counts
        self.report.embedded = counts.embedded
        self.report.reused = counts.reused
        self.report.chunks_deleted = counts.chunks_deleted
        self.report.second_reused = counts.second_reused
        stores = self.batches.stores
        stores.manifest.confirm_unchanged(self._confirmed, checked_at=self.checked_at)
        self._confirmed.clear()
        stores.manifest.mark_clean()
        if self.batches.wrote:
            vectors = stores.vectors(self.batches.embedder.dim)
            settle_vectors(vectors, self._cleanup_older_than, self._builds)
            if (second := stores.second_vectors()) is not None:
                settle_vectors(second, self._cleanup_older_than, self._builds)
        self.report.seconds = time.monotonic() - self.started
        return self.report


class IndexBuilds(Protocol):
    """Who builds vector indexes when they are not built in line (the daemon's thread)."""

    def request(self, vectors: VectorStore) -> None:
        """Build `vectors`' index if it is due, later."""
        ...

    def exclusive(self) -> AbstractContextManager[None]:
        """Hold off builds while the caller compacts."""
        ...


def settle_vectors(
    vectors: VectorStore, cleanup_older_than: timedelta, builds: IndexBuilds | None = None
) -> None:
    """After writes: compact the vector table once commits left it fragmented, else build
    its index once it is big enough (by `builds`, when given)."""
    if vectors.needs_compaction():
        compact_vectors(vectors, cleanup_older_than, builds)
    elif builds is not None:
        builds.request(vectors)
    else:
        vectors.ensure_vector_index()


def compact_vectors(
    vectors: VectorStore, cleanup_older_than: timedelta, builds: IndexBuilds | None = None
) -> None:
    """Compact the vector table, keeping versions younger than `cleanup_older_than` for
    readers, then build its index if due (by `builds`, when given)."""
    if builds is None:
        vectors.optimize(cleanup_older_than)
        return
    with builds.exclusive():
        vectors.compact(cleanup_older_than)
    builds.request(vectors)
