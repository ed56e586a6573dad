"""What the status report reads of state.db: per source, the documents it names (failed,
warned, empty, stale) at most `limit` of each, the sets behind its stale count, and the
first and last indexing times.

Owns answering those from indexes (`ragd.stores.manifest_schema`: documents_by_state,
documents_by_confirmation, documents_by_indexed_at, documents_noted), so a report costs
what it names and counts, not a pass over every document: at a million documents of
which none is stale, a few milliseconds. A stale set is read as row ids, so its cost is
its size (after a model change every document is stale under `fingerprint`, and the
report counts them all). A `ManifestCounts` with these queries added: read-only, opened
beside any writer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from ragd.stores.manifest_counts import SERVED, ManifestCounts
from ragd.stores.manifest_schema import connect_reader


class NamedDocument(NamedTuple):
    """A document the report names: its key, its error or warning, when it was indexed."""

    key: str
    note: str
    indexed_at: str | None


class ServedFile(NamedTuple):
    """What a folder document's file was when indexed, to compare with a stat of it now."""

    row: int
    key: str
    size: int | None
    mtime_ns: int | None
    content_hash: str | None


class IndexedTimes(NamedTuple):
    """The oldest and latest indexing time of a source's documents."""

    oldest: str | None
    latest: str | None


class ManifestReport(ManifestCounts):
    """A read-only connection to state.db with what `ragd status` reads."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        super().__init__(conn, path)
        # The partial index documents_noted holds exactly the documents the report names
        # besides stale ones; every query over it repeats its condition so SQLite uses it
        # (and writes `+status`, so that documents_by_state, by status, is not chosen).
        self._noted = f"(status = 'failed' OR error IS NOT NULL OR {self._chunks} = 0)"

    @classmethod
    def open(cls, path: Path) -> ManifestReport:
        """Open for reading only; StoreError when no index exists yet."""
        return cls(connect_reader(path), path)

    def failed(self, source: str, limit: int) -> list[NamedDocument]:
        """Up to `limit` failed documents of `source`, by key, with their errors."""
        return self._named(source, "status = 'failed'", limit)

    def warned(self, source: str, limit: int) -> tuple[int, list[NamedDocument]]:
        """How many indexed documents of `source` carry a warning (read other than as
        written), and up to `limit` of them by key."""
        where = "+status = 'indexed' AND error IS NOT NULL"
        return self._noted_count(source, where), self._named(source, where, limit)

    def empty(self, source: str, limit: int) -> tuple[int, list[NamedDocument]]:
        """How many indexed documents of `source` gave no chunk, and up to `limit` of them."""
        where = f"+status = 'indexed' AND {self._chunks} = 0"
        return self._noted_count(source, where), self._named(source, where, limit)

    def _noted_count(self, source: str, where: str) -> int:
        row = self._conn.execute(
            f"SELECT COUNT(*) FROM documents WHERE source = ? AND {self._noted} AND {where}",
            (source,),
        ).fetchone()
        return int(row[0])

    def _named(self, source: str, where: str, limit: int) -> list[NamedDocument]:
        rows = self._conn.execute(
            f"SELECT key, COALESCE(error, ''), indexed_at FROM documents "
            f"WHERE source = ? AND {self._noted} AND {where} ORDER BY key LIMIT ?",
            (source, limit),
        )
        return [NamedDocument(*row) for row in rows]

    def indexed_times(self, source: str) -> IndexedTimes:
        """When `source`'s live documents were first and last indexed, of those ever
        indexed: the two ends of documents_by_indexed_at."""
        where = "source = ? AND indexed_at IS NOT NULL AND status != 'deleted'"
        first, last = (
            self._conn.execute(
                f"SELECT indexed_at FROM documents WHERE {where} ORDER BY indexed_at {order} "
                "LIMIT 1",
                (source,),
            ).fetchone()
            for order in ("", "DESC")
        )
        return IndexedTimes(first and first[0], last and last[0])

    # -- the stale sets, as row ids ------------------------------------------------------

    def pending_rows(self, source: str) -> set[int]:
        """Served documents of `source` in status pending or with a change queued (a
        `path` or `entry` job not yet applied)."""
        rows = self._row_ids("WHERE source = ? AND status = 'pending'", (source,))
        queued = self._row_ids(
            "WHERE doc_id IN (SELECT source || ':' || key FROM jobs "
            "WHERE kind IN ('path', 'entry') AND source = ?) AND status = 'indexed'",
            (source,),
            missing_ok=True,
        )
        return rows | queued

    def other_fingerprint_rows(self, source: str, fingerprints: Iterable[str | None]) -> set[int]:
        """Served documents of `source` indexed under any of `fingerprints` (the ones present
        that are not the current one): equality ranges of documents_by_state."""
        found: set[int] = set()
        for fingerprint in fingerprints:
            found |= self._row_ids(
                f"WHERE source = ? AND status IN {SERVED} AND fingerprint IS ?",
                (source, fingerprint),
            )
        return found

    def unconfirmed_rows(self, source: str, before: str) -> set[int]:
        """Served documents of `source` last confirmed before `before`, or never (the rule
        and the index steps of `ManifestCounts.unconfirmed`)."""
        where, args = self._unconfirmed_where(source, before)
        return self._row_ids(f"WHERE {where}", args)

    def served_rows(self, source: str) -> set[int]:
        """Every served document of `source` (nothing vouches for them: its last poll
        could not list it)."""
        return self._row_ids(f"WHERE source = ? AND status IN {SERVED}", (source,))

    def served_files(self, source: str) -> Iterator[ServedFile]:
        """What every served document of a folder source was when indexed: a report
        without a watcher stats each file (one pass over the source's rows)."""
        rows = self._conn.execute(
            "SELECT rowid, key, size, mtime_ns, content_hash FROM documents "
            f"WHERE source = ? AND status IN {SERVED}",
            (source,),
        )
        for row in rows:
            yield ServedFile(*row)

    def stale_named(self, rows: Collection[int]) -> list[tuple[int, NamedDocument]]:
        """Each of these documents (a list's worth) by row id, with its key and indexing
        time (its note left empty), in order of key."""
        marks = ",".join("?" * len(rows))
        found = [
            (row, NamedDocument(key, "", indexed_at))
            for row, key, indexed_at in self._conn.execute(
                f"SELECT rowid, key, indexed_at FROM documents WHERE rowid IN ({marks})",
                tuple(rows),
            )
        ]
        return sorted(found, key=lambda found: found[1])

    def rows_of_keys(self, source: str, keys: Iterable[str]) -> dict[str, int]:
        """The row id of each of these keys of `source` that has a document."""
        found: dict[str, int] = {}
        for key in keys:
            row = self._conn.execute(
                "SELECT rowid FROM documents WHERE source = ? AND key = ?", (source, key)
            ).fetchone()
            if row is not None:
                found[key] = int(row[0])
        return found

    def _row_ids(self, where: str, args: tuple[object, ...], missing_ok: bool = False) -> set[int]:
        try:
            rows = self._conn.execute(f"SELECT rowid FROM documents {where}", args)
            return {int(row[0]) for row in rows}
        except sqlite3.OperationalError:
            if missing_ok:  # no jobs table: no daemon has ever queued work here
                return set()
            raise
