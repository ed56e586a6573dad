"""Write batches: how a pass's decided documents reach the stores, in crash-safe order.

Owns the queue of documents a pass has decided on, when it is written, and the order of
every write, which a crash at any point can recover from:

1. record intent in the manifest (documents -> pending / deleted, writer unclean);
2. replace the documents' chunks in LanceDB (one commit) and in Tantivy (one commit);
3. commit the new chunk rows and document states in the manifest.

A crash between 1 and 3 leaves documents pending and maybe orphan chunks; the next
writer reconciles (removes orphans) and redoes pending documents. Also owns which chunk
texts reach the model: a vector cached under the chunk's embedding key, or one a worker
already computed (it travels on the chunk), is used instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragd.embedding import Embedder
from ragd.errors import RagdError
from ragd.indexing.pipeline import PreparedChunk, PreparedWrite
from ragd.stores.data_dir import WriterStores
from ragd.stores.keywords import KeywordRow
from ragd.stores.records import DocId, DocumentRecord
from ragd.stores.vectors import VectorRow

# A pass writes its first batch soon (its first documents become searchable) and then ever
# bigger ones: each write has a fixed cost (a Tantivy commit and segment, a LanceDB version,
# three SQLite commits), and a big batch also halves Tantivy's segment merges.
MAX_BATCH_DOCUMENTS = 8192


@dataclass(frozen=True, slots=True)
class DocumentEvent:
    """What happened to one document, for the caller's logs.

    action is `indexed`, `failed`, `deleted` or `unchanged` (read and hashed, same bytes).
    """

    action: str
    doc_id: str
    chunks: int = 0
    reason: str | None = None
    seconds: float = 0.0


EventFn = Callable[[DocumentEvent], None]


@dataclass
class WriteCounts:
    """Chunks a pass's writes embedded, took from the cache, and removed; and chunks whose
    second-stage vector was taken from the cache (the rest wait for ragd.indexing.second_stage)."""

    embedded: int = 0
    reused: int = 0
    chunks_deleted: int = 0
    second_reused: int = 0


# Slots, and no empty frozenset: a batch holds up to 8,192 of these for seconds, and each
# object it holds is one more for every full collection of the cycle collector to walk.
@dataclass(slots=True)
class _Pending:
    """A document decision waiting in the batch: its manifest write and its new chunks."""

    write: PreparedWrite
    touches_stores: bool
    # The manifest had no row for it, so the stores hold nothing of it: every store write
    # is preceded by the manifest row that names it (mark_pending), and a data_dir whose
    # manifest went missing is reconciled before its first pass (WriterStores).
    new: bool
    old_chunk_ids: frozenset[str] | None  # None: it had no chunks
    started: float
    # What the search stores hold of it, as the manifest lists it: its chunks when it was
    # settled (or new); None when a write of it was under way, which may have left rows
    # the manifest does not list.
    held: frozenset[str] | None = None


class BatchWriter:
    """Queues one pass's document writes and writes them in batches, in the order above.

    A batch is written when it holds `batch_chunks` chunks or its document limit, which
    starts at `first_batch` and doubles per write up to MAX_BATCH_DOCUMENTS. Once the
    caller says how many documents are coming (`expect`), a batch is also written when it
    holds as many as are still to come: the batches halve toward the end of the pass.
    """

    def __init__(
        self,
        stores: WriterStores,
        embedder: Embedder,
        *,
        batch_chunks: int,
        first_batch: int,
        checked_at: str,
        on_event: EventFn | None = None,
    ) -> None:
        self.stores = stores
        self.manifest = stores.manifest
        self.embedder = embedder
        self.batch_chunks = batch_chunks
        self.on_event = on_event
        self.checked_at = checked_at  # when the pass began (Manifest.commit)
        self.counts = WriteCounts()
        self.wrote = False  # a batch was committed (so cached vectors may be orphaned)
        self._first = first_batch
        self._limit = first_batch
        self._expected = 0  # documents still to come in this pass, when the caller said
        self._queue: list[_Pending] = []
        self._queued_chunks = 0

    def expect(self, documents: int) -> None:
        """`documents` more will be added in this pass: batches then shrink toward its end,
        so the write left after the last document arrives is small."""
        # The workers finish before this process does; what it writes after that, it
        # writes alone, with the other core idle: the smaller that last write, the better.
        self._expected = documents

    def add(
        self, write: PreparedWrite, record: DocumentRecord | None, started: float | None = None
    ) -> None:
        """Queue `write` (replacing the document `record`); write the batch once it is full."""
        had_chunks = record is not None and record.chunk_count > 0
        unsettled = record is not None and record.status in ("pending", "deleted")
        old_ids = (
            frozenset(c.chunk_id for c in self.manifest.chunks_of(record.doc_id))
            if had_chunks and record is not None
            else None
        )
        self._queue.append(
            _Pending(
                write,
                bool(write.chunks) or had_chunks or unsettled,
                record is None,
                old_ids,
                time.monotonic() if started is None else started,
                None if unsettled else old_ids or frozenset(),
            )
        )
        self._queued_chunks += len(write.chunks)
        self._expected = max(0, self._expected - 1)
        queued = len(self._queue)
        if (
            self._queued_chunks >= self.batch_chunks
            or queued >= self._limit
            or (self._expected and queued >= max(self._first, self._expected))
        ):
            self.flush()

    def flush(self) -> None:
        """Write what is queued: intent, LanceDB, Tantivy, then the manifest commit."""
        batch, self._queue, self._queued_chunks = self._queue, [], 0
        if not batch:
            return
        self._limit = max(self._limit, min(2 * self._limit, MAX_BATCH_DOCUMENTS))
        self.wrote = True
        vectors = self._vectors_for(batch)
        touching = [p for p in batch if p.touches_stores]
        if touching:
            self.manifest.mark_pending(
                [
                    (
                        p.write.doc_id,
                        p.write.source,
                        p.write.key,
                        p.write.uri,
                        "deleted" if p.write.status == "deleted" else "pending",
                    )
                    for p in touching
                ]
            )
            doc_ids = [p.write.doc_id for p in touching]
            new = [p.write.doc_id for p in touching if p.new]
            held = _held_chunks(touching)
            rows = [c for p in touching for c in p.write.chunks]
            self.stores.vectors(self.embedder.dim).replace_documents(
                doc_ids,
                [VectorRow(c.chunk_id, c.doc_id, vectors[c.embed_key]) for c in rows],
                new=new,
                held=held,
            )
            self.stores.keywords().replace_documents(
                doc_ids,
                [
                    KeywordRow(c.chunk_id, c.doc_id, c.embed_text, c.identifiers, p.write.title)
                    for p in touching
                    for c in p.write.chunks
                ],
                new=new,
            )
            # A document new to the manifest may have left second-stage rows (see below):
            # those are deleted with every other row of their documents.
            self._write_second_stage(
                doc_ids, [c for p in touching for c in p.write.chunks], None if new else held
            )
        self.manifest.commit([p.write for p in batch], checked_at=self.checked_at)
        committed = time.monotonic()
        for p in batch:
            if p.old_chunk_ids is not None:
                new_ids = {c.chunk_id for c in p.write.chunks}
                self.counts.chunks_deleted += len(p.old_chunk_ids - new_ids)
            if self.on_event is not None:
                self.on_event(
                    DocumentEvent(
                        p.write.status,
                        p.write.doc_id,
                        chunks=len(p.write.chunks),
                        reason=p.write.error,
                        seconds=committed - p.started,
                    )
                )

    def _write_second_stage(
        self,
        doc_ids: list[DocId],
        chunks: list[PreparedChunk],
        held: dict[str, frozenset[str]] | None,
    ) -> None:
        """Make the second stage's rows of these documents those of their chunks whose
        second-stage vector is stored already (an unchanged section's, a renamed file's);
        the others get theirs when ragd.indexing.second_stage embeds them. Always an
        upsert: a document new to the manifest may have left rows from before (written
        while the second stage was off, or by a fill that crashed)."""
        keys = {c.second_key for c in chunks if c.second_key is not None}
        cached = self.manifest.cached_vectors(keys) if keys else {}
        # The width from a stored vector: creating the table needs no model loaded.
        dim = len(next(iter(cached.values()))) if cached else None
        table = self.stores.second_vectors(dim)
        if table is None:
            return  # off, or no table yet and nothing to put in one
        rows = [
            VectorRow(c.chunk_id, c.doc_id, cached[c.second_key])
            for c in chunks
            if c.second_key is not None and c.second_key in cached
        ]
        table.replace_documents(doc_ids, rows, held=held)
        self.counts.second_reused += len(rows)

    def _vectors_for(self, batch: list[_Pending]) -> dict[str, np.ndarray]:
        """A vector per embed key of the batch: cached, embedded by a worker, or now."""
        texts: dict[str, str] = {}
        given: dict[str, np.ndarray] = {}
        total = 0
        for p in batch:
            for c in p.write.chunks:
                texts.setdefault(c.embed_key, c.embed_text)
                if c.vector is not None:
                    given[c.embed_key] = c.vector
                total += 1
        if not texts:
            return {}
        if given:
            _check_vectors(np.array(list(given.values())), len(given), self.embedder.dim)
        vectors: dict[str, np.ndarray] = dict(self.manifest.cached_vectors(texts.keys()))
        missing = [k for k in texts if k not in vectors]
        if missing:
            new = {k: given[k] for k in missing if k in given}
            if unembedded := [k for k in missing if k not in new]:
                fresh = self.embedder.embed([texts[k] for k in unembedded])
                _check_vectors(fresh, len(unembedded), self.embedder.dim)
                new.update((k, fresh[i]) for i, k in enumerate(unembedded))
            self.manifest.store_vectors(new)
            vectors.update(new)
        self.counts.embedded += len(missing)
        self.counts.reused += total - len(missing)
        return vectors


def _check_vectors(matrix: np.ndarray, rows: int, dim: int) -> None:
    """A model that returns the wrong shape or NaNs must not poison the index."""
    if matrix.shape != (rows, dim) or not np.isfinite(matrix).all():
        raise RagdError(
            f"the embedding model returned unusable vectors (shape {matrix.shape}, "
            f"expected ({rows}, {dim}), or non-finite values)"
        )


def _held_chunks(pending: Sequence[_Pending]) -> dict[str, frozenset[str]] | None:
    """Each document's chunk ids the search stores hold, when known for every one of them
    (`VectorStore.replace_documents`'s `held`); else None."""
    held: dict[str, frozenset[str]] = {}
    for p in pending:
        if p.held is None:
            return None
        held[p.write.doc_id] = p.held
    return held
