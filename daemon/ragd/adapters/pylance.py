"""Lance (PyPI `pylance`) behind one adapter: a writer's handle on a local chunk table.

A LanceDB table on disk is a Lance dataset, `<directory>/<table>.lance`. lancedb and lance
are two public APIs over the same format, and they cost very different amounts to start:
`import lancedb` takes ~1.7 s on an idle 2-core machine (most of it lance_namespace's
generated client models), `import lance` ~0.5 s. A process that only writes, such as a
one-shot `ragd index` after an edit, commits through lance and never imports lancedb (a
process that also searches writes through lancedb: ragd.stores.vectors decides). What such
a writer does rarely and lancedb does for ragd (building the vector index, compaction and
cleanup, a search) is handed to a lancedb handle on the same table, opened on first need;
after it, this handle moves to the commit lancedb made.

It also writes, reads and drops the scratch datasets of a Ray job (ragd.adapters.ray),
given as a URI and lance's storage options.

The two must agree commit for commit: tests/test_pylance_adapter.py runs the same writes
through both and compares rows, versions and statistics. They do only on the versions
tested (WRITES_TESTED, inclusive); on any other pair, or on object storage, writers use
lancedb alone (`writes_supported`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import numpy.typing as npt

from ragd.adapters.arrow import column_values, vector_batch, vector_schema
from ragd.adapters.lancedb import (
    METADATA_CACHE_BYTES,
    IvfSqIndex,
    VectorLocation,
    VectorTable,
    lance_errors,
    open_vector_table,
    table_dim,
)

if TYPE_CHECKING:
    import lance
    import pyarrow as pa

SUFFIX = ".lance"
# (lance, lancedb) major.minor ranges whose writes tests/test_pylance_adapter.py checked
# against lancedb's own, inclusive.
WRITES_TESTED = {"pylance": ((14, 0), (14, 0)), "lancedb": ((0, 40), (0, 40))}
# lancedb counts a fragment as small below this many rows, written (deleted rows count).
SMALL_FRAGMENT_ROWS = 100_000
# A writer's dataset caches, bounded like lancedb's session (ragd.adapters.lancedb). A writer
# never searches through lance: its index cache only needs room for what a merge reads.
INDEX_CACHE_BYTES = 16 << 20


def _tested(package: str) -> bool:
    try:
        major, minor = (int(part) for part in version(package).split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    low, high = WRITES_TESTED[package]
    return low <= (major, minor) <= high


@cache
def _versions_tested() -> bool:
    return all(_tested(package) for package in WRITES_TESTED)


def writes_supported(directory: VectorLocation) -> TypeGuard[Path]:
    """Whether a writer of tables under `directory` commits through lance: a local
    directory, and lance and lancedb at versions whose writes were tested to agree."""
    return isinstance(directory, Path) and _versions_tested()


def start_in_background() -> None:
    """Import lance on a thread, for a writer about to wait anyway."""
    threading.Thread(target=_import_lance, name="import-lance", daemon=True).start()


def _import_lance() -> None:
    import lance  # noqa: F401 (imported for its cost, ahead of the first write)


def dataset_tables(directory: Path) -> list[str]:
    """The names of the tables under a local database directory ([] when there is none),
    as lancedb lists them: one per `<name>.lance` directory."""
    if not directory.is_dir():
        return []
    with lance_errors("list the tables of", directory):
        return sorted(
            entry.name[: -len(SUFFIX)]
            for entry in directory.iterdir()
            if entry.name.endswith(SUFFIX) and entry.is_dir()
        )


def open_dataset_table(
    directory: Path, table_name: str, *, create_dim: int | None = None
) -> DatasetTable | None:
    """A writer's handle on table `table_name` under `directory`. With `create_dim`, the
    directory and table are created if missing; without, a missing one is None.

    StoreError if the table exists with columns other than ragd's.
    """
    uri = directory / f"{table_name}{SUFFIX}"
    with lance_errors("open", directory):
        import lance

        if not uri.is_dir():
            if create_dim is None:
                return None
            directory.mkdir(parents=True, exist_ok=True)
            empty = vector_schema(create_dim).empty_table()
            lance.write_dataset(empty, str(uri), mode="create")
        dataset = lance.dataset(
            str(uri),
            index_cache_size_bytes=INDEX_CACHE_BYTES,
            metadata_cache_size_bytes=METADATA_CACHE_BYTES,
        )
        dim = table_dim(dataset.schema, table_name, directory)
    return DatasetTable(dataset, directory, table_name, dim)


def write_dataset(table: pa.Table, uri: str, options: dict[str, str] | None) -> None:
    """Write `table` as a new dataset at `uri`."""
    import lance

    lance.write_dataset(table, uri, storage_options=options)


def dataset_batches(
    uri: str, options: dict[str, str] | None, columns: list[str], batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """The dataset at `uri`'s `columns`, in batches of up to `batch_rows` rows, read as
    they are iterated."""
    import lance

    dataset = lance.dataset(uri, storage_options=options)
    return iter(dataset.to_batches(columns=columns, batch_size=batch_rows))


def drop_dataset(uri: str, options: dict[str, str] | None) -> None:
    """Delete the dataset at `uri` and everything under it; nothing if there is none."""
    import lance

    lance.LanceDataset.drop(uri, storage_options=options, ignore_not_found=True)


class DatasetTable:
    """A writer's handle on a chunk table: writes and the statistics a writer reads through
    lance; the vector index, compaction and searches through lancedb (`VectorTable`)."""

    def __init__(self, dataset: lance.LanceDataset, directory: Path, name: str, dim: int) -> None:
        self._dataset = dataset
        self._directory = directory
        self._name = name
        self.dim = dim
        self._lancedb: VectorTable | None = None

    def _errors(self, action: str) -> AbstractContextManager[None]:
        return lance_errors(action, self._directory)

    # -- writes: each one lance commit, as `VectorTable`'s are one lancedb commit ----------

    def add(
        self, chunk_ids: list[str], doc_ids: list[str], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Append rows in one commit."""
        with self._errors("write to"):
            self._dataset.insert(vector_batch(chunk_ids, doc_ids, matrix))

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
        with self._errors("write to"):
            merge = (
                self._dataset.merge_insert("chunk_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
            )
            if delete_others_where is not None:
                merge = merge.when_not_matched_by_source_delete(delete_others_where)
            merge.execute(data)

    def delete(self, where: str) -> None:
        """Delete the rows matching a filter, in one commit."""
        with self._errors("delete from"):
            self._dataset.delete(where)

    # -- reads -----------------------------------------------------------------------------

    def column(self, name: str) -> Iterator[Any]:
        """Every row's value of one column, in no set order."""
        with self._errors("read"):
            found = self._dataset.to_table(columns=[name])
        return column_values(found, name)

    def count(self) -> int:
        """The number of rows."""
        with self._errors("read"):
            return int(self._dataset.count_rows())

    def start_nearest(
        self, query: npt.NDArray[np.float32], limit: int, doc_pattern: str | None = None
    ) -> Callable[[], list[tuple[str, float]]]:
        """`VectorTable.start_nearest`, through lancedb."""
        return self._through_lancedb().start_nearest(query, limit, doc_pattern)

    def hold_chunk_ids(self) -> bool:
        """`VectorTable.hold_chunk_ids`, through lancedb."""
        return self._through_lancedb().hold_chunk_ids()

    # -- versions, indices, housekeeping ---------------------------------------------------

    def refresh(self) -> None:
        """Move to the latest commit."""
        with self._errors("refresh"):
            self._dataset.checkout_latest()  # type: ignore[no-untyped-call]

    def version(self) -> int:
        """The version this handle reads (the newest commit it has seen)."""
        return int(self._dataset.version)

    def version_ages(self) -> dict[int, timedelta]:
        """How long ago each kept version was committed, by version number."""
        ages: dict[int, timedelta] = {}
        with self._errors("read"):
            listed = self._dataset.versions()
        for entry in listed:
            made = entry["timestamp"]
            if not isinstance(made, datetime):  # lance's annotation allows an int
                made = datetime.fromtimestamp(made)
            # lance reports local time, naive; compare it with the clock it was read from.
            now = datetime.now(made.tzinfo) if made.tzinfo else datetime.now()
            ages[int(entry["version"])] = now - made
        return ages

    def version_count(self) -> int:
        """How many table versions are kept on disk (each commit adds one until cleanup)."""
        with self._errors("read"):
            return len(self._dataset.versions())

    def _covered_by_index(self, column: str) -> set[int] | None:
        """The data files the index on `column` covers; None when it has none."""
        with self._errors("read"):
            indices = self._dataset.describe_indices()
        for index in indices:
            if index.field_names == [column]:
                return {f for segment in index.segments for f in segment.fragment_ids}
        return None

    def has_index(self, column: str) -> bool:
        """Whether `column` has an index."""
        return self._covered_by_index(column) is not None

    def unindexed_rows(self, column: str) -> int:
        """Rows the index on `column` does not cover: those of the data files it was not
        built or updated over; 0 when the column has no index."""
        covered = self._covered_by_index(column)
        if covered is None:
            return 0
        with self._errors("read"):
            return sum(
                fragment.count_rows()
                for fragment in self._dataset.get_fragments()
                if fragment.fragment_id not in covered
            )

    def small_fragments(self) -> int:
        """How many data files are below lancedb's target size (each commit adds one)."""
        with self._errors("read"):
            fragments = self._dataset.get_fragments()
        return sum(1 for f in fragments if f.metadata.physical_rows < SMALL_FRAGMENT_ROWS)

    def field_metadata(self, column: str) -> dict[str, str]:
        """The metadata recorded on a column."""
        raw = self._dataset.schema.field(column).metadata or {}
        return {key.decode(): value.decode() for key, value in raw.items()}

    def create_index(self, column: str, index: IvfSqIndex) -> None:
        """`VectorTable.create_index`, through lancedb (one commit)."""
        self._through_lancedb().create_index(column, index)
        self.refresh()

    def set_field_metadata(self, column: str, metadata: dict[str, str]) -> None:
        """`VectorTable.set_field_metadata`, through lancedb (one commit)."""
        self._through_lancedb().set_field_metadata(column, metadata)
        self.refresh()

    def optimize(self, cleanup_older_than: timedelta) -> None:
        """`VectorTable.optimize`, through lancedb."""
        self._through_lancedb().optimize(cleanup_older_than)
        self.refresh()

    def _through_lancedb(self) -> VectorTable:
        """lancedb's handle on this table, at the latest commit (this handle's or newer)."""
        if self._lancedb is None:
            self._lancedb = open_vector_table(self._directory, table_name=self._name)
            assert self._lancedb is not None  # this handle's table exists
        else:
            self._lancedb.refresh()
        return self._lancedb
