"""The manifest's aggregates for monitoring: what every /metrics scrape reads of state.db.

Owns the queries that count documents by source and state, find the oldest confirmation,
count the documents a source's max_age no longer vouches for, and list the documents a
change is queued for. Each is answered from an index (`ragd.stores.manifest_schema`:
documents_by_state, documents_by_confirmation, the documents' and the jobs' keys), not
by reading every document row and chunk as `ragd status` does: at 100k documents the
scrape's share is milliseconds (docs/performance.md). A `ManifestReader` with these
queries added: read-only, opened beside any writer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_schema import (
    CONFIRMED_AT_SQL,
    SELECT_DOCUMENTS,
    connect_reader,
    has_chunk_counts,
    has_state_counts,
)
from ragd.stores.records import DocumentRecord

# Documents whose indexed chunks are served and may go stale: not failed, not deleted.
SERVED = "('indexed', 'pending')"


class StateCount(NamedTuple):
    """How many documents of a source are in one status under one fingerprint, and how
    many chunks they have."""

    source: str
    status: str
    fingerprint: str | None
    documents: int
    chunks: int


class ManifestCounts(ManifestReader):
    """A read-only connection to state.db with the aggregates /metrics reports."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        super().__init__(conn, path)
        # A file no writer has opened since an upgrade has no chunk_count: count the rows.
        self._chunks = (
            "chunk_count"
            if has_chunk_counts(conn)
            else "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = documents.doc_id)"
        )
        self._state_counts = has_state_counts(conn)

    @classmethod
    def open(cls, path: Path) -> ManifestCounts:
        """Open for reading only; StoreError when no index exists yet."""
        return cls(connect_reader(path), path)

    def states(self) -> list[StateCount]:
        """Documents and their chunks per (source, status, fingerprint) present: the rows
        of document_states, or before schema 5 one pass over the documents_by_state index,
        which holds all four."""
        if self._state_counts:
            rows = self._conn.execute(
                "SELECT source, status, NULLIF(fingerprint, ''), documents, chunks "
                "FROM document_states WHERE documents > 0"
            )
        else:
            rows = self._conn.execute(
                f"SELECT source, status, fingerprint, COUNT(*), TOTAL({self._chunks}) "
                "FROM documents GROUP BY source, status, fingerprint"
            )
        return [
            StateCount(source, status, fp, n, int(chunks)) for source, status, fp, n, chunks in rows
        ]

    def checked_at(self, source: str) -> str | None:
        """When the last pass that checked every document of `source` began (a folder
        source's last complete scan; `Manifest.confirm_sources`)."""
        return self.get_meta(f"checked:{source}")

    def oldest_confirmation(self, source: str) -> str | None:
        """When the least recently confirmed served document of `source` was last indexed
        or confirmed unchanged; None when none ever was.

        A document's confirmation is the later of its own checked_at and its source's last
        complete scan if that scan came after the document was first seen (as
        `SELECT_DOCUMENTS` reads it). A document first seen after that scan was written by
        a pass that began no earlier, so the oldest is the later of the oldest row and the
        scan: one step into the documents_by_confirmation index.
        """
        row = self._conn.execute(
            f"SELECT {CONFIRMED_AT_SQL} FROM documents WHERE source = ? "
            f"AND {CONFIRMED_AT_SQL} > '' AND status IN {SERVED} "
            f"ORDER BY {CONFIRMED_AT_SQL} LIMIT 1",
            (source,),
        ).fetchone()
        if row is None:
            return None
        scanned = self.checked_at(source)
        return str(row[0]) if scanned is None else max(str(row[0]), scanned)

    def unconfirmed(self, source: str, before: str) -> int:
        """How many served documents of `source` were last confirmed before `before` (ISO
        time, as stored), or never: those its max_age flags, as `SELECT_DOCUMENTS` and
        `ragd.search.staleness` read their confirmation.

        The source's last complete scan vouches for every document first seen before it.
        When that scan is itself recent enough (the steady state: rescans are hourly,
        max_age is days), only a document first seen after it can be unconfirmed, and one
        that was ever indexed was so by a pass that began no earlier (passes follow one
        another, in one writer): only those never indexed are. Both ends of
        documents_by_confirmation, then; without such a scan, its range before `before`,
        one entry per document counted.
        """
        where, args = self._unconfirmed_where(source, before)
        row = self._conn.execute(f"SELECT COUNT(*) FROM documents WHERE {where}", args).fetchone()
        return int(row[0])

    def _unconfirmed_where(self, source: str, before: str) -> tuple[str, tuple[str, ...]]:
        """The condition `unconfirmed` counts by, and its arguments."""
        scanned = self.checked_at(source)
        if scanned is not None and scanned >= before:
            where, arg = f"{CONFIRMED_AT_SQL} = '' AND first_seen_at > ?", scanned
        else:
            where, arg = f"{CONFIRMED_AT_SQL} < ?", before
        return f"source = ? AND {where} AND status IN {SERVED}", (source, arg)

    def queued_changes(self) -> dict[str, int]:
        """Per source, indexed documents with a change queued and not yet applied (a `path`
        or `entry` job): with the documents in status pending, what the `pending` reason
        counts. One primary-key lookup per job."""
        try:
            rows = self._conn.execute(
                "SELECT d.source, COUNT(DISTINCT d.doc_id) FROM jobs j "
                "JOIN documents d ON d.doc_id = j.source || ':' || j.key "
                "WHERE j.kind IN ('path', 'entry') AND d.status = 'indexed' GROUP BY d.source"
            ).fetchall()
        except sqlite3.OperationalError:
            return {}  # no daemon has ever queued work here
        return {source: int(count) for source, count in rows}

    def queued_documents(self, sources: Sequence[str], limit: int) -> list[DocumentRecord]:
        """Up to `limit` served documents of `sources` a change is known for: a watch event
        queued for the file (a `path` job) or for a directory above it (a `tree` job), or a
        write in progress (status pending). The documents whose files a cheap count of
        `source_changed` stats."""
        found: dict[str, DocumentRecord] = {}
        served = f"d.status IN {SERVED}"
        queries: list[tuple[str, tuple[str, ...]]] = [
            (
                f"WHERE d.doc_id IN (SELECT source || ':' || key FROM jobs WHERE kind = 'path') "
                f"AND {served}",
                (),
            ),
            # documents_by_source, over each directory's range of keys ('0' follows '/')
            (
                "JOIN jobs j ON j.kind = 'tree' AND d.source = j.source "
                f"AND d.key >= j.key || '/' AND d.key < j.key || '0' WHERE {served}",
                (),
            ),
            *(("WHERE d.source = ? AND d.status = 'pending'", (name,)) for name in sources),
        ]
        for where, args in queries:
            if len(found) >= limit:
                break
            try:
                rows = self._conn.execute(
                    f"{SELECT_DOCUMENTS} {where} LIMIT ?", (*args, limit - len(found))
                ).fetchall()
            except sqlite3.OperationalError:
                continue  # no jobs table: no daemon has ever queued work here
            for row in rows:
                record = DocumentRecord._make(row)
                if record.source in sources:
                    found.setdefault(record.doc_id, record)
        return list(found.values())[:limit]
