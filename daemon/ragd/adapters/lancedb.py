"""LanceDB behind one adapter: ragd's table of chunk vectors, through lancedb's public async API.

Owns everything ragd says to LanceDB: the process's connection session (with bounded
caches), opening, creating and dropping a table of chunk vectors (chunk_id, doc_id,
vector; one per model stage), its writes, scans, vector searches (filtered by a regular
expression over doc_id, inside the search), index and version housekeeping, and turning
LanceDB's failures into `StoreError`. What a row means and when to index or compact is
`ragd.stores.vectors`.

Every call runs on one event loop thread of this process. lancedb's synchronous API runs
the same coroutines on a loop of its own, but a vector search hands over to it several
times (schema reads, one per result batch); as one coroutine it is one hand-over, and
the caller can do other work while it runs (`VectorTable.start_nearest`).

lancedb is imported on first use (~1 s of pure-Python import): a run that changes nothing
never pays for it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from ragd.adapters.arrow import (
    ChunkIdsByRow,
    RowIdArray,
    column_values,
    vector_batch,
    vector_dim,
    vector_schema,
)
from ragd.adapters.object_store import OBJECT_STORE_HINT
from ragd.errors import StoreError

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import AsyncTable

T = TypeVar("T")
TABLE = "chunks"  # the first stage's; the default, as it was the only one
# LanceDB's caches of table metadata and index pages, shared by every handle in a process.
# Every commit adds a version whose metadata the cache keeps until it is full, though
# readers and the writer only read the latest: a small cache holds what they read, where a
# large one fills with dead versions for as long as the daemon runs (docs/soak.md). The
# index cache's size is the config's (`size_index_cache`).
METADATA_CACHE_BYTES = 8 << 20
INDEX_CACHE_BYTES = 256 << 20
# Where a database lives: a local directory, or an "s3://bucket/prefix" URI whose endpoint
# and credentials LanceDB reads from the standard AWS environment variables.
VectorLocation = Path | str
# LanceDB surfaces I/O, commit-conflict and predicate failures as these types.
_LANCE_ERRORS = (OSError, RuntimeError, ValueError)
# Holding chunk ids by row id leans on how Lance numbers rows: a row keeps its id, an id is
# never reused, and a row written later (added, an upsert's new copy, a compaction's
# rewrite) gets an id above every earlier one. tests/test_lancedb_adapter.py checks it
# through appends, upserts, deletes and compaction on these lancedb versions (inclusive);
# on any other, searches read the chunk_id column instead.
ROW_IDS_TESTED = ((0, 38), (0, 40))
# A cleanup (`optimize`) deletes the files of versions older than its cut-off while other
# handles read: a handle on such a version, or a listing of versions that meets a manifest
# deleted after it was listed, fails with Lance's "Not found" naming the file. The read is
# tried again, on the latest version, at most this many times in all (docs/soak.md), the
# n-th time after n pauses: a cleanup deletes file after file, and a read tried at once
# can meet the same cleanup's next deletion.
READ_ATTEMPTS = 4
READ_RETRY_PAUSE = 0.01  # seconds


class _Runtime:
    """lancedb, imported, with the session and the event loop every call of this process uses."""

    def __init__(self, index_cache_bytes: int) -> None:
        import lancedb

        self.lancedb = lancedb
        self.session = lancedb.Session(
            index_cache_size_bytes=index_cache_bytes,
            metadata_cache_size_bytes=METADATA_CACHE_BYTES,
        )
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="ragd-lancedb", daemon=True).start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = self.submit(coroutine)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()
_index_cache_bytes = INDEX_CACHE_BYTES


def size_index_cache(size_bytes: int) -> None:
    """Bytes of index pages the process's LanceDB session keeps; it takes effect when the
    session starts (the process's first LanceDB call), and a later call changes nothing."""
    global _index_cache_bytes  # read once, when the runtime starts
    with _runtime_lock:
        _index_cache_bytes = size_bytes


def runtime() -> _Runtime:
    """The process's LanceDB runtime, started (and lancedb imported) on first use."""
    global _runtime  # one per process, created on first use, never at import
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime(_index_cache_bytes)
        return _runtime


def row_ids_supported(lancedb_version: str) -> bool:
    """Whether holding chunk ids by row id was tested on this lancedb version."""
    try:
        major, minor = (int(part) for part in lancedb_version.split(".")[:2])
    except ValueError:
        return False
    low, high = ROW_IDS_TESTED
    return low <= (major, minor) <= high


@contextmanager
def lance_errors(action: str, directory: VectorLocation) -> Iterator[None]:
    """Turn LanceDB's failures into one StoreError naming the action and the directory."""
    try:
        yield
    except _LANCE_ERRORS as exc:
        hint = None if isinstance(directory, Path) else OBJECT_STORE_HINT
        raise StoreError(
            f"cannot {action} the LanceDB store at {directory}: {exc}", hint=hint
        ) from exc


def removed_by_cleanup(exc: BaseException) -> bool:
    """Whether a LanceDB failure is a read meeting a file that a cleanup deleted."""
    return isinstance(exc, _LANCE_ERRORS) and "Not found" in str(exc)


def beside_cleanups(run: Callable[[], T], *, before_again: Callable[[], None] | None = None) -> T:
    """`run()`, run again (after `before_again()`) while it meets a file a cleanup deleted:
    at most `READ_ATTEMPTS` times, the n-th after n pauses of `READ_RETRY_PAUSE`."""
    for attempt in range(1, READ_ATTEMPTS):
        try:
            return run()
        except _LANCE_ERRORS as exc:
            if not removed_by_cleanup(exc):
                raise
        time.sleep(READ_RETRY_PAUSE * attempt)
        if before_again is not None:
            before_again()
    return run()


def sql_string(value: str) -> str:
    """Quote `value` as a SQL string literal for a LanceDB filter (a `'` is doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Collection[str]) -> str:
    """A `column IN ('a', 'b', ...)` filter with every value quoted by `sql_string`."""
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


# An IVF_SQ search ranks by 8-bit codes; this many times the limit are ranked again by
# their full vectors. Many near-duplicate chunks (one page in many product versions) sit
# closer together than the codes tell apart. An exact search (no index) is unaffected.
REFINE_FACTOR = 2


@dataclass(frozen=True, slots=True)
class IvfSqIndex:
    """An IVF_SQ vector index of `partitions` clusters, k-means trained on LanceDB's default
    sample (256 rows per partition): a smaller sample builds faster but leaves partitions
    uneven, and a search of the crowded ones reads more rows for less recall."""

    partitions: int


def doc_filter(doc_pattern: str) -> str:
    """A filter keeping rows whose whole doc_id matches the regular expression."""
    return f"regexp_like(doc_id, {sql_string('^(?:' + doc_pattern + ')$')})"


def _missing(location: VectorLocation) -> bool:
    """Whether a local database directory is missing (an object store has no directories:
    an empty prefix lists no tables)."""
    return isinstance(location, Path) and not location.is_dir()


def _on_database(
    directory: VectorLocation, action: str, work: Callable[[Any], Coroutine[Any, Any, T]]
) -> T:
    """Run `work(database)` on the connection to `directory`; StoreError naming `action`."""
    with lance_errors(action, directory):
        return _run_on(str(directory), None, work)


def _run_on(
    uri: str, options: dict[str, str] | None, work: Callable[[Any], Coroutine[Any, Any, T]]
) -> T:
    """Run `work(database)` on the connection to `uri` (with object store `options`)."""
    lance = runtime()

    async def run() -> T:
        connect = lance.lancedb.connect_async
        return await work(await connect(uri, storage_options=options, session=lance.session))

    return lance.run(run())


def vector_tables(directory: VectorLocation) -> list[str]:
    """The names of the tables under `directory` ([] when there is none)."""
    if _missing(directory):
        return []

    async def names(db: Any) -> list[str]:
        return list((await db.list_tables()).tables)

    return _on_database(directory, "list the tables of", names)


def drop_vector_table(directory: VectorLocation, table: str) -> None:
    """Remove a table (its rows are derived; the caller writes them again)."""
    if table in vector_tables(directory):
        _on_database(directory, "drop a table of", lambda db: db.drop_table(table))


# -- scratch tables: a Ray job's work list and results (ragd.adapters.ray) -----------------
# Any columns, written once, read back once in batches and dropped; lancedb's own errors
# reach the caller, which names the step of its job that failed.


def write_scratch_table(
    uri: str, options: dict[str, str] | None, name: str, rows: pa.Table
) -> None:
    """Write `rows` as a new table `name` of the database at `uri`: the Lance dataset
    `<uri>/<name>.lance`."""
    _run_on(uri, options, lambda db: db.create_table(name, data=rows))


def scratch_batches(
    uri: str, options: dict[str, str] | None, name: str, columns: list[str], batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """Table `name`'s `columns` in batches of up to `batch_rows` rows, each read when the
    iteration reaches it."""
    lance = runtime()

    async def open_stream(db: Any) -> Any:
        table = await db.open_table(name)
        return await table.query().select(columns).to_batches(max_batch_length=batch_rows)

    stream = _run_on(uri, options, open_stream)
    while True:
        try:
            yield lance.run(stream.__anext__())
        except StopAsyncIteration:
            return


def drop_scratch_table(uri: str, options: dict[str, str] | None, name: str) -> None:
    """Delete table `name` and everything under it; nothing if there is none."""
    _run_on(uri, options, lambda db: db.drop_table(name, ignore_missing=True))


def open_vector_table(
    directory: VectorLocation,
    *,
    table_name: str = TABLE,
    create_dim: int | None = None,
    version: int | None = None,
) -> VectorTable | None:
    """The chunk table `table_name` under `directory`. With `create_dim`, the directory and
    table are created if missing; without, a missing one is None (nothing is created).
    With `version`, the handle reads that version of the table and stays on it.

    StoreError if the table exists with columns other than ragd's, or lacks `version`.
    """
    # lancedb.connect creates a missing directory, so check before connecting.
    if create_dim is None and _missing(directory):
        return None
    lance = runtime()

    async def open_table() -> AsyncTable | None:
        db = await lance.lancedb.connect_async(str(directory), session=lance.session)
        # Asked by name rather than by catching open_table's error, which would also hide
        # a damaged table behind "empty".
        table: AsyncTable
        if table_name in (await db.list_tables()).tables:
            table = await db.open_table(table_name)
        elif create_dim is None:
            return None
        else:
            table = await db.create_table(table_name, schema=vector_schema(create_dim))
        if version is not None:
            await table.checkout(version)
        return table

    with lance_errors("open", directory):
        if create_dim is not None and isinstance(directory, Path):
            directory.mkdir(parents=True, exist_ok=True)
        # Opening reads the newest manifest, which a commit and a cleanup can delete
        # after it was listed; a version asked for stays asked for.
        table = (
            beside_cleanups(lambda: lance.run(open_table()))
            if version is None
            else lance.run(open_table())
        )
        if table is None:
            return None
        schema = lance.run(table.schema())
    dim = table_dim(schema, table_name, directory)
    return VectorTable(lance, table, directory, dim, follows_latest=version is None)


def table_dim(schema: pa.Schema, table_name: str, directory: VectorLocation) -> int:
    """The vector width of a chunk table; StoreError if the table is not ragd's."""
    dim = vector_dim(schema)
    if dim is None:
        raise StoreError(
            f"the LanceDB table {table_name!r} in {directory} is not ragd's (columns "
            f"{sorted(schema.names)}, expected chunk_id, doc_id and a float32 vector)",
            hint=f"delete {directory} and re-index",
        )
    return dim


class VectorTable:
    """An open chunk table: its writes, reads and housekeeping, each one LanceDB call."""

    def __init__(
        self,
        lance: _Runtime,
        table: AsyncTable,
        directory: VectorLocation,
        dim: int,
        *,
        follows_latest: bool = True,
    ) -> None:
        self._lance = lance
        self._lance_table = table
        self._directory = directory
        self.dim = dim
        # False for a handle checked out at a version: it stays there, even when it is gone.
        self._follows_latest = follows_latest
        self._ids: ChunkIdsByRow | None = None  # held by long-lived readers only

    def _run(self, action: str, coroutine: Coroutine[Any, Any, T]) -> T:
        with lance_errors(action, self._directory):
            return self._lance.run(coroutine)

    def _read(
        self, action: str, read: Callable[[], Coroutine[Any, Any, T]], *, of_version: bool = True
    ) -> T:
        """`read()`, run again if a cleanup deleted a file it needed (`READ_ATTEMPTS`).

        A read `of_version` (the rows of the version the handle reads) is run again on the
        latest version, which a cleanup never deletes, unless the handle is checked out at
        a version; a listing of versions is simply run again, and then sees the cleanup's
        outcome.
        """
        with lance_errors(action, self._directory):
            if of_version and not self._follows_latest:
                return self._lance.run(read())
            return beside_cleanups(
                lambda: self._lance.run(read()),
                before_again=(lambda: self._move_to_latest(action)) if of_version else None,
            )

    def _move_to_latest(self, action: str) -> None:
        """Check out the latest commit. Finding it lists the versions and then reads the
        newest manifest; a commit and a cleanup in between delete the one it listed, so the
        checkout, like a listing, is run again (`READ_ATTEMPTS`)."""
        self._read(action, self._lance_table.checkout_latest, of_version=False)

    # -- writes ----------------------------------------------------------------------------

    def add(
        self, chunk_ids: list[str], doc_ids: list[str], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Append rows in one commit."""
        self._run("write to", self._lance_table.add(vector_batch(chunk_ids, doc_ids, matrix)))

    def upsert(
        self,
        chunk_ids: list[str],
        doc_ids: list[str],
        matrix: npt.NDArray[np.float32],
        *,
        delete_others_where: str | None,
    ) -> None:
        """Upsert rows by chunk_id and delete every other row matching the filter (if one
        is given), in one commit."""
        data = vector_batch(chunk_ids, doc_ids, matrix)
        merge = (
            self._lance_table.merge_insert("chunk_id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
        )
        if delete_others_where is not None:
            merge = merge.when_not_matched_by_source_delete(delete_others_where)
        self._run("write to", merge.execute(data))

    def delete(self, where: str) -> None:
        """Delete the rows matching a filter, in one commit."""
        self._run("delete from", self._lance_table.delete(where))

    # -- reads -----------------------------------------------------------------------------

    def column(self, name: str) -> Iterator[Any]:
        """Every row's value of one column, in no set order."""
        found = self._read("read", lambda: self._lance_table.query().select([name]).to_arrow())
        return column_values(found, name)

    def count(self) -> int:
        """The number of rows."""
        return int(self._read("read", self._lance_table.count_rows))

    def start_nearest(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        doc_pattern: str | None = None,
        *,
        probes: int,
    ) -> Callable[[], list[tuple[str, float]]]:
        """Start finding the `limit` rows nearest to `query` by cosine distance, among the
        rows whose whole doc_id matches `doc_pattern` when given, reading `probes` of the
        vector index's partitions; the returned function waits for them as (chunk_id,
        cosine similarity), best first.

        Rows with no cosine similarity (zero vectors) are left out. "_distance" is selected
        explicitly (that silences a deprecation warning per query); the metric is explicit
        because the default is L2. The filter applies before the nearest are chosen.
        """
        by_row_id = self._ids is not None

        def search() -> Coroutine[Any, Any, pa.Table]:
            nearest = self._lance_table.query().nearest_to(query).distance_type("cosine")
            nearest = nearest.limit(limit).nprobes(probes).refine_factor(REFINE_FACTOR)
            if doc_pattern is not None:
                nearest = nearest.where(doc_filter(doc_pattern))
            if by_row_id:
                return nearest.select(["_distance"]).with_row_id().to_arrow()
            return nearest.select(["chunk_id", "_distance"]).to_arrow()

        with lance_errors("search", self._directory):
            future = self._lance.submit(search())

        def result() -> list[tuple[str, float]]:
            try:
                with lance_errors("search", self._directory):
                    try:
                        found = future.result()
                    except BaseException:
                        future.cancel()
                        raise
            except StoreError as exc:
                if not (self._follows_latest and removed_by_cleanup(exc.__cause__ or exc)):
                    raise
                # Begun on a version a cleanup then deleted: searched again, on the latest.
                self._move_to_latest("refresh")
                found = self._read("search", search)
            if by_row_id:
                ids = self._chunk_ids_of(found["_rowid"].to_numpy())
                if None in ids:
                    # Reading the ids met a cleanup and moved the handle to the latest
                    # version, where compaction gave the rows found new row ids.
                    found = self._read("search", search)
                    ids = self._chunk_ids_of(found["_rowid"].to_numpy())
            else:
                ids = found["chunk_id"].to_pylist()
            distances = found["_distance"].to_pylist()
            return [
                (str(chunk_id), 1.0 - float(distance))
                for chunk_id, distance in zip(ids, distances, strict=True)
                if chunk_id is not None and distance is not None and np.isfinite(distance)
            ]

        return result

    # -- chunk ids held by row id (a fast path for long-lived readers) ---------------------

    def hold_chunk_ids(self) -> bool:
        """Read every row's chunk id now, and newer rows' when a search finds one, so that
        searches need not read the chunk_id column; False (nothing held) on a lancedb
        version this was not tested with."""
        if not row_ids_supported(version("lancedb")):
            return False
        self._ids = ChunkIdsByRow.empty()
        self._read_newer_chunk_ids()
        return True

    def _row_id_scan(self, above: int | None) -> pa.Table:
        def scan() -> Coroutine[Any, Any, pa.Table]:
            rows = self._lance_table.query().with_row_id().select(["chunk_id"])
            if above is not None:
                rows = rows.where(f"_rowid > {int(above)}")  # pruned by row id: a commit's rows
            return rows.to_arrow()

        return self._read("read", scan)

    def _chunk_ids_of(self, rows: RowIdArray) -> list[str | None]:
        assert self._ids is not None
        ids = self._ids.chunk_ids(rows)
        if None in ids:  # rows written since the ids were read: a few ms after a commit
            self._read_newer_chunk_ids()
            ids = self._ids.chunk_ids(rows)
        if None in ids:  # below the highest held: not how Lance numbers rows; read all
            self._ids = ChunkIdsByRow.from_arrow(self._row_id_scan(None))
            ids = self._ids.chunk_ids(rows)
        return ids

    def _read_newer_chunk_ids(self) -> None:
        """Bring the held chunk ids up to the table's version: the rows above the highest
        held, or every row again once stale ones (rewritten by compaction) would outnumber
        live ones."""
        held = self._ids
        if held is None:
            return
        newer = ChunkIdsByRow.from_arrow(self._row_id_scan(held.highest))
        if len(held) + len(newer) <= 2 * self.count():
            held.extend(newer)
        else:
            self._ids = ChunkIdsByRow.from_arrow(self._row_id_scan(None))

    # -- versions, indices, housekeeping ---------------------------------------------------

    def refresh(self) -> None:
        """Move to the latest commit (a handle otherwise stays on the version it opened)."""
        self._move_to_latest("refresh")

    def version(self) -> int:
        """The version this handle reads (the newest commit it has seen)."""
        return int(self._run("read", self._lance_table.version()))

    def version_ages(self) -> dict[int, timedelta]:
        """How long ago each kept version was committed, by version number."""
        from datetime import datetime

        listed = self._read("read", self._lance_table.list_versions, of_version=False)
        ages: dict[int, timedelta] = {}
        for entry in listed:
            made: datetime = entry["timestamp"]
            # lance reports local time, naive; compare it with the clock it was read from.
            now = datetime.now(made.tzinfo) if made.tzinfo else datetime.now()
            ages[int(entry["version"])] = now - made
        return ages

    def version_count(self) -> int:
        """How many table versions are kept on disk (each commit adds one until cleanup)."""
        return len(self._read("read", self._lance_table.list_versions, of_version=False))

    def has_index(self, column: str) -> bool:
        """Whether `column` has an index."""
        indices = self._read("read", self._lance_table.list_indices)
        return any(index.columns == [column] for index in indices)

    def create_index(self, column: str, index: IvfSqIndex) -> None:
        """Build (or rebuild) an IVF_SQ cosine index on a vector column."""
        from lancedb.index import IvfSq

        config = IvfSq(distance_type="cosine", num_partitions=index.partitions)
        # lancedb's annotation of `config` omits IvfSq; its own check at run time lists it.
        self._run("index", self._lance_table.create_index(column, config=config))  # type: ignore[arg-type]

    def create_key_index(self, column: str) -> None:
        """Build (or rebuild) a BTree index on a string column: an upsert's join on it and
        a delete filtering on it look rows up instead of reading the whole column."""
        from lancedb.index import BTree

        self._run("index", self._lance_table.create_index(column, config=BTree()))

    def field_metadata(self, column: str) -> dict[str, str]:
        """The metadata recorded on a column."""
        schema = self._run("read", self._lance_table.schema())
        raw = schema.field(column).metadata or {}
        return {key.decode(): value.decode() for key, value in raw.items()}

    def set_field_metadata(self, column: str, metadata: dict[str, str]) -> None:
        """Record metadata on a column (one commit)."""
        update = {"path": column, "metadata": metadata}
        self._run("index", self._lance_table.update_field_metadata(update))

    def small_fragments(self) -> int:
        """How many data files are below LanceDB's target size (each commit adds one)."""
        stats: Any = self._read("read", self._lance_table.stats)
        fragments = stats["fragment_stats"] if isinstance(stats, dict) else stats.fragment_stats
        small = (
            fragments["num_small_fragments"]
            if isinstance(fragments, dict)
            else fragments.num_small_fragments
        )
        return int(small)

    def unindexed_rows(self, column: str) -> int:
        """Rows the index on `column` does not cover (written or rewritten since it was
        built or last updated); 0 when the column has no index."""
        for index in self._read("read", self._lance_table.list_indices):
            if index.columns == [column]:
                stats = self._run("read", self._lance_table.index_stats(index.name))
                return 0 if stats is None else int(stats.num_unindexed_rows)
        return 0

    def optimize(self, cleanup_older_than: timedelta) -> None:
        """Compact files, fold new rows into the indices, drop versions older than the age."""
        optimize = self._lance_table.optimize(cleanup_older_than=cleanup_older_than)
        self._run("optimize", optimize)
