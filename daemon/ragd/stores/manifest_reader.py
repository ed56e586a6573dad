"""The manifest as its readers see it: every query of state.db.

state.db is the source of truth for what is indexed (its layout is
`ragd.stores.manifest_schema`): documents (identity, the stat and hash of what was indexed, the
pipeline fingerprint, status), chunks (ids, heading paths, texts) and the embedding cache
that lets unchanged chunk texts skip the model. LanceDB and Tantivy are derived from what
it lists; when they disagree, it wins. `ManifestReader.open` is read-only, for the
daemon's searcher and `ragd status`; the one writer's `ragd.stores.manifest.Manifest` adds the
writes, so a reader cannot even name one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ragd.stores.manifest_schema import (
    SELECT_DOCUMENTS,
    STAT_VOUCHES_SQL,
    connect_reader,
    has_pages,
    has_second_keys,
    has_second_pending,
    vouch_before_sql,
)
from ragd.stores.records import (
    ChunkRecord,
    DocumentRecord,
    FileState,
    SkippedFiles,
    Vector,
    doc_id_of,
)


class ManifestReader:
    """A read-only connection to state.db; any number of readers beside the one writer."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        # A file no writer has opened since an upgrade has no second keys or pages (NULL).
        self._has_second_keys = has_second_keys(conn)
        second = "second_key" if self._has_second_keys else "NULL"
        page = "page" if has_pages(conn) else "NULL"
        self._chunk_columns = (
            f"chunk_id, doc_id, ordinal, heading_path, text, embed_key, {second}, {page}"
        )
        self._has_second_pending = has_second_pending(conn)
        self._missing = _SECOND_STAGE_PENDING if self._has_second_pending else _SECOND_STAGE_MISSING

    @classmethod
    def open(cls, path: Path) -> ManifestReader:
        """Open for reading only; StoreError when no index exists yet."""
        return cls(connect_reader(path), path)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees the same commit. Counts read one after another otherwise
        may straddle a commit: a watch event queued between them is then both unseen and
        seen (a change found, but not the job that says it waits)."""
        self._conn.execute("BEGIN")
        try:
            yield
        finally:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the meta table."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def is_clean(self) -> bool:
        """False when a writer may have stopped between writing a store and committing here."""
        return self.get_meta("writer_clean") != "0"

    def last_full_scan_at(self) -> str | None:
        """When the last complete indexing pass over every source finished."""
        return self.get_meta("last_full_scan_at")

    def chunk_recipes(self) -> dict[str, str]:
        """The chunk recipe of each pipeline fingerprint a writer has indexed under (meta
        keys 'recipe:<fingerprint>'): documents of two fingerprints with one recipe were cut
        into the same chunks (ragd.indexing.pipeline.Pipeline.chunk_recipe)."""
        rows = self._conn.execute(
            "SELECT substr(key, 8), value FROM meta WHERE key LIKE 'recipe:%'"
        )
        return {fingerprint: recipe for fingerprint, recipe in rows}

    # -- documents ------------------------------------------------------------------------

    def documents(self, source: str | None = None) -> Iterator[DocumentRecord]:
        """Every document row (of one source, if given), with its chunk count, one at a
        time: a whole-index report folds them as they come rather than holding them all
        (at 100k documents the records alone take over 100 MiB)."""
        sql, args = SELECT_DOCUMENTS, ()  # type: tuple[str, tuple[str, ...]]
        if source is not None:
            sql, args = sql + " WHERE d.source = ?", (source,)
        for row in self._conn.execute(sql + " ORDER BY d.doc_id", args):
            yield DocumentRecord._make(row)

    def documents_under(self, source: str, prefix: str) -> list[DocumentRecord]:
        """Documents of a source whose key lies under directory key `prefix`."""
        low = prefix.rstrip("/") + "/"
        high = low[:-1] + chr(ord("/") + 1)  # every key starting with "prefix/" sorts below
        rows = self._conn.execute(
            SELECT_DOCUMENTS + " WHERE d.source = ? AND d.key >= ? AND d.key < ? ORDER BY d.key",
            (source, low, high),
        )
        return [DocumentRecord._make(row) for row in rows]

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One document row, or None."""
        row = self._conn.execute(SELECT_DOCUMENTS + " WHERE d.doc_id = ?", (doc_id,)).fetchone()
        return None if row is None else DocumentRecord._make(row)

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

    def include_digests(
        self, source: str, included: Collection[str] | None = None
    ) -> list[tuple[str, str, str]]:
        """(document key, included key, digest) for what a source's documents included
        (ragd.sources.includes); only of the `included` keys when given."""
        sql = (
            "SELECT d.key, i.included, i.digest FROM includes i "
            "JOIN documents d ON d.doc_id = i.doc_id WHERE d.source = ?"
        )
        if included is None:
            return list(self._conn.execute(sql, (source,)))
        rows: list[tuple[str, str, str]] = []
        for batch in _batches(list(included), 500):
            marks = ", ".join("?" * len(batch))
            rows += self._conn.execute(f"{sql} AND i.included IN ({marks})", (source, *batch))
        return rows

    def is_included(self, source: str, key: str) -> bool:
        """Whether a document of `source` included the file `key` (or looked for it)."""
        row = self._conn.execute(
            "SELECT 1 FROM includes i JOIN documents d ON d.doc_id = i.doc_id "
            "WHERE i.included = ? AND d.source = ? LIMIT 1",
            (key, source),
        ).fetchone()
        return row is not None

    def unchanged_listing(self, source: str, fingerprint: str) -> str | None:
        """The digest of the listing in which every document of `source` is unchanged under
        `fingerprint` (ragd.stores.records.listing_digest), if one is known."""
        row = self._conn.execute(
            "SELECT digest FROM listing_digests WHERE source = ? AND fingerprint = ?",
            (source, fingerprint),
        ).fetchone()
        return None if row is None else str(row[0])

    def indexed_count(self, source: str) -> int:
        """How many documents of a source are indexed."""
        row = self._conn.execute(
            "SELECT COUNT(*) FROM documents WHERE source = ? AND status = 'indexed'", (source,)
        ).fetchone()
        return int(row[0])

    def sources(self) -> list[str]:
        """Names of every source with documents in the manifest, in order.

        One index seek per source (documents_by_source), not a pass over every document:
        a query asks this when a token's scope or a filter names sources."""
        rows = self._conn.execute(
            "WITH RECURSIVE s(source) AS (SELECT MIN(source) FROM documents UNION ALL "
            "SELECT (SELECT MIN(source) FROM documents WHERE source > s.source) FROM s "
            "WHERE s.source IS NOT NULL) SELECT source FROM s WHERE source IS NOT NULL"
        )
        return [r[0] for r in rows]

    def entry_version(self, doc_id: str) -> str | None:
        """The version (updated_at) of the last applied delivery for a CMS entry."""
        row = self._conn.execute(
            "SELECT version FROM entry_versions WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def entry_versions(self, source: str) -> dict[str, tuple[str | None, str]]:
        """Per live document of a source: (the version last applied, first_seen_at), what
        a poll compares its listing with."""
        rows = self._conn.execute(
            "SELECT d.key, v.version, d.first_seen_at FROM documents d "
            "LEFT JOIN entry_versions v USING (doc_id) "
            "WHERE d.source = ? AND d.status != 'deleted'",
            (source,),
        )
        return {key: (version, first_seen) for key, version, first_seen in rows}

    def unreachable_sources(self) -> dict[str, str]:
        """Sources whose last poll could not list them: name -> the error (meta keys
        'unreachable:<source>'). Their documents are stale until a poll succeeds."""
        rows = self._conn.execute(
            "SELECT substr(key, 13), value FROM meta WHERE key LIKE 'unreachable:%'"
        )
        return {name: value for name, value in rows}

    def skipped_files(self) -> dict[str, SkippedFiles]:
        """Per folder source, what its last full scan passed over (meta keys
        'skipped:<source>'; a source that skipped nothing has none)."""
        rows = self._conn.execute(
            "SELECT substr(key, 9), value FROM meta WHERE key LIKE 'skipped:%'"
        )
        found: dict[str, SkippedFiles] = {}
        for name, value in rows:
            saved = json.loads(value)
            listed = tuple((str(key), str(kind)) for key, kind in saved["listed"])
            # Rows written before names were counted have no "names": none were.
            names = int(saved.get("names", 0))
            found[name] = SkippedFiles(int(saved["symlinks"]), int(saved["special"]), listed, names)
        return found

    def pending_doc_ids(self) -> set[str]:
        """Documents with a queued change not yet applied (read from the jobs table)."""
        try:
            rows = self._conn.execute(
                "SELECT source, key FROM jobs WHERE kind IN ('path', 'entry')"
            ).fetchall()
        except sqlite3.OperationalError:
            return set()  # no daemon has ever queued work here
        return {doc_id_of(source, key) for source, key in rows}

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

    # -- chunks ---------------------------------------------------------------------------

    def chunk_ids(self) -> set[str]:
        """Every chunk id the manifest lists."""
        return set(self.iter_chunk_ids())

    def iter_chunk_ids(self) -> Iterator[str]:
        """Every chunk id the manifest lists, one at a time, in no set order."""
        return (r[0] for r in self._conn.execute("SELECT chunk_id FROM chunks"))

    def doc_ids_of_chunks(self, chunk_ids: Collection[str]) -> set[str]:
        """The documents owning some chunks."""
        rows = self._rows_in("SELECT DISTINCT doc_id FROM chunks WHERE chunk_id IN", chunk_ids)
        return {r[0] for r in rows}

    def chunks(self, chunk_ids: Collection[str]) -> dict[str, ChunkRecord]:
        """Chunk rows by id; ids the manifest does not list are absent from the answer."""
        rows = self._rows_in(
            f"SELECT {self._chunk_columns} FROM chunks WHERE chunk_id IN", chunk_ids
        )
        return {row[0]: _chunk(row) for row in rows}

    def chunks_of(self, doc_id: str) -> list[ChunkRecord]:
        """A document's chunks in order."""
        rows = self._conn.execute(
            f"SELECT {self._chunk_columns} FROM chunks WHERE doc_id = ? ORDER BY ordinal",
            (doc_id,),
        )
        return [_chunk(r) for r in rows]

    def chunk_count(self) -> int:
        """How many chunks the manifest lists."""
        return int(self._conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def all_chunks(self) -> Iterator[ChunkRecord]:
        """Every chunk, in document order (doc_id, then ordinal), read as it is consumed."""
        rows = self._conn.execute(
            f"SELECT {self._chunk_columns} FROM chunks ORDER BY doc_id, ordinal"
        )
        return (_chunk(row) for row in rows)

    def _rows_in(self, select: str, values: Collection[str]) -> Iterator[Any]:
        """The rows of `select` (ending "... WHERE column IN") for every value, asked in
        batches of 500 (SQLite bounds the parameters of one statement)."""
        for batch in _batches(list(values), 500):
            marks = ",".join("?" * len(batch))
            yield from self._conn.execute(f"{select} ({marks})", batch)

    # -- embedding cache ------------------------------------------------------------------

    def cached_vectors(self, embed_keys: Collection[str]) -> dict[str, Vector]:
        """Stored vectors for the given embedding keys (those not stored are absent)."""
        rows = self._rows_in("SELECT embed_key, vector FROM vectors WHERE embed_key IN", embed_keys)
        return {key: np.frombuffer(blob, dtype=np.float32) for key, blob in rows}

    def stored_keys(self, embed_keys: Collection[str]) -> set[str]:
        """Those of the embedding keys whose vector is stored (no vector is read)."""
        rows = self._rows_in("SELECT embed_key FROM vectors WHERE embed_key IN", embed_keys)
        return {r[0] for r in rows}

    # -- second stage ---------------------------------------------------------------------

    def second_stage_missing(
        self, limit: int, after: tuple[str, int] | None = None
    ) -> list[SecondStageWork]:
        """Up to `limit` chunks whose second-stage vector is not stored, in document order,
        from after (doc_id, ordinal) `after` when given: a caller working through a backlog
        resumes there instead of passing over every chunk done before."""
        if not self._has_second_keys:
            return []
        rows = self._conn.execute(
            f"SELECT c.chunk_id, c.doc_id, c.second_key, d.title, c.heading_path, c.text, "
            f"c.ordinal {self._missing} AND (c.doc_id, c.ordinal) > (?, ?) "
            "ORDER BY c.doc_id, c.ordinal LIMIT ?",
            (*(after or ("", -1)), limit),
        )
        return [
            SecondStageWork(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), r[5], r[6])
            for r in rows
        ]

    def second_stage_missing_count(self) -> int:
        """How many chunks have no stored second-stage vector."""
        if not self._has_second_keys:
            return 0
        return int(self._conn.execute(f"SELECT COUNT(*) {self._missing}").fetchone()[0])

    def second_stage_coverage(
        self, chunks: Mapping[str, int] | None = None
    ) -> dict[str, tuple[int, int]]:
        """Per source: (chunks with a stored second-stage vector, chunks that should have
        one). A source whose chunks were written with the second stage off has 0 to have.
        `chunks`: each source's chunk count, when the caller has it."""
        if not self._has_second_keys:
            return {}
        if not self._has_second_pending:  # before schema 5: every chunk joined to vectors
            rows = self._conn.execute(
                "SELECT d.source, COUNT(v.embed_key), COUNT(c.second_key) "
                "FROM chunks c JOIN documents d USING (doc_id) "
                "LEFT JOIN vectors v ON v.embed_key = c.second_key GROUP BY d.source"
            )
            return {source: (done, total) for source, done, total in rows}
        # Every chunk less those written with the second stage off is what should have one;
        # less those pending, what has one. Two partial indexes and the documents' counts.
        if chunks is None:  # a pass over documents_by_state; the status report has it
            rows = self._conn.execute(
                "SELECT source, TOTAL(chunk_count) FROM documents GROUP BY source"
            )
            chunks = {source: int(count) for source, count in rows}
        without = self._per_source("c.second_key IS NULL")
        pending = self._per_source("c.second_pending = 1")
        found = {}
        for source, count in chunks.items():
            should = int(count) - without.get(source, 0)
            found[source] = (should - pending.get(source, 0), should)
        return found

    def _per_source(self, where: str) -> dict[str, int]:
        rows = self._conn.execute(
            "SELECT d.source, COUNT(*) FROM chunks c JOIN documents d USING (doc_id) "
            f"WHERE {where} GROUP BY d.source"
        )
        return {source: int(count) for source, count in rows}

    def second_stage_rows(self, second_keys: Collection[str]) -> list[tuple[str, str, str]]:
        """(chunk_id, doc_id, second_key) of every chunk whose second key is one of these."""
        if not self._has_second_keys:
            return []
        select = "SELECT chunk_id, doc_id, second_key FROM chunks WHERE second_key IN"
        return [tuple(row) for row in self._rows_in(select, second_keys)]

    def second_stage_chunk_ids(self) -> set[str]:
        """The chunks whose second-stage vector is stored."""
        if not self._has_second_keys:
            return set()
        rows = self._conn.execute(
            "SELECT c.chunk_id FROM chunks c JOIN vectors v ON v.embed_key = c.second_key"
        )
        return {r[0] for r in rows}

    def second_stage_vectors(self, chunk_ids: Collection[str]) -> list[tuple[str, str, Vector]]:
        """(chunk_id, doc_id, second-stage vector) of each of these chunks that has one."""
        if not self._has_second_keys:
            return []
        select = (
            "SELECT c.chunk_id, c.doc_id, v.vector FROM chunks c "
            "JOIN vectors v ON v.embed_key = c.second_key WHERE c.chunk_id IN"
        )
        return [
            (chunk_id, doc_id, np.frombuffer(blob, dtype=np.float32))
            for chunk_id, doc_id, blob in self._rows_in(select, chunk_ids)
        ]

    def confirmed_ages(self, thresholds: Sequence[str]) -> dict[str, list[int]]:
        """Per source, how many live documents were last indexed or confirmed at or after
        each of `thresholds` (manifest times, newest first) and how many before the last:
        the counts of a freshness histogram, in one pass over the documents in SQL."""
        confirmed = "MAX(COALESCE(indexed_at, ''), COALESCE(checked_at, ''))"
        edges = list(thresholds)
        buckets = [f"{confirmed} >= ?"]
        buckets += [f"{confirmed} < ? AND {confirmed} >= ?" for _ in edges[1:]]
        buckets.append(f"{confirmed} < ?")
        params = [edges[0]]
        for newer, older in pairwise(edges):
            params += [newer, older]
        params.append(edges[-1])
        sums = ", ".join(f"SUM(CASE WHEN {b} THEN 1 ELSE 0 END)" for b in buckets)
        rows = self._conn.execute(
            f"SELECT source, {sums} FROM documents WHERE status != 'deleted' GROUP BY source",
            params,
        )
        return {row[0]: [int(n or 0) for n in row[1:]] for row in rows}


class SecondStageWork(NamedTuple):
    """A chunk whose second-stage vector is not stored yet: what embedding it takes."""

    chunk_id: str
    doc_id: str
    second_key: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    ordinal: int

    @property
    def position(self) -> tuple[str, int]:
        """Where it stands in document order (a resume point for the next read)."""
        return self.doc_id, self.ordinal


# The chunks of live documents (the text is rebuilt from the document's title) whose
# second-stage key has no stored vector: by the flag the schema's triggers keep (schema 5,
# the partial index chunks_second_pending), or before it by a join of every chunk.
_SECOND_STAGE_PENDING = "FROM chunks c JOIN documents d USING (doc_id) WHERE c.second_pending = 1"
_SECOND_STAGE_MISSING = (
    "FROM chunks c JOIN documents d USING (doc_id) WHERE c.second_key IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.embed_key = c.second_key)"
)


def _chunk(row: tuple[str, str, int, str, str, str, str | None, int | None]) -> ChunkRecord:
    return ChunkRecord(
        row[0], row[1], row[2], tuple(json.loads(row[3])), row[4], row[5], row[6], row[7]
    )


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
