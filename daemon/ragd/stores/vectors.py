"""The vector stores: LanceDB tables of chunk vectors, derived from the manifest.

Owns `data_dir/lancedb/` and what its rows mean: a chunk's id, its document and its vector,
replaced a document at a time; when to build the vector index and when to compact. There
is one table per model stage: `chunks` for the first stage, and for the second, whose
rows arrive later (ragd.indexing.second_stage), one named after its model: a new model
starts a new table, so no reader ever finds one model's vectors under another's name. It holds
only what a vector search needs; chunk texts and metadata live in the manifest, the source
of truth, so everything here can be rebuilt. One writer process at a time (the data-dir lock
ensures it); readers in other processes open read-only and `refresh()` to see newer commits.
Readers and writers go through `ragd.adapters.lancedb`, which imports lancedb on first
use: commands that never touch vectors don't pay for it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from ragd.adapters.lancedb import (
    TABLE,
    IvfSqIndex,
    VectorLocation,
    VectorTable,
    drop_vector_table,
    open_vector_table,
    sql_in,
    vector_tables,
)
from ragd.errors import StoreError

# Ids per `IN (...)` list in a delete. LanceDB parses the filter as SQL; a few hundred literals
# keep each statement small (500 ids delete in ~25 ms at 100k rows).
IN_BATCH = 500
# Below this many rows brute force is exact and quick; above it an IVF_SQ index keeps vector
# search near 5 ms (125k rows: brute force 160-220 ms).
VECTOR_INDEX_MIN_ROWS = 10_000
# IVF partitions of about this many rows. LanceDB's default (~8k rows) leaves 15 partitions
# at 125k rows, all inside the 20 a search probes: a scan of every row.
ROWS_PER_PARTITION = 1024
# Every commit adds a data file; a search then reads its hits from dozens of them. Past this
# many small files a writer compacts (at 125k rows, 451 files made a vector search 1.6x
# slower than one file).
COMPACT_AT_FRAGMENTS = 32
# Rows the vector index does not cover are searched exactly, on every query. A pass that
# rewrites most rows (a new pipeline fingerprint re-keys every document) leaves the index
# covering almost none, without adding many files; past this share a writer folds them in.
UNINDEXED_AT_SHARE = 0.1
# A search reads at least this many IVF partitions, and at least one in PROBE_SHARE of
# them: recall@10 against exact search follows the share of rows read. At a million rows
# (1,007 partitions, k-means on LanceDB's default 256 rows per partition) it was .85 with
# 20 partitions, .94 with 100 and .955 with 126, at 5.6, 9.8 and 11.4 ms per search
# (`bench/scale.py --probes`); at 125k rows 20 is one in six.
MIN_PROBES = 20
PROBE_SHARE = 8
# An index keeps the partitions it was built with, so a table that grows keeps searching
# as many partitions of ever more rows. Once the table holds this many times the rows the
# index was built for, the index is built again. A build costs about its rows (29.9 s at
# a million), or their square once an edit deletes a row of a large data file (LanceDB's
# k-means sample, docs/performance.md), so the rebuilds of a growing table sum to between
# a third more than the last and twice it.
INDEX_REGROWTH = 2
# Recorded in the vector field's metadata: the rows the index was built for.
BUILT_FOR = "ragd.index_rows"
# How much older than the oldest published version a cleanup's cut-off stays.
PUBLISHED_MARGIN = timedelta(minutes=1)
# The versions a clean stop keeps (besides the latest and the published ones): LanceDB
# warns that an age of 0 fails readers of older versions; the daemon's are gone by then.
STOP_CLEANUP_AGE = timedelta(seconds=1)
FIRST_STAGE = TABLE
SECOND_STAGE_PREFIX = "second_stage_"


def second_stage_table(model_identity: str) -> str:
    """The name of the table of one second-stage model's vectors."""
    return SECOND_STAGE_PREFIX + hashlib.sha256(model_identity.encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One chunk's vector, keyed by its deterministic chunk id."""

    chunk_id: str
    doc_id: str
    vector: npt.NDArray[np.float32]


def probes_for(index_rows: int) -> int:
    """The IVF partitions a search reads in an index built for `index_rows` rows."""
    return max(MIN_PROBES, -(-(index_rows // ROWS_PER_PARTITION) // PROBE_SHARE))


def checked_matrix(rows: Sequence[VectorRow], dim: int) -> npt.NDArray[np.float32]:
    """The rows' vectors as one matrix, after checking the batch: unique ids, finite vectors
    of `dim` floats (ValueError naming the chunk otherwise). Checked once over the batch."""
    ids = [r.chunk_id for r in rows]
    if len(set(ids)) != len(ids):
        # merge_insert's behaviour on duplicate keys is undefined.
        counts = Counter(ids)
        duplicate = next(i for i in ids if counts[i] > 1)
        raise ValueError(f"duplicate chunk_id {duplicate!r} in one write")
    for row in rows:
        if np.shape(row.vector) != (dim,):
            raise ValueError(
                f"chunk {row.chunk_id!r}: vector shape {np.shape(row.vector)}, expected ({dim},)"
            )
    # Overflow to inf is expected here and rejected just below, so don't warn.
    with np.errstate(over="ignore"):
        matrix = np.array([r.vector for r in rows], dtype=np.float32).reshape(len(rows), dim)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = ids[int(np.argmin(finite))]
        raise ValueError(f"chunk {bad!r}: vector has NaN or infinite values")
    return matrix


class VectorStore:
    """The LanceDB table of chunk vectors; build with `open` (writer) or `open_readonly`."""

    def __init__(
        self,
        directory: VectorLocation,
        table: VectorTable | None,
        *,
        writable: bool,
        hold_ids: bool,
        name: str = FIRST_STAGE,
        pinned: bool = False,
    ) -> None:
        self._directory = directory
        self._name = name
        self._pinned = pinned
        # The oldest version a published generation names: replicas may be reading it, so
        # a cleanup keeps it and everything newer (ragd.stores.publishing).
        self.oldest_published: int | None = None
        self._rows = table
        self._writable = writable
        self._hold_ids = hold_ids
        if table is not None and hold_ids:
            table.hold_chunk_ids()
        # The IVF partitions a search reads, from the rows the index was built for.
        self.probes = probes_for(self._index_built_for())

    @classmethod
    def open(
        cls,
        directory: VectorLocation,
        dim: int,
        *,
        name: str = FIRST_STAGE,
    ) -> VectorStore:
        """Open table `name` for writing, creating the directory and table if missing.

        Raises StoreError if the table holds vectors of another dimension (the model changed).
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        table = open_vector_table(directory, table_name=name, create_dim=dim)
        assert table is not None  # created when missing
        if table.dim != dim:
            raise StoreError(
                f"the LanceDB store at {directory} holds {table.dim}-dimensional vectors but the "
                f"embedding model gives {dim}",
                hint=f"the model changed: delete {directory} and re-index everything",
            )
        return cls(directory, table, writable=True, hold_ids=False, name=name)

    @classmethod
    def open_existing(cls, directory: VectorLocation, *, name: str) -> VectorStore:
        """Open an existing table for writing, whatever its width; StoreError if missing."""
        table = open_vector_table(directory, table_name=name)
        if table is None:
            raise StoreError(f"the LanceDB store at {directory} has no table {name!r}")
        return cls(directory, table, writable=True, hold_ids=False, name=name)

    @staticmethod
    def tables(directory: VectorLocation) -> list[str]:
        """The names of the tables under `directory`."""
        return vector_tables(directory)

    @staticmethod
    def drop(directory: VectorLocation, name: str) -> None:
        """Remove table `name` (its rows are derived; the caller writes them again)."""
        drop_vector_table(directory, name)

    @staticmethod
    def drop_second_stage_tables(directory: VectorLocation, *, keep: str | None) -> list[str]:
        """Drop every second-stage table but `keep` (vectors of models no longer used;
        derived data); returns the names dropped."""
        dropped = [
            name
            for name in VectorStore.tables(directory)
            if name.startswith(SECOND_STAGE_PREFIX) and name != keep
        ]
        for name in dropped:
            drop_vector_table(directory, name)
        return dropped

    @classmethod
    def open_readonly(
        cls,
        directory: VectorLocation,
        *,
        name: str = FIRST_STAGE,
        ids_in_memory: bool = False,
        version: int | None = None,
    ) -> VectorStore:
        """Open table `name` for reading; creates nothing. A missing directory or table
        reads as empty. With `version` the handle reads that version and `refresh` keeps
        it there: a replica serves the vectors its published generation names.

        With `ids_in_memory` the handle holds every row's chunk id, read here and then those
        of newer rows once a search finds one, so searches need not read them from the
        table: for a reader of many queries (`VectorTable.hold_chunk_ids`).
        """
        table = open_vector_table(directory, table_name=name, version=version)
        return cls(
            directory,
            table,
            writable=False,
            hold_ids=ids_in_memory,
            name=name,
            pinned=version is not None,
        )

    @classmethod
    def absent(cls, directory: VectorLocation, name: str) -> VectorStore:
        """A read-only handle on a table that did not exist at the version being read
        (a replica's generation from before it was made): it reads as empty, and stays so."""
        return cls(directory, None, writable=False, hold_ids=False, name=name, pinned=True)

    @property
    def name(self) -> str:
        """The table's name."""
        return self._name

    @property
    def dim(self) -> int | None:
        """The vector width, once a table exists."""
        return None if self._rows is None else self._rows.dim

    def _writer_table(self) -> VectorTable:
        if not self._writable or self._rows is None:
            raise StoreError(f"the LanceDB store at {self._directory} was opened read-only")
        return self._rows

    def replace_documents(
        self,
        doc_ids: Collection[str],
        rows: Sequence[VectorRow],
        *,
        new: Collection[str] = (),
        held: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        """Make `rows` the complete set of chunks of `doc_ids`, in one LanceDB commit.

        Upserts rows by chunk_id and deletes every other row of those documents; with no rows
        it deletes the documents. Replaying a call leaves the same state. Every row's doc_id
        must be in `doc_ids`. The filter lists all doc ids in one `IN (...)` whatever their
        number, so the commit stays atomic (5,000 ids: ~0.4 s at 100k rows); callers should
        batch in hundreds of documents, not tens of thousands.

        `new` names documents this table has never held. When every document is new the
        rows are appended: no upsert's join against every row of the table. A replay of such
        a call would duplicate rows, so the caller must know (the manifest lists every
        document before its rows are written).

        `held` gives, per document, the chunk ids the manifest lists for it now. When it
        covers every document, the rows are upserted and the chunks no longer there deleted
        by id, two commits that each look rows up in the chunk_id index: deleting "every
        other row of these documents" reads every row of the table (0.5 s at a million
        rows; with the index, milliseconds). Between the two commits a reader finds the
        old chunks beside the new, as the manifest still lists them; a row the manifest
        never listed (a crash's leftover) stays until reconciliation removes it.

        Raises ValueError (before writing) for a bad vector, a duplicate chunk_id or a row of
        another document; StoreError if LanceDB fails.
        """
        table = self._writer_table()
        docs = list(dict.fromkeys(doc_ids))
        known = set(docs)
        for row in rows:
            if row.doc_id not in known:
                raise ValueError(
                    f"chunk {row.chunk_id!r} belongs to {row.doc_id!r}, not in doc_ids"
                )
        matrix = checked_matrix(rows, table.dim)
        if not docs:
            return  # and so no rows either
        in_docs = sql_in("doc_id", docs)
        chunk_ids, row_docs = [r.chunk_id for r in rows], [r.doc_id for r in rows]
        if rows and known.issubset(new):
            table.add(chunk_ids, row_docs, matrix)
        elif held is not None and known.issubset(held):
            if rows:
                table.upsert(chunk_ids, row_docs, matrix, delete_others_where=None)
            gone = {chunk for doc in docs for chunk in held[doc]} - set(chunk_ids)
            self.delete_chunks(gone)
        elif not rows:
            table.delete(in_docs)
        else:
            table.upsert(chunk_ids, row_docs, matrix, delete_others_where=in_docs)

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Write rows by chunk_id (replacing a row of the same id), in one commit; other
        rows stay. Raises ValueError (before writing) for a bad vector or a duplicate id."""
        table = self._writer_table()
        matrix = checked_matrix(rows, table.dim)
        if rows:
            ids, docs = [r.chunk_id for r in rows], [r.doc_id for r in rows]
            table.upsert(ids, docs, matrix, delete_others_where=None)

    def delete_chunks(self, chunk_ids: Collection[str]) -> None:
        """Delete chunks by id, one commit per batch of IN_BATCH ids (each is idempotent)."""
        table = self._writer_table()
        ids = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(ids), IN_BATCH):
            table.delete(sql_in("chunk_id", ids[start : start + IN_BATCH]))

    def chunk_ids(self) -> set[str]:
        """Every chunk id in the table (one scan of the chunk_id column)."""
        return set(self.iter_chunk_ids())

    def iter_chunk_ids(self) -> Iterator[str]:
        """Every chunk id in the table, one at a time, in no set order."""
        return iter(()) if self._rows is None else map(str, self._rows.column("chunk_id"))

    def count(self) -> int:
        """The number of rows."""
        return 0 if self._rows is None else self._rows.count()

    def search(
        self,
        vector: npt.NDArray[np.floating[Any]],
        limit: int,
        *,
        doc_pattern: str | None = None,
    ) -> list[tuple[str, float]]:
        """The `limit` nearest chunks as (chunk_id, cosine similarity), best first, among
        those whose whole doc_id matches `doc_pattern` (a regular expression) when given.

        Zero vectors have no cosine similarity: they are left out, and a zero query returns
        []. Raises ValueError for a query of the wrong shape or with NaN/inf.
        """
        return self.start_search(vector, limit, doc_pattern=doc_pattern)()

    def start_search(
        self,
        vector: npt.NDArray[np.floating[Any]],
        limit: int,
        *,
        doc_pattern: str | None = None,
    ) -> Callable[[], list[tuple[str, float]]]:
        """Start `search`; the returned function waits for its result. The caller can do
        other work meanwhile (a hybrid query's BM25 search).

        Raises ValueError at once for a query of the wrong shape or with NaN/inf.
        """
        if self._rows is None or limit <= 0:
            return lambda: []
        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (self._rows.dim,):
            raise ValueError(f"query vector shape {query.shape}, expected ({self._rows.dim},)")
        if not np.isfinite(query).all():
            raise ValueError("query vector has NaN or infinite values")
        return self._rows.start_nearest(query, limit, doc_pattern, probes=self.probes)

    def version(self) -> int | None:
        """The table version this handle reads; None when there is no table."""
        return None if self._rows is None else self._rows.version()

    def version_count(self) -> int:
        """How many table versions are kept on disk (each commit adds one until cleanup)."""
        return 0 if self._rows is None else self._rows.version_count()

    def has_vector_index(self) -> bool:
        """Whether the vector column has an ANN index (searches then use it)."""
        return self._rows is not None and self._rows.has_index("vector")

    def has_key_index(self) -> bool:
        """Whether the chunk_id column has its index (`replace_documents` looks rows up in
        it)."""
        return self._rows is not None and self._rows.has_index("chunk_id")

    def retrain_vector_index(self) -> bool:
        """Build the vector index again over the rows as they are now, if there is one:
        after every vector was replaced by another model's, the old partitions (trained
        on the old model's vectors) would send searches to the wrong rows. True if built."""
        if not self.has_vector_index():
            return False
        self._build_vector_index(self.count())
        return True

    def ensure_vector_index(self, min_rows: int = VECTOR_INDEX_MIN_ROWS) -> bool:
        """Build the IVF_SQ vector index once the table holds `min_rows` rows, and again
        once it holds INDEX_REGROWTH times the rows it was built for; True if built. The
        chunk_id index (`replace_documents`) is built alongside, once.

        Rows written afterwards are searched exactly until `optimize` folds them in.
        """
        table = self._writer_table()
        rows = self.count()
        if rows >= min_rows and not table.has_index("chunk_id"):
            table.create_key_index("chunk_id")  # 0.4 s at a million rows, 26 MB
        if not self._index_due(rows, min_rows):
            return False
        self._build_vector_index(rows)
        return True

    def vector_index_due(self, min_rows: int = VECTOR_INDEX_MIN_ROWS) -> bool:
        """Whether `ensure_vector_index` would build: the table holds `min_rows` rows and
        no index, or INDEX_REGROWTH times the rows its index was built for."""
        return self._rows is not None and self._index_due(self.count(), min_rows)

    def _index_due(self, rows: int, min_rows: int) -> bool:
        if rows < min_rows:
            return False
        if not self.has_vector_index():
            return True
        return rows >= INDEX_REGROWTH * self._index_built_for()

    def _build_vector_index(self, rows: int) -> None:
        """Build the IVF_SQ index for `rows` rows and record that count on the column."""
        table = self._writer_table()
        partitions = max(1, rows // ROWS_PER_PARTITION)
        table.create_index("vector", IvfSqIndex(partitions))
        table.set_field_metadata("vector", {BUILT_FOR: str(rows)})
        self.probes = probes_for(rows)

    def _index_built_for(self) -> int:
        """The rows the vector index was built for; 0 if not recorded (an older ragd built
        it, or a crash came between the build and the record), which builds it again."""
        if self._rows is None:
            return 0
        recorded = self._rows.field_metadata("vector").get(BUILT_FOR, "")
        return int(recorded) if recorded.isdigit() else 0

    def small_fragments(self) -> int:
        """How many data files are below LanceDB's target size (each commit adds one)."""
        return 0 if self._rows is None else self._rows.small_fragments()

    def needs_compaction(self) -> bool:
        """Whether enough commits left small files for a compaction to pay, or the vector
        index no longer covers enough of the rows."""
        if self._rows is None:
            return False
        if self.small_fragments() >= COMPACT_AT_FRAGMENTS:
            return True
        unindexed = self._rows.unindexed_rows("vector")
        return unindexed > 0 and unindexed >= UNINDEXED_AT_SHARE * self.count()

    def optimize(self, cleanup_older_than: timedelta) -> None:
        """Compact files, build or update the vector index, drop versions older than
        `cleanup_older_than`.

        A reader that follows the latest version reads again when a cleanup deletes a file
        it was reading (`ragd.adapters.lancedb.READ_ATTEMPTS`); one pinned to a version
        (a replica's) cannot, so keep the age at minutes while such readers run.
        """
        self.compact(cleanup_older_than)
        # After compacting: an index built over the one compacted file searches faster than
        # one built over hundreds of small files and then compacted.
        self.ensure_vector_index()

    def compact(self, cleanup_older_than: timedelta) -> None:
        """`optimize` without building the vector index (the daemon builds it off the
        writer: ragd.service.daemon.index_builder)."""
        self._writer_table().optimize(self._cleanup_age(cleanup_older_than))

    def drop_superseded_versions(self) -> bool:
        """On a clean stop: drop every version but the latest and those replicas read,
        when that costs no compaction (the table is one data file, or one beside big
        ones); returns whether it did.

        A compaction commits twice (LanceDB reserves the new file's id in a version of
        its own), and that first version, young when the compaction's cleanup runs,
        keeps every file the compaction replaced until the next cleanup. Versions are
        kept for the daemon's own readers, which are gone once it stops; a read still in
        flight, or one in another process, follows the latest version and reads again on
        a deleted file.
        """
        if self._rows is None or self.small_fragments() > 1 or self.needs_compaction():
            return False
        if self._writer_table().version_count() <= 1:
            return False
        self._writer_table().optimize(self._cleanup_age(STOP_CLEANUP_AGE))
        return True

    def _cleanup_age(self, cleanup_older_than: timedelta) -> timedelta:
        """`cleanup_older_than`, or longer so that the oldest published version survives:
        LanceDB's cleanup goes by age, and a version replicas read can be old (nothing
        was committed for a while) yet only just superseded."""
        if self.oldest_published is None:
            return cleanup_older_than
        age = self._writer_table().version_ages().get(self.oldest_published)
        if age is None:  # already gone: nothing to keep
            return cleanup_older_than
        return max(cleanup_older_than, age + PUBLISHED_MARGIN)

    def refresh(self) -> None:
        """Move to the latest commit (a handle otherwise stays on the version it opened);
        a handle pinned to a version stays on it."""
        if self._pinned:
            return
        if self._rows is not None:
            self._rows.refresh()
        elif not self._writable:
            self._rows = open_vector_table(self._directory, table_name=self._name)
            if self._rows is not None and self._hold_ids:
                self._rows.hold_chunk_ids()
        self.probes = probes_for(self._index_built_for())
