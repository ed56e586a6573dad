"""The vector store: one LanceDB table of chunk vectors, derived from the manifest.

Owns `data_dir/lancedb/` and its table `chunks` (chunk_id, doc_id, vector). Holds only what a
vector search needs; chunk texts and metadata live in the manifest, which is the source of truth,
so everything here can be rebuilt. One writer process at a time (the data-dir lock ensures it);
readers in other processes open read-only and call `refresh()` to see newer commits.

What a row is, and how a batch of them becomes Arrow, is `ragd.vector_rows`. Imports only
that, `ragd.errors`, `ragd.faults` (a crash hook for tests), `ragd.row_ids`,
`ragd.lance_queries` and `ragd.lance_session`, which imports lancedb when `open` or
`open_readonly` first needs it: CLI paths that never touch vectors don't pay for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragd.errors import StoreError
from ragd.faults import fault_point
from ragd.lance_queries import row_id_scan, start_nearest
from ragd.lance_session import import_lancedb, session
from ragd.row_ids import ChunkIdsByRow, RowIdArray
from ragd.vector_rows import (
    TABLE_NAME,
    VectorRow,
    has_table,
    rows_to_arrow,
    sql_in,
    table_dim,
    table_schema,
)

if TYPE_CHECKING:
    from lancedb.table import Table

# Ids per `IN (...)` list in a delete. LanceDB parses the filter as SQL; a few hundred literals
# keep each statement small (500 ids delete in ~25 ms at 100k rows).
IN_BATCH = 500
# Below this many rows brute force is exact and quick; above it an IVF_SQ index keeps vector
# search near 5 ms (125k rows: brute force 160-220 ms; docs/performance.md has the figures).
VECTOR_INDEX_MIN_ROWS = 10_000
# IVF partitions of about this many rows. LanceDB's default (~8k rows) leaves 15 partitions
# at 125k rows, all inside the 20 a search probes: a scan of every row. At 1k rows a search
# probes a sixth of 125k rows: hybrid p50 9.4 -> 7.6 ms there, and at 1M rows vector search
# 11.2 -> 9.6 ms at equal recall (docs/performance.md).
ROWS_PER_PARTITION = 1024
# Every commit adds a data file; a search then reads its hits from dozens of them. Past this
# many small files a writer compacts: at 125k rows, 451 files made a vector search 10.4 ms
# p50 and one file 6.6 ms (docs/performance.md).
COMPACT_AT_FRAGMENTS = 32
# k-means trains on this many rows per partition (LanceDB's default is 256), so its cost
# grows with the square of the partition count. 64 instead of 256 built the index of 125k
# rows in 3.6-3.9 s instead of 6.7-8.3 s at the same recall. 16 instead of 64: tldr's 41k
# rows in 0.4-0.5 s instead of 0.8-0.9 (the last step of a full index), 125k in 1.8-2.1 s
# instead of 2.6-4.1, 1M in 27-29 s instead of 33-34, with recall@10 and @50 equal within
# the runs' spread at each size (bench/vector_index.py; docs/performance.md).
IVF_SAMPLE_RATE = 16
# An index keeps the partition count it was built with, so a table that grows keeps
# searching 20 partitions of ever more rows (one built at 10k rows and grown to 125k: 9
# partitions, all probed, a scan of every row). Once the table holds this many times the
# rows the index was built for, the index is built again: its cost grows with the square
# of the rows, so the rebuilds of a growing table sum to about a third more than the last.
INDEX_REGROWTH = 2
# Recorded in the vector field's metadata: the rows the index was built for.
_BUILT_FOR = "ragd.index_rows"
# LanceDB surfaces I/O, commit-conflict and predicate failures as these types.
_LANCE_ERRORS = (OSError, RuntimeError, ValueError)


@contextmanager
def _lance_errors(action: str, directory: Path) -> Iterator[None]:
    """Turn LanceDB's failures into one StoreError naming the action and the directory."""
    try:
        yield
    except _LANCE_ERRORS as exc:
        raise StoreError(f"cannot {action} the LanceDB store at {directory}: {exc}") from exc


class VectorStore:
    """The LanceDB table of chunk vectors; build with `open` (writer) or `open_readonly`."""

    def __init__(
        self, directory: Path, table: Table | None, dim: int | None, *, writable: bool
    ) -> None:
        self._directory = directory
        self._table = table
        self._dim = dim
        self._writable = writable
        self._row_ids: ChunkIdsByRow | None = None  # kept by long-lived readers only

    @classmethod
    def open(cls, directory: Path, dim: int) -> VectorStore:
        """Open for writing, creating the directory and table if missing.

        Raises StoreError if the table holds vectors of another dimension (the model changed).
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        lancedb = import_lancedb()

        with _lance_errors("open", directory):
            directory.mkdir(parents=True, exist_ok=True)
            db = lancedb.connect(directory, session=session())
            if has_table(db):
                table = db.open_table(TABLE_NAME)
            else:
                table = db.create_table(TABLE_NAME, schema=table_schema(dim))
        existing = table_dim(table, directory)
        if existing != dim:
            raise StoreError(
                f"the LanceDB store at {directory} holds {existing}-dimensional vectors but the "
                f"embedding model gives {dim}",
                hint=f"the model changed: delete {directory} and re-index everything",
            )
        return cls(directory, table, dim, writable=True)

    @classmethod
    def open_readonly(cls, directory: Path, *, ids_in_memory: bool = False) -> VectorStore:
        """Open for reading; creates nothing. A missing directory or table reads as empty.

        With `ids_in_memory` the handle holds every row's chunk id (`ragd.row_ids`), read
        here (85 ms at 125k rows) and then those of newer rows once a search finds one, so
        searches need not read them from the table: for a reader of many queries.
        """
        store = cls(directory, None, None, writable=False)
        if ids_in_memory:
            store._row_ids = ChunkIdsByRow.empty()
        store._try_open_existing()
        return store

    def _try_open_existing(self) -> None:
        # lancedb.connect creates a missing directory, so check before connecting.
        if not self._directory.is_dir():
            return
        lancedb = import_lancedb()

        with _lance_errors("open", self._directory):
            db = lancedb.connect(self._directory, session=session())
            if not has_table(db):
                return  # no table yet: reads as empty
            table = db.open_table(TABLE_NAME)
        self._dim = table_dim(table, self._directory)
        self._table = table
        self._read_new_row_ids()

    def _writer_table(self) -> Table:
        if not self._writable or self._table is None:
            raise StoreError(f"the LanceDB store at {self._directory} was opened read-only")
        return self._table

    def replace_documents(
        self, doc_ids: Collection[str], rows: Sequence[VectorRow], *, new: Collection[str] = ()
    ) -> None:
        """Make `rows` the complete set of chunks of `doc_ids`, in one LanceDB commit.

        Upserts rows by chunk_id and deletes every other row of those documents; with no rows
        it deletes the documents. Replaying a call leaves the same state. Every row's doc_id
        must be in `doc_ids`. The filter lists all doc ids in one `IN (...)` whatever their
        number, so the commit stays atomic (5,000 ids: ~0.4 s at 100k rows); callers should
        batch in hundreds of documents, not tens of thousands.

        `new` names documents this table has never held. When every document is new the
        rows are appended: no upsert's join against every row of the table (a full tldr
        index: 4.5 -> 1.0 s here). A replay of such a call would duplicate rows, so the
        caller must know (the manifest lists every document before its rows are written).

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
        assert self._dim is not None  # a writable store always knows its dim
        data = rows_to_arrow(rows, self._dim)
        if not docs:
            return  # and so no rows either
        in_docs = sql_in("doc_id", docs)
        with _lance_errors("write to", self._directory):
            if not rows:
                table.delete(in_docs)
            elif known.issubset(new):
                table.add(data)
            else:
                (
                    table.merge_insert("chunk_id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(in_docs)
                    .execute(data)
                )

    def delete_chunks(self, chunk_ids: Collection[str]) -> None:
        """Delete chunks by id, one commit per batch of IN_BATCH ids (each is idempotent)."""
        table = self._writer_table()
        ids = list(dict.fromkeys(chunk_ids))
        with _lance_errors("delete from", self._directory):
            for start in range(0, len(ids), IN_BATCH):
                table.delete(sql_in("chunk_id", ids[start : start + IN_BATCH]))

    def chunk_ids(self) -> set[str]:
        """Every chunk id in the table (one scan of the chunk_id column)."""
        if self._table is None:
            return set()
        with _lance_errors("read", self._directory):
            result = self._table.search().select(["chunk_id"]).limit(None).to_arrow()
        return {str(v) for v in result["chunk_id"].to_pylist()}

    def count(self) -> int:
        """The number of rows."""
        if self._table is None:
            return 0
        with _lance_errors("read", self._directory):
            return int(self._table.count_rows())

    def search(self, vector: npt.NDArray[np.floating[Any]], limit: int) -> list[tuple[str, float]]:
        """The `limit` nearest chunks as (chunk_id, cosine similarity), best first.

        Zero vectors have no cosine similarity: LanceDB leaves them out, and a zero query
        returns []. Raises ValueError for a query of the wrong shape or with NaN/inf.
        """
        return self.start_search(vector, limit)()

    def start_search(
        self, vector: npt.NDArray[np.floating[Any]], limit: int
    ) -> Callable[[], list[tuple[str, float]]]:
        """Start `search` on LanceDB's own threads; the returned function waits for its
        result. The caller can do other work meanwhile (a hybrid query's BM25 search).

        Raises ValueError at once for a query of the wrong shape or with NaN/inf.
        """
        if self._table is None or limit <= 0:
            return lambda: []
        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (self._dim,):
            raise ValueError(f"query vector shape {query.shape}, expected ({self._dim},)")
        if not np.isfinite(query).all():
            raise ValueError("query vector has NaN or infinite values")
        by_row_id = self._row_ids is not None
        with _lance_errors("search", self._directory):
            nearest = start_nearest(self._table, query, limit, by_row_id=by_row_id)

        def result() -> list[tuple[str, float]]:
            with _lance_errors("search", self._directory):
                found = nearest()
            distances = found["_distance"].to_pylist()
            if "chunk_id" in found.column_names:
                ids: list[str | None] = found["chunk_id"].to_pylist()
            else:
                ids = self._chunk_ids_of(found["_rowid"].to_numpy())
            return [
                (str(chunk_id), 1.0 - float(distance))
                for chunk_id, distance in zip(ids, distances, strict=True)
                if chunk_id is not None and distance is not None and np.isfinite(distance)
            ]

        return result

    def _chunk_ids_of(self, rows: RowIdArray) -> list[str | None]:
        assert self._row_ids is not None and self._table is not None
        ids = self._row_ids.chunk_ids(rows)
        if None in ids:  # rows written since the ids were read: a few ms after a commit
            self._read_new_row_ids()
            ids = self._row_ids.chunk_ids(rows)
        if None in ids:  # below the highest held: not how LanceDB numbers rows; read all
            with _lance_errors("read", self._directory):
                self._row_ids = ChunkIdsByRow.from_arrow(row_id_scan(self._table))
            ids = self._row_ids.chunk_ids(rows)
        return ids

    def version_count(self) -> int:
        """How many table versions are kept on disk (each commit adds one until cleanup)."""
        if self._table is None:
            return 0
        with _lance_errors("read", self._directory):
            return len(self._table.list_versions())

    def has_vector_index(self) -> bool:
        """Whether the vector column has an ANN index (searches then use it)."""
        if self._table is None:
            return False
        with _lance_errors("read", self._directory):
            return any(index.columns == ["vector"] for index in self._table.list_indices())

    def ensure_vector_index(self, min_rows: int = VECTOR_INDEX_MIN_ROWS) -> bool:
        """Build the IVF_SQ vector index once the table holds `min_rows` rows, and again
        once it holds INDEX_REGROWTH times the rows it was built for; True if built.

        Rows written afterwards are searched exactly until `optimize` folds them in.
        """
        table = self._writer_table()
        built_for = self._index_built_for() if self.has_vector_index() else None
        rows = self.count()
        if rows < min_rows or (built_for is not None and rows < INDEX_REGROWTH * built_for):
            return False
        from lancedb.index import IvfSq

        partitions = max(1, rows // ROWS_PER_PARTITION)
        with _lance_errors("index", self._directory):
            table.create_index(
                "vector",
                config=IvfSq(
                    distance_type="cosine",
                    num_partitions=partitions,
                    sample_rate=IVF_SAMPLE_RATE,
                ),
            )
            table.update_field_metadata({"path": "vector", "metadata": {_BUILT_FOR: str(rows)}})
        return True

    def _index_built_for(self) -> int:
        """The rows the vector index was built for; 0 if not recorded (an older ragd built
        it, or a crash came between the build and the record), which builds it again."""
        assert self._table is not None
        with _lance_errors("read", self._directory):
            metadata = self._table.schema.field("vector").metadata or {}
        recorded = metadata.get(_BUILT_FOR.encode(), b"")
        return int(recorded) if recorded.isdigit() else 0

    def small_fragments(self) -> int:
        """How many data files are below LanceDB's target size (each commit adds one)."""
        if self._table is None:
            return 0
        with _lance_errors("read", self._directory):
            stats: Any = self._table.stats()  # a dict at run time, typed as a dataclass
        return int(stats["fragment_stats"]["num_small_fragments"])

    def settle(self, cleanup_older_than: timedelta) -> None:
        """After writes: build the vector index once big enough; compact once fragmented."""
        if self.small_fragments() >= COMPACT_AT_FRAGMENTS:
            self.optimize(cleanup_older_than)
        else:
            self.ensure_vector_index()

    def optimize(self, cleanup_older_than: timedelta) -> None:
        """Compact files, build or update the vector index, drop versions older than
        `cleanup_older_than`.

        Keep the age at minutes while readers run: a reader still on a removed version can
        fail. LanceDB warns (UserWarning) when it is zero.
        """
        table = self._writer_table()
        fault_point("during_compaction")
        with _lance_errors("optimize", self._directory):
            table.optimize(cleanup_older_than=cleanup_older_than)
        # After compacting: an index built over 451 small files and then compacted searched
        # in 4.8 ms at 125k rows; built over the one compacted file, 3.6 ms.
        self.ensure_vector_index()

    def refresh(self) -> None:
        """Move to the latest commit (a handle otherwise stays on the version it opened)."""
        if self._table is None:
            if not self._writable:
                self._try_open_existing()
            return
        with _lance_errors("refresh", self._directory):
            self._table.checkout_latest()  # type: ignore[no-untyped-call]  # untyped upstream

    def _read_new_row_ids(self) -> None:
        """Bring the held chunk ids up to the table's version: the rows above the highest
        row id held, or every row again once stale ones (rewritten by compaction) would
        outnumber live ones."""
        held = self._row_ids
        if held is None or self._table is None:
            return
        with _lance_errors("read", self._directory):
            newer = ChunkIdsByRow.from_arrow(row_id_scan(self._table, above=held.highest))
            if len(held) + len(newer) <= 2 * self._table.count_rows():
                held.extend(newer)
            else:
                self._row_ids = ChunkIdsByRow.from_arrow(row_id_scan(self._table))
