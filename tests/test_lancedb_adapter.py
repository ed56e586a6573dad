"""The LanceDB adapter: chunk ids held by row id (a fast path for long-lived readers) find
exactly what reading the chunk_id column finds, and only on lancedb versions tested; tables
are listed, opened and refused as ragd's stores need; scratch tables are written, read back
in batches and dropped."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from ragd.adapters import lancedb as adapter
from ragd.adapters.arrow import ChunkIdsByRow, use_system_allocator, vector_batch
from ragd.embedding.static import Model2VecEmbedder
from ragd.errors import StoreError
from ragd.stores.vectors import VectorRow, VectorStore
from tests.conftest import MODEL_DIR
from tests.test_model2vec_adapter import corpus_chunk_texts
from tests.test_vectors import DIM, make_rows


def held(rows: list[int], ids: list[str]) -> ChunkIdsByRow:
    return ChunkIdsByRow(np.array(rows, dtype=np.uint64), pa.array(ids, type=pa.string()))


def row_ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def test_chunk_ids_are_found_by_row_id_whatever_order_they_were_read_in() -> None:
    ids = held([7, 1 << 32, 3, 1], ["c", "d", "a", "b"])

    assert ids.chunk_ids(row_ids(3, 1 << 32, 7)) == ["a", "d", "c"]


def test_a_row_id_not_held_has_no_chunk_id() -> None:
    ids = held([1, 3, 7], ["a", "b", "c"])

    assert ids.chunk_ids(row_ids(5, 7, 9, 0)) == [None, "c", None, None]
    assert ChunkIdsByRow.empty().chunk_ids(row_ids(1)) == [None]


def test_rows_added_later_must_have_higher_row_ids() -> None:
    ids = held([1, 5], ["a", "b"])
    ids.extend(held([8, 9], ["d", "e"]))

    assert ids.chunk_ids(row_ids(1, 8, 9)) == ["a", "d", "e"]
    assert len(ids) == 4
    with pytest.raises(ValueError, match="not above"):
        ids.extend(held([6], ["b"]))


def test_arrow_buffers_come_from_malloc_once_the_system_allocator_is_chosen() -> None:
    chosen_before = pa.default_memory_pool()
    try:
        use_system_allocator()
        malloc = pa.system_memory_pool()
        before = malloc.bytes_allocated()
        ids = [f"chunk-{n:06d}" for n in range(10_000)]

        batch = vector_batch(ids, ids, np.zeros((len(ids), 4), dtype=np.float32))

        assert pa.default_memory_pool().backend_name == "system"
        assert malloc.bytes_allocated() - before >= 2 * 12 * len(ids)  # both id columns
        del batch
    finally:
        pa.set_memory_pool(chosen_before)


def test_the_installed_lancedb_is_a_version_holding_chunk_ids_was_tested_with() -> None:
    # CI installs the newest lancedb in pyproject's range: one outside the tested versions
    # fails here, so the range and ROW_IDS_TESTED move together.
    assert adapter.row_ids_supported(version("lancedb"))


def test_an_untested_lancedb_version_reads_the_chunk_id_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    VectorStore.open(tmp_path / "lancedb", DIM).replace_documents(
        ["docs:a.md"], make_rows("docs:a.md", 5, np.random.default_rng(1))
    )
    monkeypatch.setattr(adapter, "ROW_IDS_TESTED", ((0, 1), (0, 2)))
    table = adapter.open_vector_table(tmp_path / "lancedb")

    assert table is not None
    assert table.hold_chunk_ids() is False
    assert not adapter.row_ids_supported("0.3.0") and not adapter.row_ids_supported("x")


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


def test_held_chunk_ids_find_what_the_chunk_id_column_finds_on_a_real_corpus(
    tmp_path: Path,
) -> None:
    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)
    texts = corpus_chunk_texts()[:3000]
    vectors = embedder.embed(texts)
    writer = VectorStore.open(tmp_path / "lancedb", embedder.dim)
    for start in range(0, len(texts), 1000):  # three commits, as a pass writes them
        doc = f"docs:{start}"
        rows = [VectorRow(f"{doc}#{n}", doc, vectors[start + n]) for n in range(1000)]
        writer.replace_documents([doc], rows, new=[doc])
    holding = VectorStore.open_readonly(tmp_path / "lancedb", ids_in_memory=True)
    reading = VectorStore.open_readonly(tmp_path / "lancedb")

    queries = embedder.embed(texts[::37])

    assert [holding.search(q, 10) for q in queries] == [reading.search(q, 10) for q in queries]


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
    table = adapter.open_vector_table(tmp_path / "lancedb")
    assert table is not None and table.hold_chunk_ids()
    query = np.ones(DIM, dtype=np.float32)
    best = VectorStore.open_readonly(tmp_path / "lancedb").search(query, 5)
    # What a LanceDB that reused or renumbered row ids would look like to the reader.
    table._ids = held([1 << 62], ["stale"])

    assert [(c, s) for c, s in table.start_nearest(query, 5, probes=20)()] == best


def test_held_chunk_ids_are_read_again_once_gone_rows_would_outnumber_live_ones(
    tmp_path: Path, writer: VectorStore
) -> None:
    table = adapter.open_vector_table(tmp_path / "lancedb")
    assert table is not None and table.hold_chunk_ids()
    writer.replace_documents(["docs:b.md"], [])
    writer.delete_chunks([f"docs:a.md#{i}" for i in range(150)])
    late = make_rows("docs:c.md", 5, np.random.default_rng(5))
    writer.replace_documents(["docs:c.md"], late, new=["docs:c.md"])
    table.refresh()

    assert table.start_nearest(late[0].vector, 1, probes=20)()[0][0] == late[0].chunk_id
    assert table._ids is not None
    assert len(table._ids) == table.count() == 55


# Tables, as ragd's writers and readers meet them.


def test_tables_are_the_lance_datasets_under_the_directory_and_nothing_else(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "db"
    adapter.open_vector_table(directory, create_dim=DIM)
    adapter.open_vector_table(directory, table_name="second_stage_abc", create_dim=DIM)
    (directory / "notes").mkdir()
    (directory / "stray.lance").write_text("a file, not a table")

    assert sorted(adapter.vector_tables(directory)) == ["chunks", "second_stage_abc"]
    assert adapter.vector_tables(tmp_path / "missing") == []


def test_a_write_lancedb_refuses_is_a_store_error_naming_the_directory(tmp_path: Path) -> None:
    table = adapter.open_vector_table(tmp_path / "db", create_dim=DIM)
    assert table is not None

    with pytest.raises(StoreError, match=r"cannot delete from the LanceDB store at .*db"):
        table.delete("chunk_id = ((")
    assert table.count() == 0


def test_a_table_with_other_columns_is_refused_on_opening(tmp_path: Path) -> None:
    import lancedb

    lancedb.connect(tmp_path / "db").create_table("chunks", pa.table({"text": ["x"]}))

    with pytest.raises(StoreError, match="is not ragd's"):
        adapter.open_vector_table(tmp_path / "db")


def test_a_missing_table_is_none_unless_asked_to_create_it(tmp_path: Path) -> None:
    assert adapter.open_vector_table(tmp_path / "db") is None
    assert not (tmp_path / "db").exists()


# Scratch tables: a Ray job's work list and results, which lance_ray reads and writes as
# the Lance datasets `<database>/<name>.lance`.


def test_a_scratch_table_reads_back_its_rows_in_batches_of_the_size_asked(
    tmp_path: Path,
) -> None:
    rows = pa.table({"embed_key": [f"k{n}" for n in range(10)], "text": ["t"] * 10})
    adapter.write_scratch_table(str(tmp_path), None, "job-work", rows)

    batches = list(adapter.scratch_batches(str(tmp_path), None, "job-work", ["embed_key"], 4))

    assert [batch.num_rows for batch in batches] == [4, 4, 2]
    assert [key for b in batches for key in b.column("embed_key").to_pylist()] == [
        f"k{n}" for n in range(10)
    ]
    assert batches[0].schema.names == ["embed_key"]
    assert (tmp_path / "job-work.lance").is_dir()


def test_dropping_a_scratch_table_removes_its_dataset_and_a_missing_one_is_no_error(
    tmp_path: Path,
) -> None:
    adapter.write_scratch_table(str(tmp_path), None, "job-work", pa.table({"k": ["a"]}))

    adapter.drop_scratch_table(str(tmp_path), None, "job-work")
    adapter.drop_scratch_table(str(tmp_path), None, "job-vectors")

    assert list(tmp_path.iterdir()) == []
