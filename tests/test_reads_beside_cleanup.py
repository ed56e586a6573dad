"""Reads of a real LanceDB table answer while its writer compacts and cleans up every few
commits (issue 49: a status call answered 503 beside a compaction).

A cleanup deletes the manifests and data files of versions older than its cut-off while
other handles read. The cut-off here is a millisecond, so every cleanup deletes what a
reader may be in the middle of reading; the daemon's is seconds to minutes, where the same
race is rarer (docs/soak.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from ragd.adapters import lancedb as adapter
from ragd.errors import StoreError
from ragd.stores.vectors import VectorRow, VectorStore

if TYPE_CHECKING:
    from lancedb.table import AsyncTable

DIM = 8
DOCS = 20
COMMITS = 120
COMMITS_PER_CLEANUP = 4
CLEANUP_AGE = timedelta(milliseconds=1)


def rows_of(doc: int, rng: np.random.Generator) -> list[VectorRow]:
    vectors = rng.standard_normal((3, DIM)).astype(np.float32)
    return [VectorRow(f"docs:{doc}.md#{i}", f"docs:{doc}.md", v) for i, v in enumerate(vectors)]


def seeded(directory: Path) -> VectorStore:
    """A writer on a table of `DOCS` documents of 3 chunks each."""
    rng = np.random.default_rng(11)
    writer = VectorStore.open(directory, DIM)
    for doc in range(DOCS):
        writer.upsert(rows_of(doc, rng))
    return writer


def failures_beside_cleanups(
    writer: VectorStore, read: Callable[[], object], *, threads: int = 2
) -> list[str]:
    """What `read` raised, called over and over in `threads` threads while `writer`
    upserts `COMMITS` times, compacting and cleaning up every `COMMITS_PER_CLEANUP` commits."""
    rng = np.random.default_rng(7)
    done = threading.Event()
    failures: list[str] = []

    def keep_reading() -> None:
        while not done.is_set():
            try:
                read()
            except (StoreError, AssertionError) as exc:
                failures.append(str(exc))

    readers = [threading.Thread(target=keep_reading) for _ in range(threads)]
    for reader in readers:
        reader.start()
    try:
        for commit in range(COMMITS):
            writer.upsert(rows_of(commit % DOCS, rng))
            if commit % COMMITS_PER_CLEANUP == 0:
                writer.optimize(CLEANUP_AGE)
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert writer.count() == 3 * DOCS
    return failures


def test_counting_the_kept_versions_answers_while_cleanups_delete_them(tmp_path: Path) -> None:
    # What /v1/status reports as lancedb_versions: a listing that met a manifest deleted
    # after it was listed failed with "Not found" and the status call with 503.
    writer = seeded(tmp_path / "lancedb")
    reader = VectorStore.open_readonly(tmp_path / "lancedb")

    assert failures_beside_cleanups(writer, reader.version_count) == []


def test_a_new_read_only_handle_counts_and_lists_rows_while_cleanups_run(tmp_path: Path) -> None:
    # What each status report does: open the latest version, count it, read its chunk ids.
    directory = tmp_path / "lancedb"
    writer = seeded(directory)

    def status_read() -> None:
        store = VectorStore.open_readonly(directory)
        assert store.count() == 3 * DOCS
        assert len(store.chunk_ids()) == 3 * DOCS

    assert failures_beside_cleanups(writer, status_read) == []


def test_a_long_lived_reader_keeps_searching_while_cleanups_delete_its_version(
    tmp_path: Path,
) -> None:
    # The daemon's readers: one handle holding chunk ids, refreshed now and then, searched
    # between refreshes; a cleanup can delete the files of the version it is on.
    directory = tmp_path / "lancedb"
    writer = seeded(directory)
    reader = VectorStore.open_readonly(directory, ids_in_memory=True)
    query = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    searches = 0

    def search() -> None:
        nonlocal searches
        searches += 1
        if searches % 4 == 0:
            reader.refresh()
        hits = reader.search(query, limit=5)
        assert len(hits) == 5
        assert all(chunk_id.startswith("docs:") for chunk_id, _ in hits)

    # One thread: the daemon searches a handle under its readers' lock (ragd.service.readers).
    assert failures_beside_cleanups(writer, search, threads=1) == []


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_a_handle_pinned_to_a_version_a_cleanup_deleted_fails_rather_than_move(
    tmp_path: Path,
) -> None:
    # A replica serves the version its generation names, or says it cannot: never another.
    rng = np.random.default_rng(5)
    directory = tmp_path / "lancedb"
    writer = VectorStore.open(directory, DIM)
    writer.upsert(rows_of(0, rng))
    pinned = VectorStore.open_readonly(directory, version=writer.version())
    for doc in range(1, 4):
        writer.upsert(rows_of(doc, rng))

    writer.optimize(cleanup_older_than=timedelta(0))

    with pytest.raises(StoreError, match="Not found"):
        pinned.chunk_ids()


class ManifestsDeletedBeneath:
    """A real table whose first `times` listings of its versions fail as Lance's do when a
    cleanup deletes a manifest between the listing and its read, and whose first checkout
    of the latest commit fails as when a commit and a cleanup land between its listing and
    its read of the newest one (the CI failures this guards; the races are too narrow to
    force on a real table every run)."""

    def __init__(self, table: Any, times: int = 1) -> None:
        self._table = table
        self._times = times
        self.checkouts = self.listings = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    async def checkout_latest(self) -> None:
        self.checkouts += 1
        if self.checkouts <= self._times:
            raise self.not_found()
        await self._table.checkout_latest()

    async def list_versions(self) -> Any:
        self.listings += 1
        if self.listings <= self._times:
            raise self.not_found()
        return await self._table.list_versions()

    @staticmethod
    def not_found() -> RuntimeError:
        return RuntimeError(
            "lance error: LanceError(IO): Not found: lancedb/chunks.lance/_versions/"
            "18446744073709551442.manifest"
        )


def reader_on(directory: Path, table: ManifestsDeletedBeneath) -> adapter.VectorTable:
    return adapter.VectorTable(adapter.runtime(), cast("AsyncTable", table), directory, DIM)


def real_table(directory: Path) -> Any:
    lance = adapter.runtime()

    async def open_table() -> Any:
        db = await lance.lancedb.connect_async(str(directory), session=lance.session)
        return await db.open_table("chunks")

    return lance.run(open_table())


def test_a_refresh_that_meets_the_newest_manifest_deleted_is_run_again(tmp_path: Path) -> None:
    directory = tmp_path / "lancedb"
    writer = seeded(directory)
    table = ManifestsDeletedBeneath(real_table(directory))
    reader = reader_on(directory, table)
    writer.upsert(rows_of(0, np.random.default_rng(1)))

    reader.refresh()

    assert table.checkouts == 2
    assert reader.version() == writer.version()


def test_a_listing_that_meets_deleted_manifests_on_all_but_its_last_attempt_answers(
    tmp_path: Path,
) -> None:
    # A cleanup deletes file after file: the retries pause so as not to meet the same one's.
    directory = tmp_path / "lancedb"
    writer = seeded(directory)
    table = ManifestsDeletedBeneath(real_table(directory), times=adapter.READ_ATTEMPTS - 1)

    assert reader_on(directory, table).version_count() == writer.version_count()
    assert table.listings == adapter.READ_ATTEMPTS


def test_a_listing_that_meets_deleted_manifests_on_every_attempt_fails_naming_the_store(
    tmp_path: Path,
) -> None:
    # The bound: READ_ATTEMPTS reads, not a loop for as long as cleanups run.
    directory = tmp_path / "lancedb"
    seeded(directory)
    table = ManifestsDeletedBeneath(real_table(directory), times=adapter.READ_ATTEMPTS)

    with pytest.raises(StoreError, match=r"cannot read the LanceDB store at .*Not found"):
        reader_on(directory, table).version_count()
    assert table.listings == adapter.READ_ATTEMPTS


def test_only_a_file_a_cleanup_deleted_makes_a_read_run_again() -> None:
    calls: list[str] = []

    def damaged() -> None:
        calls.append("read")
        raise OSError("lance error: corrupt file: data/1.lance")

    with pytest.raises(OSError, match="corrupt"):
        adapter.beside_cleanups(damaged, before_again=lambda: calls.append("move"))
    assert calls == ["read"]


def test_a_read_run_again_is_first_moved_to_the_latest_version() -> None:
    calls: list[str] = []

    def read() -> int:
        calls.append("read")
        if calls.count("read") < 3:
            raise ManifestsDeletedBeneath.not_found()
        return 7

    assert adapter.beside_cleanups(read, before_again=lambda: calls.append("move")) == 7
    assert calls == ["read", "move", "read", "move", "read"]
