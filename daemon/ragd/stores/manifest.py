"""The manifest as its one writer holds it: every write to state.db.

`Manifest` is a `ManifestReader` (ragd.stores.manifest_reader: every query, and what state.db
holds) opened for writing, with the writes: intent before the stores are written, the
commit that makes them official, confirmations of what a pass found unchanged, the
listing digests, the embedding cache and reclaiming space.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ragd.errors import StoreError
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_schema import UPSERT_DOCUMENT_FIELDS, UPSERT_DOCUMENT_SQL, connect_writer
from ragd.stores.records import (
    ChunkRow,
    DocumentWrite,
    SkippedFiles,
    Vector,
    listing_digest,
    utc_now,
)


class Manifest(ManifestReader):
    """The writer's connection to state.db: WAL, synchronous=FULL; one writer process."""

    @classmethod
    def open(cls, path: Path) -> Manifest:
        """Open (creating if needed) for writing."""
        return cls(connect_writer(path), path)

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

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the meta table."""
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def mark_clean(self) -> None:
        """Record that the last writer finished with the stores in agreement."""
        self.set_meta("writer_clean", "1")

    def mark_unclean(self) -> None:
        """Record that the stores are about to be written out of the usual order, so that a
        crash before `mark_clean` has the next writer reconcile them."""
        self.set_meta("writer_clean", "0")

    def record_recipe(self, fingerprint: str, recipe: str) -> None:
        """Remember the chunk recipe of a pipeline fingerprint. A fingerprint hashes its
        recipe, so the pair never changes: written once, and a pass that finds it (every
        pass but the first under a fingerprint) pays for no commit."""
        key = f"recipe:{fingerprint}"
        if self.get_meta(key) != recipe:
            self.set_meta(key, recipe)

    # -- documents ------------------------------------------------------------------------

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

    def commit(self, writes: Sequence[DocumentWrite[ChunkRow]], *, checked_at: str) -> None:
        """Make the stores' new state official: replace chunk rows and settle each document.

        `checked_at` is when the pass that read them began. Each document at most once per
        call (ValueError otherwise). One statement per kind of row for the whole batch, not
        four per document: Python's per-statement overhead was a third of the time here.
        """
        doc_ids = [(w.doc_id,) for w in writes]
        if len(set(doc_ids)) != len(doc_ids):
            raise ValueError("a document can be committed once per call")
        now = utc_now()
        kept = [w for w in writes if w.status != "deleted"]
        with self._transaction() as conn:
            conn.executemany("DELETE FROM chunks WHERE doc_id = ?", doc_ids)
            conn.executemany("DELETE FROM includes WHERE doc_id = ?", doc_ids)
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
                [(*UPSERT_DOCUMENT_FIELDS(w), now, checked_at, len(w.chunks)) for w in kept],
            )
            conn.executemany(
                "INSERT INTO chunks (chunk_id, doc_id, ordinal, heading_path, text, embed_key, "
                "second_key, page) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_chunk_row(c) for w in kept for c in w.chunks],
            )
            conn.executemany(
                "INSERT INTO includes (doc_id, included, digest) VALUES (?, ?, ?)",
                [(w.doc_id, key, digest) for w in kept for key, digest in w.includes],
            )

    def switch_embeddings(
        self,
        chunks: Sequence[tuple[str, str, str | None]],
        fingerprints: Sequence[tuple[str, str]],
    ) -> None:
        """Re-key chunks to vectors already written and settle documents under a new
        fingerprint, in one transaction: (chunk_id, embed_key, second_key) and (doc_id,
        fingerprint). Only the keys and the fingerprint change; what re-embedding
        (ragd.indexing.reembed.bulk) leaves alone, the chunk ids and texts, stays."""
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE chunks SET embed_key = ?, second_key = ? WHERE chunk_id = ?",
                [(key, second, chunk_id) for chunk_id, key, second in chunks],
            )
            conn.executemany(
                "UPDATE documents SET fingerprint = ? WHERE doc_id = ?",
                [(fingerprint, doc_id) for doc_id, fingerprint in fingerprints],
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

    def record_poll(
        self, source: str, *, began_at: str, error: str | None, unconfirmed: Collection[str]
    ) -> None:
        """Record how a poll of a remote source ended.

        A poll that could not list the source (`error`) marks it unreachable: its
        documents read as stale until a poll succeeds. One that could vouches for every
        live document of the source seen before it began, except the `unconfirmed` keys
        (their fetch failed: what the source holds now is not known).
        """
        with self._transaction() as conn:
            if error is not None:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (f"unreachable:{source}", error[:500]),
                )
                return
            conn.execute("DELETE FROM meta WHERE key = ?", (f"unreachable:{source}",))
            conn.execute(
                "UPDATE documents SET checked_at = ?1 "
                "WHERE source = ?2 AND status != 'deleted' AND first_seen_at < ?1 "
                "AND (checked_at IS NULL OR checked_at < ?1) "
                "AND key NOT IN (SELECT value FROM json_each(?3))",
                (began_at, source, json.dumps(sorted(unconfirmed))),
            )

    def record_skipped(self, source: str, skipped: SkippedFiles) -> None:
        """Record what a full scan of a folder source passed over (ragd.sources.folders),
        for `ragd status` to show whether or not a daemon runs. Written only when it
        changed: every pass records it, and a no-op pass should not pay for a commit."""
        key = f"skipped:{source}"
        value = (
            json.dumps(
                {
                    "symlinks": skipped.symlinks,
                    "special": skipped.special,
                    "names": skipped.names,
                    "listed": [list(entry) for entry in skipped.listed],
                }
            )
            if skipped.total
            else None
        )
        if self.get_meta(key) == value:
            return
        if value is None:
            self._conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self.set_meta(key, value)

    def mark_for_redo(self, doc_ids: Collection[str]) -> None:
        """Send indexed documents back to pending, e.g. when a store lost their chunks."""
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE documents SET status = 'pending' WHERE doc_id = ? AND status = 'indexed'",
                [(d,) for d in doc_ids],
            )

    def remember_unchanged_listing(self, source: str, fingerprint: str) -> bool:
        """Record the digest of the listing in which every document of `source` is unchanged,
        from the documents' own states; False (nothing recorded) while a stat cannot vouch.

        Any later change to a document of the source forgets it (a trigger does), so a
        digest that exists is always current.
        """
        with self._transaction() as conn:
            states = self.file_states(source, fingerprint).values()
            vouched = sorted((k, n, t) for k, n, t in states if n is not None and t is not None)
            if len(vouched) < len(states):
                return False
            conn.execute(
                "INSERT OR REPLACE INTO listing_digests (source, fingerprint, digest) "
                "VALUES (?, ?, ?)",
                (source, fingerprint, listing_digest(vouched)),
            )
        return True

    # -- embedding cache and space --------------------------------------------------------

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
        """Drop cached vectors (of either stage) no chunk uses any more; returns how many went."""
        with self._transaction() as conn:
            cur = conn.execute(
                "DELETE FROM vectors WHERE embed_key NOT IN (SELECT embed_key FROM chunks) "
                "AND embed_key NOT IN "
                "(SELECT second_key FROM chunks WHERE second_key IS NOT NULL)"
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


def _chunk_row(c: ChunkRow) -> tuple[str, str, int, str, str, str, str | None, int | None]:
    heading_path = json.dumps(list(c.heading_path))
    return (
        c.chunk_id,
        c.doc_id,
        c.ordinal,
        heading_path,
        c.text,
        c.embed_key,
        c.second_key,
        c.page,
    )
