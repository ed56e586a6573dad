"""Chunk ids held by row id: the map itself, and a reader using it against real LanceDB."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ragd.lance_queries
import ragd.vectors
from ragd.row_ids import ChunkIdsByRow
from ragd.vectors import VectorStore
from tests.test_vectors import DIM, make_rows


def held(rows: list[int], chunk_ids: list[str]) -> ChunkIdsByRow:
    return ChunkIdsByRow.from_arrow(
        pa.table({"_rowid": pa.array(rows, pa.uint64()), "chunk_id": chunk_ids})
    )


def row_ids(*values: int) -> np.ndarray[Any, np.dtype[np.uint64]]:
    return np.array(values, dtype=np.uint64)


def test_chunk_ids_are_found_by_row_id_whatever_order_they_were_read_in() -> None:
    ids = held([7, 1 << 32, 3], ["c", "d", "a"])

    assert ids.chunk_ids(row_ids(3, 1 << 32, 7)) == ["a", "d", "c"]
    assert ids.highest == 1 << 32


def test_a_row_id_not_held_has_no_chunk_id() -> None:
    ids = held([3, 7], ["a", "c"])

    assert ids.chunk_ids(row_ids(5, 7, 9, 0)) == [None, "c", None, None]
    assert ChunkIdsByRow.empty().chunk_ids(row_ids(1)) == [None]


def test_rows_added_later_must_have_higher_row_ids() -> None:
    ids = held([3, 7], ["a", "c"])
    ids.extend(held([9, 8], ["e", "d"]))

    assert ids.chunk_ids(row_ids(3, 8, 9)) == ["a", "d", "e"]
    assert len(ids) == 4
    with pytest.raises(ValueError, match="not above"):
        ids.extend(held([6], ["b"]))


# A reader holding chunk ids against one reading them from the table, after each kind of write.


def append(writer: VectorStore, rng: np.random.Generator) -> None:
    writer.replace_documents(["docs:c.md"], make_rows("docs:c.md", 40, rng), new=["docs:c.md"])


def upsert(writer: VectorStore, rng: np.random.Generator) -> None:
    # The first 30 chunk ids stay with new vectors, 10 are new, the rest go.
    rows = make_rows("docs:a.md", 30, rng) + make_rows("docs:a.md", 10, rng, prefix="new-")
    writer.replace_documents(["docs:a.md"], rows)


def delete_document(writer: VectorStore, rng: np.random.Generator) -> None:
    writer.replace_documents(["docs:b.md"], [])


def delete_chunks(writer: VectorStore, rng: np.random.Generator) -> None:
    writer.delete_chunks([f"docs:a.md#{i}" for i in range(0, 200, 3)])


def compaction(writer: VectorStore, rng: np.random.Generator) -> None:
    writer.optimize(cleanup_older_than=timedelta(minutes=10))


WRITES: list[Callable[[VectorStore, np.random.Generator], None]] = [
    append,
    upsert,
    delete_document,
    delete_chunks,
    compaction,
]


@pytest.fixture
def writer(tmp_path: Path) -> VectorStore:
    rng = np.random.default_rng(7)
    store = VectorStore.open(tmp_path / "lancedb", DIM)
    for doc in ("docs:a.md", "docs:b.md"):
        store.replace_documents([doc], make_rows(doc, 200, rng), new=[doc])
    store.ensure_vector_index(min_rows=400)
    return store


@pytest.mark.parametrize("write", WRITES, ids=lambda w: w.__name__)
def test_a_reader_holding_chunk_ids_finds_what_a_reader_of_the_table_finds(
    tmp_path: Path, writer: VectorStore, write: Callable[[VectorStore, np.random.Generator], None]
) -> None:
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    reading = VectorStore.open_readonly(tmp_path / "lancedb")
    write(writer, np.random.default_rng(11))

    holding.refresh()
    reading.refresh()

    queries = np.random.default_rng(3).standard_normal((30, DIM)).astype(np.float32)
    found = [holding.search(q, 10) for q in queries]
    assert found == [reading.search(q, 10) for q in queries]
    assert all(len(hits) == 10 for hits in found)
    assert {chunk for hits in found for chunk, _ in hits} <= writer.chunk_ids()


def test_a_reader_holding_chunk_ids_finds_rows_written_after_it_opened(
    tmp_path: Path, writer: VectorStore
) -> None:
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    late = make_rows("docs:c.md", 5, np.random.default_rng(5))
    writer.replace_documents(["docs:c.md"], late, new=["docs:c.md"])

    holding.refresh()

    assert [holding.search(row.vector, 1)[0][0] for row in late] == [r.chunk_id for r in late]


def test_a_reader_holding_chunk_ids_opened_before_the_table_existed_finds_its_rows(
    tmp_path: Path,
) -> None:
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    rows = make_rows("docs:a.md", 5, np.random.default_rng(5))
    VectorStore.open(tmp_path / "lancedb", DIM).replace_documents(["docs:a.md"], rows)

    holding.refresh()

    assert [holding.search(row.vector, 1)[0][0] for row in rows] == [r.chunk_id for r in rows]


def test_a_reader_missing_a_row_id_below_those_it_holds_reads_every_row_again(
    tmp_path: Path, writer: VectorStore
) -> None:
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    query = np.ones(DIM, dtype=np.float32)
    best = VectorStore.open_readonly(tmp_path / "lancedb").search(query, 5)
    # What a LanceDB that reused or renumbered row ids would look like to the reader.
    holding._row_ids = held([1 << 62], ["stale"])

    assert holding.search(query, 5) == best


def test_a_reader_holding_chunk_ids_searches_by_row_id(
    tmp_path: Path, writer: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    start = ragd.lance_queries.start_nearest  # what ragd.vectors calls

    def spy(*args: Any, by_row_id: bool) -> Any:
        asked.append(by_row_id)
        return start(*args, by_row_id=by_row_id)

    monkeypatch.setattr(ragd.vectors, "start_nearest", spy)
    query = np.ones(DIM, dtype=np.float32)
    VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True).search(query, 3)
    VectorStore.open_readonly(tmp_path / "lancedb").search(query, 3)

    assert asked == [True, False]


def test_held_chunk_ids_are_read_again_once_gone_rows_would_outnumber_live_ones(
    tmp_path: Path, writer: VectorStore
) -> None:
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    writer.replace_documents(["docs:b.md"], [])
    writer.delete_chunks([f"docs:a.md#{i}" for i in range(150)])
    late = make_rows("docs:c.md", 5, np.random.default_rng(5))
    writer.replace_documents(["docs:c.md"], late, new=["docs:c.md"])
    holding.refresh()

    assert holding.search(late[0].vector, 1)[0][0] == late[0].chunk_id
    assert holding._row_ids is not None
    assert len(holding._row_ids) == holding.count() == 55
