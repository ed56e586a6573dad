"""The manifest: SQLite state that is the source of truth for what is indexed.

Owns every read and write of `state.db` (its layout is `ragd.manifest_schema`): documents
(identity, the stat and hash of what was indexed, the pipeline fingerprint, status), chunks
(ids, heading paths, texts) and the embedding cache that lets unchanged chunk texts skip
the model.
LanceDB and Tantivy are derived from what this file lists; when they disagree, this wins.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path

import numpy as np

from ragd.errors import StoreError
from ragd.manifest_schema import (
    SELECT_DOCUMENTS,
    STAT_VOUCHES_SQL,
    UPSERT_DOCUMENT_FIELDS,
    UPSERT_DOCUMENT_SQL,
    connect_reader,
    connect_writer,
    vouch_before_sql,
)
from ragd.records import (
    ChunkRecord,
    DocumentRecord,
    DocumentWrite,
    FileState,
    Vector,
    listing_digest,
    utc_now,
)


class Manifest:
    """A connection to state.db; one writer process, any number of read-only readers."""

    def __init__(self, conn: sqlite3.Connection, path: Path, *, writable: bool) -> None:
        self._conn = conn
        self.path = path
        self.writable = writable

    @classmethod
    def open(cls, path: Path) -> Manifest:
        """Open (creating if needed) for writing: WAL, synchronous=FULL."""
        return cls(connect_writer(path), path, writable=True)

    @classmethod
    def open_readonly(cls, path: Path) -> Manifest:
        """Open for reading only; StoreError when no index exists yet."""
        return cls(connect_reader(path), path, writable=False)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the meta table."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the meta table."""
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- documents ------------------------------------------------------------------------

    def documents(self, source: str | None = None) -> list[DocumentRecord]:
        """Every document row (of one source, if given), with its chunk count."""
        sql, args = SELECT_DOCUMENTS, ()  # type: tuple[str, tuple[str, ...]]
        if source is not None:
            sql, args = sql + " WHERE d.source = ?", (source,)
        return [
            DocumentRecord(*row) for row in self._conn.execute(sql + " ORDER BY d.doc_id", args)
        ]

    def documents_under(self, source: str, prefix: str) -> list[DocumentRecord]:
        """Documents of a source whose key lies under directory key `prefix`."""
        low = prefix.rstrip("/") + "/"
        high = low[:-1] + chr(ord("/") + 1)  # every key starting with "prefix/" sorts below
        rows = self._conn.execute(
            SELECT_DOCUMENTS + " WHERE d.source = ? AND d.key >= ? AND d.key < ? ORDER BY d.key",
            (source, low, high),
        )
        return [DocumentRecord(*row) for row in rows]

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document row, or None."""
        row = self._conn.execute(SELECT_DOCUMENTS + " WHERE d.doc_id = ?", (doc_id,)).fetchone()
        return None if row is None else DocumentRecord(*row)

    def file_states(self, source: str, fingerprint: str) -> dict[str, FileState]:
        """Per key of a source: (key, size, mtime_ns) as last indexed, or (key, None, None)
        when the document is not settled (indexed or failed) under `fingerprint`.

        A listed file whose FileStat equals its state is unchanged: one comparison per
        file, no records. A table scan, not the (source, key) index: it reads every row
        anyway, in page order.
        """
        (oldest,) = self._conn.execute(
            f"SELECT {vouch_before_sql('MIN(checked_at)')} "
            "FROM documents NOT INDEXED WHERE source = ?",
            (source,),
        ).fetchone()
        rows = self._conn.execute(
            f"SELECT key, CASE WHEN {STAT_VOUCHES_SQL} THEN size END, "
            f"CASE WHEN {STAT_VOUCHES_SQL} THEN mtime_ns END "
            "FROM documents NOT INDEXED WHERE source = ?2",
            (fingerprint, source, oldest if oldest is not None else 0),
        )
        return {row[0]: row for row in rows}

    def listing_digest(self, source: str, fingerprint: str) -> str | None:
        """The digest of the listing in which every document of `source` is unchanged under
        `fingerprint` (ragd.records.listing_digest), if one is known."""
        row = self._conn.execute(
            "SELECT digest FROM listing_digests WHERE source = ? AND fingerprint = ?",
            (source, fingerprint),
        ).fetchone()
        return None if row is None else str(row[0])

    def remember_listing(self, source: str, fingerprint: str) -> bool:
        """Record the digest of the listing in which every document of `source` is unchanged,
        from the documents' own states; True when every stat vouched and it was recorded.

        Any later change to a document of the source forgets it (a trigger does).
        """
        with self._transaction() as conn:
            states = sorted(self.file_states(source, fingerprint).values(), key=itemgetter(0))
            vouched = [(k, n, t) for k, n, t in states if n is not None and t is not None]
            conn.execute("DELETE FROM listing_digests WHERE source = ?", (source,))
            if len(vouched) < len(states):
                return False
            conn.execute(
                "INSERT INTO listing_digests (source, fingerprint, digest) VALUES (?, ?, ?)",
                (source, fingerprint, listing_digest(vouched)),
            )
        return True

    def indexed_count(self, source: str) -> int:
        """How many documents of a source are indexed."""
        row = self._conn.execute(
            "SELECT COUNT(*) FROM documents WHERE source = ? AND status = 'indexed'", (source,)
        ).fetchone()
        return int(row[0])

    def source_counts(self) -> dict[str, tuple[int, int]]:
        """Per source: (live documents, chunks), counted in SQL for cheap scrapes."""
        counts = {
            source: (documents, 0)
            for source, documents in self._conn.execute(
                "SELECT source, COUNT(*) FROM documents WHERE status != 'deleted' GROUP BY source"
            )
        }
        for source, chunks in self._conn.execute(
            "SELECT d.source, COUNT(*) FROM chunks c JOIN documents d USING (doc_id) "
            "GROUP BY d.source"
        ):
            counts[source] = (counts.get(source, (0, 0))[0], chunks)
        return counts

    def sources(self) -> list[str]:
        """Names of every source with documents in the manifest."""
        return [r[0] for r in self._conn.execute("SELECT DISTINCT source FROM documents")]

    def mark_pending(self, docs: Iterable[tuple[str, str, str, str, str]]) -> None:
        """Record intent before the stores are written: (doc_id, source, key, uri, status).

        status is `pending` for a document about to be (re)written, `deleted` for one
        about to leave the stores.

        Also marks the writer unclean, so a crash before `commit` triggers reconciliation.
        """
        now = utc_now()
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('writer_clean', '0') "
                "ON CONFLICT (key) DO UPDATE SET value = '0'"
            )
            conn.executemany(
                "INSERT INTO documents (doc_id, source, key, uri, status, first_seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (doc_id) DO UPDATE SET status = excluded.status",
                [(d, s, k, u, status, now) for d, s, k, u, status in docs],
            )

    def commit(self, writes: Sequence[DocumentWrite], *, checked_at: str) -> None:
        """Make the stores' new state official: replace chunk rows and settle each document.

        `checked_at` is when the pass that read them began. Each document at most once per
        call (ValueError otherwise). One statement per kind
        of row for the whole batch, not four per document: a full tldr index spent 1.9 s
        here, 0.6 s of it in Python's per-statement overhead.
        """
        doc_ids = [(w.doc_id,) for w in writes]
        if len(set(doc_ids)) != len(doc_ids):
            raise ValueError("a document can be committed once per call")
        now = utc_now()
        kept = [w for w in writes if w.status != "deleted"]
        with self._transaction() as conn:
            conn.executemany("DELETE FROM chunks WHERE doc_id = ?", doc_ids)
            conn.executemany(
                "INSERT INTO entry_versions (doc_id, version) VALUES (?, ?) "
                "ON CONFLICT (doc_id) DO UPDATE SET version = excluded.version",
                [(w.doc_id, w.entry_version) for w in writes if w.entry_version is not None],
            )
            conn.executemany(
                "DELETE FROM documents WHERE doc_id = ?",
                [(w.doc_id,) for w in writes if w.status == "deleted"],
            )
            conn.executemany(
                UPSERT_DOCUMENT_SQL,
                [(*UPSERT_DOCUMENT_FIELDS(w), now, checked_at) for w in kept],
            )
            conn.executemany(
                "INSERT INTO chunks (chunk_id, doc_id, ordinal, heading_path, text, embed_key) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [_chunk_row(c) for w in kept for c in w.chunks],
            )

    def confirm_unchanged(
        self, updates: Sequence[tuple[str, int, int]], *, checked_at: str
    ) -> None:
        """Record that documents were checked and found unchanged: (doc_id, size, mtime_ns),
        by the pass that began at `checked_at`."""
        if not updates:
            return
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE documents SET size = ?, mtime_ns = ?, checked_at = ? WHERE doc_id = ?",
                [(size, mtime, checked_at, doc_id) for doc_id, size, mtime in updates],
            )

    def confirm_sources(self, sources: Collection[str], *, checked_at: str) -> None:
        """Record that the pass that began at `checked_at` checked every document of these
        sources.

        Only a complete pass may say so: one that listed the whole root, was not
        interrupted, and committed what it found changed.
        """
        if not sources:
            return
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(f"checked:{name}", checked_at) for name in sources],
            )

    def mark_clean(self) -> None:
        """Record that the last writer finished with the stores in agreement."""
        self.set_meta("writer_clean", "1")

    def is_clean(self) -> bool:
        """False when a writer may have stopped between writing a store and committing here."""
        return self.get_meta("writer_clean") != "0"

    def mark_for_redo(self, doc_ids: Collection[str]) -> None:
        """Send indexed documents back to pending, e.g. when a store lost their chunks."""
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE documents SET status = 'pending' WHERE doc_id = ? AND status = 'indexed'",
                [(d,) for d in doc_ids],
            )

    def entry_version(self, doc_id: str) -> str | None:
        """The version (updated_at) of the last applied delivery for a CMS entry."""
        row = self._conn.execute(
            "SELECT version FROM entry_versions WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def pending_doc_ids(self) -> set[str]:
        """Documents with a queued change not yet applied (read from the jobs table)."""
        try:
            rows = self._conn.execute(
                "SELECT source, key FROM jobs WHERE kind IN ('path', 'entry')"
            ).fetchall()
        except sqlite3.OperationalError:
            return set()  # no daemon has ever queued work here
        return {f"{source}:{key}" for source, key in rows}

    def queued_jobs(self) -> tuple[dict[str, int], str | None]:
        """Waiting jobs per source ('' for whole-index jobs) and when the oldest was queued."""
        try:
            per_source = dict(
                self._conn.execute("SELECT source, COUNT(*) FROM jobs GROUP BY source").fetchall()
            )
            oldest = self._conn.execute("SELECT MIN(enqueued_at) FROM jobs").fetchone()[0]
        except sqlite3.OperationalError:
            return {}, None
        return per_source, oldest

    def last_full_scan_at(self) -> str | None:
        """When the last complete indexing pass over every source finished."""
        return self.get_meta("last_full_scan_at")

    # -- chunks ---------------------------------------------------------------------------

    def chunk_ids(self) -> set[str]:
        """Every chunk id the manifest lists."""
        return {r[0] for r in self._conn.execute("SELECT chunk_id FROM chunks")}

    def doc_ids_of_chunks(self, chunk_ids: Collection[str]) -> set[str]:
        """The documents owning some chunks."""
        found: set[str] = set()
        for batch in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(batch))
            found.update(
                r[0]
                for r in self._conn.execute(
                    f"SELECT DISTINCT doc_id FROM chunks WHERE chunk_id IN ({marks})", batch
                )
            )
        return found

    def chunks(self, chunk_ids: Collection[str]) -> dict[str, ChunkRecord]:
        """Chunk rows by id; ids the manifest does not list are absent from the answer."""
        found: dict[str, ChunkRecord] = {}
        for batch in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(batch))
            for row in self._conn.execute(
                "SELECT chunk_id, doc_id, ordinal, heading_path, text, embed_key FROM chunks "
                f"WHERE chunk_id IN ({marks})",
                batch,
            ):
                found[row[0]] = _chunk(row)
        return found

    def chunks_of(self, doc_id: str) -> list[ChunkRecord]:
        """A document's chunks in order."""
        rows = self._conn.execute(
            "SELECT chunk_id, doc_id, ordinal, heading_path, text, embed_key FROM chunks "
            "WHERE doc_id = ? ORDER BY ordinal",
            (doc_id,),
        )
        return [_chunk(r) for r in rows]

    def chunk_count(self) -> int:
        """How many chunks the manifest lists."""
        return int(self._conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    # -- embedding cache ------------------------------------------------------------------

    def cached_vectors(self, embed_keys: Collection[str]) -> dict[str, Vector]:
        """Stored vectors for the given embedding keys (those not stored are absent)."""
        found: dict[str, Vector] = {}
        for batch in _batches(list(embed_keys), 500):
            marks = ",".join("?" * len(batch))
            for key, blob in self._conn.execute(
                f"SELECT embed_key, vector FROM vectors WHERE embed_key IN ({marks})", batch
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def store_vectors(self, vectors: dict[str, Vector]) -> None:
        """Add vectors to the cache (idempotent)."""
        if not vectors:
            return
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO vectors (embed_key, vector) VALUES (?, ?)",
                [
                    (k, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                    for k, v in vectors.items()
                ],
            )

    def prune_vectors(self) -> int:
        """Drop cached vectors no chunk uses any more; returns how many went."""
        with self._transaction() as conn:
            cur = conn.execute(
                "DELETE FROM vectors WHERE embed_key NOT IN (SELECT embed_key FROM chunks)"
            )
            return cur.rowcount

    def reclaim_space(self, min_free_share: float = 0.25) -> bool:
        """VACUUM when at least `min_free_share` of the file is free pages; True if it ran.

        SQLite reuses the pages of deleted rows (pruned vectors, replaced chunks) but never
        gives them back; without this the file keeps the size of its busiest day.
        """
        pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
        free = self._conn.execute("PRAGMA freelist_count").fetchone()[0]
        if not pages or free / pages < min_free_share:
            return False
        try:
            self._conn.execute("VACUUM")
            # The vacuumed copy went through the WAL; hand that space back too.
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot compact the manifest {self.path}: {exc}") from exc
        return True


def _chunk(row: tuple[str, str, int, str, str, str]) -> ChunkRecord:
    return ChunkRecord(row[0], row[1], row[2], tuple(json.loads(row[3])), row[4], row[5])


def _chunk_row(c: ChunkRecord) -> tuple[str, str, int, str, str, str]:
    return (c.chunk_id, c.doc_id, c.ordinal, json.dumps(list(c.heading_path)), c.text, c.embed_key)


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
