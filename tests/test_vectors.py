"""VectorStore against a real LanceDB table in tmp_path, with small seeded random vectors."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from ragd.adapters import lancedb as adapter
from ragd.adapters.lancedb import sql_in, sql_string
from ragd.errors import StoreError
from ragd.stores.vectors import COMPACT_AT_FRAGMENTS, IN_BATCH, VectorRow, VectorStore

DIM = 8
QUOTED_DOC = 'docs:it\'s a "test".md'


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(42)


@pytest.fixture
def store(tmp_path: Path) -> VectorStore:
    return VectorStore.open(tmp_path / "lancedb", DIM)


def make_rows(doc_id: str, n: int, rng: np.random.Generator, prefix: str = "") -> list[VectorRow]:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return [VectorRow(f"{prefix}{doc_id}#{i}", doc_id, vectors[i]) for i in range(n)]


def ids(rows: Iterable[VectorRow]) -> set[str]:
    return {r.chunk_id for r in rows}


def test_sql_string_doubles_single_quotes() -> None:
    assert sql_string("it's") == "'it''s'"
    assert sql_in("doc_id", ["a", "b'c"]) == "doc_id IN ('a', 'b''c')"


def test_replace_then_search_returns_ids_best_first(
    store: VectorStore, rng: np.random.Generator
) -> None:
    rows = make_rows("docs:a.md", 5, rng) + make_rows("docs:b.md", 5, rng)
    store.replace_documents(["docs:a.md", "docs:b.md"], rows)
    target = rows[7]

    hits = store.search(target.vector, limit=4)

    assert hits[0][0] == target.chunk_id
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(hits) == 4


def test_replace_documents_removes_old_chunks_and_keeps_other_documents(
    store: VectorStore, rng: np.random.Generator
) -> None:
    a_old, b = make_rows("docs:a.md", 4, rng), make_rows("docs:b.md", 3, rng)
    store.replace_documents(["docs:a.md", "docs:b.md"], a_old + b)
    a_new = a_old[:1] + make_rows("docs:a.md", 2, rng, prefix="v2-")

    store.replace_documents(["docs:a.md"], a_new)

    assert store.chunk_ids() == ids(a_new) | ids(b)


def test_replacing_by_the_chunks_held_leaves_exactly_the_new_rows(
    store: VectorStore, rng: np.random.Generator
) -> None:
    a_old, b = make_rows("docs:a.md", 4, rng), make_rows("docs:b.md", 3, rng)
    store.replace_documents(["docs:a.md", "docs:b.md"], a_old + b)
    changed = VectorRow(a_old[0].chunk_id, "docs:a.md", rng.standard_normal(DIM).astype(np.float32))
    a_new = [changed, *make_rows("docs:a.md", 2, rng, prefix="v2-")]

    store.replace_documents(["docs:a.md"], a_new, held={"docs:a.md": ids(a_old)})

    assert store.chunk_ids() == ids(a_new) | ids(b)
    assert store.search(changed.vector, limit=1)[0][0] == changed.chunk_id


def test_a_document_replaced_by_no_rows_is_deleted_by_the_chunks_it_held(
    store: VectorStore, rng: np.random.Generator
) -> None:
    a, b = make_rows("docs:a.md", 4, rng), make_rows("docs:b.md", 3, rng)
    store.replace_documents(["docs:a.md", "docs:b.md"], a + b)

    store.replace_documents(["docs:a.md"], [], held={"docs:a.md": ids(a)})

    assert store.chunk_ids() == ids(b)


def test_the_chunk_id_index_is_built_with_the_vector_index(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 40, rng))

    assert store.ensure_vector_index(min_rows=20)

    assert store.has_key_index()


def test_replace_documents_is_one_commit(store: VectorStore, rng: np.random.Generator) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 4, rng))
    before = store.version_count()

    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 2, rng, prefix="v2-"))

    assert store.version_count() == before + 1


def test_new_documents_are_appended_and_later_replaced_like_any_other(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", 2, rng))
    a_old = make_rows("docs:a.md", 3, rng)
    store.replace_documents(["docs:a.md"], a_old, new=["docs:a.md"])
    assert store.count() == 5
    a_new = make_rows("docs:a.md", 2, rng, prefix="v2-")

    store.replace_documents(["docs:a.md"], a_new)

    assert store.count() == 4
    assert store.chunk_ids() == ids(a_new) | {"docs:b.md#0", "docs:b.md#1"}


def test_a_batch_with_one_known_document_is_upserted_not_appended(
    store: VectorStore, rng: np.random.Generator
) -> None:
    a = make_rows("docs:a.md", 2, rng)
    store.replace_documents(["docs:a.md"], a)

    store.replace_documents(
        ["docs:a.md", "docs:b.md"], a + make_rows("docs:b.md", 1, rng), new=["docs:b.md"]
    )

    assert store.count() == 3


def test_replaying_the_same_replace_is_idempotent(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", 2, rng))
    rows = make_rows("docs:a.md", 6, rng)
    store.replace_documents(["docs:a.md"], rows)
    first = (store.chunk_ids(), store.count())

    store.replace_documents(["docs:a.md"], rows)

    assert (store.chunk_ids(), store.count()) == first
    assert first[1] == 8


def test_replace_with_no_rows_deletes_a_doc_id_containing_quotes(
    store: VectorStore, rng: np.random.Generator
) -> None:
    odd = ["docs:back\\slash.md", "docs:ünï 日本.md", "docs:new\nline.md"]
    kept = make_rows("docs:other.md", 2, rng)
    rows = [r for d in [QUOTED_DOC, *odd] for r in make_rows(d, 2, rng)]
    store.replace_documents([QUOTED_DOC, *odd, "docs:other.md"], rows + kept)

    store.replace_documents([QUOTED_DOC], [])
    assert store.chunk_ids() == ids(rows[2:]) | ids(kept)

    store.replace_documents(odd, [])
    assert store.chunk_ids() == ids(kept)


def test_open_with_another_dimension_raises_store_error(tmp_path: Path) -> None:
    VectorStore.open(tmp_path / "lancedb", DIM)

    with pytest.raises(StoreError, match="re-index"):
        VectorStore.open(tmp_path / "lancedb", DIM * 2)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e39])
def test_non_finite_vector_raises_value_error_and_writes_nothing(
    store: VectorStore, rng: np.random.Generator, bad: float
) -> None:
    rows = make_rows("docs:a.md", 3, rng)
    vector = np.array(rows[1].vector, dtype=np.float64)
    vector[3] = bad  # 1e39 only becomes inf when cast to float32
    rows[1] = VectorRow(rows[1].chunk_id, "docs:a.md", vector)  # type: ignore[arg-type]
    versions = store.version_count()

    with pytest.raises(ValueError, match="NaN or infinite"):
        store.replace_documents(["docs:a.md"], rows)

    assert store.count() == 0
    assert store.version_count() == versions


def test_vector_of_another_dimension_raises_value_error(
    store: VectorStore, rng: np.random.Generator
) -> None:
    row = VectorRow("c1", "docs:a.md", rng.standard_normal(DIM + 1).astype(np.float32))

    with pytest.raises(ValueError, match="shape"):
        store.replace_documents(["docs:a.md"], [row])


def test_row_of_an_unlisted_document_raises_value_error(
    store: VectorStore, rng: np.random.Generator
) -> None:
    with pytest.raises(ValueError, match="not in doc_ids"):
        store.replace_documents(["docs:a.md"], make_rows("docs:b.md", 1, rng))


def test_duplicate_chunk_ids_raise_value_error(
    store: VectorStore, rng: np.random.Generator
) -> None:
    row = make_rows("docs:a.md", 1, rng)[0]

    with pytest.raises(ValueError, match="duplicate"):
        store.replace_documents(["docs:a.md"], [row, row])


def test_open_readonly_on_a_missing_directory_is_empty_and_creates_nothing(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "lancedb"

    reader = VectorStore.open_readonly(directory)

    assert reader.count() == 0
    assert reader.chunk_ids() == set()
    assert reader.search(np.ones(DIM, dtype=np.float32), 5) == []
    assert reader.version_count() == 0
    reader.refresh()
    assert not directory.exists()


def test_readonly_handle_sees_commits_after_refresh(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    writer = VectorStore.open(tmp_path / "lancedb", DIM)
    writer.replace_documents(["docs:a.md"], make_rows("docs:a.md", 2, rng))
    reader = VectorStore.open_readonly(tmp_path / "lancedb")
    rows = make_rows("docs:b.md", 3, rng)
    writer.replace_documents(["docs:b.md"], rows)

    reader.refresh()

    assert reader.count() == 5
    assert reader.search(rows[0].vector, 1)[0][0] == rows[0].chunk_id


def test_readonly_handle_finds_a_table_created_after_it_opened(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    reader = VectorStore.open_readonly(tmp_path / "lancedb")
    writer = VectorStore.open(tmp_path / "lancedb", DIM)
    writer.replace_documents(["docs:a.md"], make_rows("docs:a.md", 2, rng))

    reader.refresh()

    assert reader.count() == 2


def test_readonly_handle_refuses_writes(tmp_path: Path, rng: np.random.Generator) -> None:
    VectorStore.open(tmp_path / "lancedb", DIM)
    reader = VectorStore.open_readonly(tmp_path / "lancedb")

    with pytest.raises(StoreError, match="read-only"):
        reader.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1, rng))


def test_delete_chunks_removes_exactly_those_ids_across_batches(
    store: VectorStore, rng: np.random.Generator
) -> None:
    rows = make_rows("docs:a.md", 2 * IN_BATCH + 10, rng)
    store.replace_documents(["docs:a.md"], rows)
    doomed = ids(rows[: 2 * IN_BATCH + 5]) | {"no-such-id", "it's"}

    store.delete_chunks(doomed)

    assert store.chunk_ids() == ids(rows[2 * IN_BATCH + 5 :])


def test_chunk_ids_matches_what_was_written(store: VectorStore, rng: np.random.Generator) -> None:
    docs = [f"docs:d{i}.md" for i in range(20)]
    rows = [r for d in docs for r in make_rows(d, 7, rng)]

    store.replace_documents(docs, rows)

    assert store.chunk_ids() == ids(rows)
    assert store.count() == len(rows)


def test_search_with_a_query_of_another_dimension_raises_value_error(
    store: VectorStore,
) -> None:
    with pytest.raises(ValueError, match="shape"):
        store.search(np.ones(DIM + 1, dtype=np.float32), 3)


def test_search_with_a_zero_query_returns_nothing(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 3, rng))

    assert store.search(np.zeros(DIM, dtype=np.float32), 3) == []


def test_a_started_search_finds_what_search_finds_while_the_caller_works(
    store: VectorStore, rng: np.random.Generator
) -> None:
    rows = make_rows("docs:a.md", 6, rng)
    store.replace_documents(["docs:a.md"], rows)

    waiting = [store.start_search(row.vector, 3) for row in rows]
    results = [wait() for wait in waiting]

    assert results == [store.search(row.vector, 3) for row in rows]
    assert [hits[0][0] for hits in results] == [row.chunk_id for row in rows]


def test_starting_a_search_with_a_bad_query_raises_before_anything_runs(
    store: VectorStore,
) -> None:
    with pytest.raises(ValueError, match="NaN"):
        store.start_search(np.full(DIM, np.nan, dtype=np.float32), 3)


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_version_count_increases_per_commit_and_optimize_reduces_it(
    store: VectorStore, rng: np.random.Generator
) -> None:
    start = store.version_count()
    for i in range(4):
        store.replace_documents([f"docs:{i}.md"], make_rows(f"docs:{i}.md", 2, rng))
    assert store.version_count() == start + 4
    before = store.chunk_ids()

    store.optimize(cleanup_older_than=timedelta(0))

    assert store.version_count() < start + 4
    assert store.chunk_ids() == before


def test_a_later_optimize_removes_what_a_recent_compaction_kept_for_readers(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    # The premise of the daemon's compact-cleanup job (ragd.service.serve.scheduled_jobs).
    for i in range(4):
        store.replace_documents([f"docs:{i}.md"], make_rows(f"docs:{i}.md", 50, rng))
    store.optimize(cleanup_older_than=timedelta(hours=1))
    kept_versions, kept_bytes = store.version_count(), disk_bytes(tmp_path / "lancedb")
    keep = timedelta(seconds=1)
    time.sleep(keep.total_seconds() + 0.2)
    store.optimize(cleanup_older_than=keep)

    assert kept_versions > 1  # the pre-compaction versions are younger than an hour
    assert store.version_count() == 1
    assert disk_bytes(tmp_path / "lancedb") < kept_bytes
    assert len(store.chunk_ids()) == 200


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_a_small_table_is_searched_without_a_vector_index(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 300, rng))

    assert store.ensure_vector_index(min_rows=301) is False
    assert store.has_vector_index() is False


def test_a_vector_index_is_built_once_and_searches_still_find_stored_vectors(
    store: VectorStore, rng: np.random.Generator
) -> None:
    rows = make_rows("docs:a.md", 1000, rng)
    store.replace_documents(["docs:a.md"], rows)

    assert store.ensure_vector_index(min_rows=1000) is True
    assert store.ensure_vector_index(min_rows=1000) is False  # already there
    assert store.has_vector_index() is True
    found = [store.search(row.vector, limit=1)[0][0] for row in rows[:50]]
    assert sum(f == row.chunk_id for f, row in zip(found, rows, strict=False)) >= 48


def test_the_vector_index_is_built_again_once_the_table_holds_twice_its_rows(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1000, rng))
    assert store.ensure_vector_index(min_rows=1000) is True
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", 999, rng))
    assert store.ensure_vector_index(min_rows=1000) is False
    late = make_rows("docs:c.md", 1, rng)
    store.replace_documents(["docs:c.md"], late)

    assert store.ensure_vector_index(min_rows=1000) is True
    assert store.ensure_vector_index(min_rows=1000) is False
    assert store.search(late[0].vector, limit=1)[0][0] == late[0].chunk_id


def test_an_index_that_does_not_record_its_rows_is_built_again_once(
    store: VectorStore, rng: np.random.Generator, tmp_path: Path
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1000, rng))
    table = adapter.open_vector_table(tmp_path / "lancedb")
    assert table is not None
    table.create_index("vector", adapter.IvfSqIndex(partitions=2))
    store.refresh()  # an index an older ragd built, which recorded no row count

    assert store.ensure_vector_index(min_rows=1000) is True
    assert store.ensure_vector_index(min_rows=1000) is False


def test_rows_written_after_the_index_are_found_and_folded_in_by_optimize(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1000, rng))
    store.ensure_vector_index(min_rows=1000)
    late = make_rows("docs:b.md", 20, rng)
    store.replace_documents(["docs:b.md"], late)

    assert store.search(late[3].vector, limit=1)[0][0] == late[3].chunk_id
    store.optimize(timedelta(minutes=10))
    assert store.search(late[3].vector, limit=1)[0][0] == late[3].chunk_id
    assert store.has_vector_index() is True


def test_a_table_left_in_many_small_files_needs_compaction_and_optimize_compacts_it(
    store: VectorStore, rng: np.random.Generator
) -> None:
    for n in range(COMPACT_AT_FRAGMENTS):
        store.replace_documents([f"docs:{n}.md"], make_rows(f"docs:{n}.md", 2, rng))
    written = store.chunk_ids()
    assert store.needs_compaction()

    store.optimize(cleanup_older_than=timedelta(minutes=10))

    assert store.small_fragments() == 1
    assert not store.needs_compaction()
    assert store.chunk_ids() == written


def test_an_index_left_covering_few_rows_by_a_rewrite_needs_compaction_until_optimized(
    store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1000, rng))
    store.ensure_vector_index(min_rows=1000)
    assert not store.needs_compaction()

    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 1000, rng))
    assert store.small_fragments() < COMPACT_AT_FRAGMENTS
    assert store.needs_compaction()

    store.optimize(timedelta(minutes=10))
    assert not store.needs_compaction()


def test_a_table_of_few_files_needs_no_compaction(
    store: VectorStore, rng: np.random.Generator
) -> None:
    for n in range(3):
        store.replace_documents([f"docs:{n}.md"], make_rows(f"docs:{n}.md", 2, rng))

    assert store.small_fragments() == 3
    assert not store.needs_compaction()


def _published(store: VectorStore, rng: np.random.Generator) -> int:
    """Write docs:a.md (3 rows) and mark that version as one replicas read."""
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 3, rng), new=["docs:a.md"])
    published = store.version()
    assert published is not None
    store.oldest_published = published
    return published


def _compacted_a_second_ago(store: VectorStore, rng: np.random.Generator) -> None:
    """Several commits, then a compaction whose cleanup keeps ten minutes of versions."""
    for n in range(4):
        store.replace_documents([f"docs:{n}.md"], make_rows(f"docs:{n}.md", 2, rng))
    store.optimize(cleanup_older_than=timedelta(minutes=10))
    time.sleep(1.1)  # older than STOP_CLEANUP_AGE


def test_a_stop_drops_the_versions_a_compaction_left_to_its_readers(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    _compacted_a_second_ago(store, rng)
    written = store.chunk_ids()
    assert store.version_count() > 1

    assert store.drop_superseded_versions()

    assert store.version_count() == 1
    assert store.chunk_ids() == written
    assert VectorStore.open_readonly(tmp_path / "lancedb").chunk_ids() == written


def test_a_stop_keeps_the_version_replicas_read(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    published = _published(store, rng)
    _compacted_a_second_ago(store, rng)

    store.drop_superseded_versions()

    replica = VectorStore.open_readonly(tmp_path / "lancedb", version=published)
    assert replica.chunk_ids() == ids(make_rows("docs:a.md", 3, rng))


def test_a_stop_does_not_compact_a_table_of_many_files(
    store: VectorStore, rng: np.random.Generator
) -> None:
    for n in range(3):
        store.replace_documents([f"docs:{n}.md"], make_rows(f"docs:{n}.md", 2, rng))
    versions = store.version_count()

    assert not store.drop_superseded_versions()

    assert store.small_fragments() == 3
    assert store.version_count() == versions


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_a_cleanup_keeps_the_oldest_published_version_and_every_newer_one(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    published = _published(store, rng)
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", 2, rng), new=["docs:b.md"])
    store.replace_documents(["docs:a.md"], [])

    store.optimize(cleanup_older_than=timedelta(0))

    replica = VectorStore.open_readonly(tmp_path / "lancedb", version=published)
    assert replica.chunk_ids() == ids(make_rows("docs:a.md", 3, rng))
    assert store.chunk_ids() == ids(make_rows("docs:b.md", 2, rng))


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_without_a_published_version_a_cleanup_removes_the_superseded_ones(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 3, rng), new=["docs:a.md"])
    superseded = store.version()
    store.replace_documents(["docs:a.md"], [])

    store.optimize(cleanup_older_than=timedelta(0))

    with pytest.raises(StoreError):
        VectorStore.open_readonly(tmp_path / "lancedb", version=superseded)


def test_a_handle_pinned_to_a_version_stays_there_on_refresh(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 3, rng), new=["docs:a.md"])
    pinned = VectorStore.open_readonly(tmp_path / "lancedb", version=store.version())
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", 2, rng), new=["docs:b.md"])

    pinned.refresh()

    assert pinned.count() == 3
    assert VectorStore.open_readonly(tmp_path / "lancedb").count() == 5


def test_retraining_rebuilds_an_existing_vector_index_over_the_rows_now(
    store: VectorStore, rng: np.random.Generator
) -> None:
    rows = make_rows("docs:a.md", 40, rng)
    store.replace_documents(["docs:a.md"], rows, new=["docs:a.md"])
    assert store.retrain_vector_index() is False  # no index yet: nothing to retrain
    assert store.ensure_vector_index(min_rows=10)
    replaced = make_rows("docs:a.md", 40, rng)  # the same ids, another "model's" vectors
    store.upsert(replaced)

    assert store.retrain_vector_index() is True

    assert store.has_vector_index()
    assert store.search(replaced[5].vector, limit=1)[0][0] == replaced[5].chunk_id


def test_a_table_absent_from_a_generation_reads_empty_even_once_it_exists(
    tmp_path: Path, store: VectorStore, rng: np.random.Generator
) -> None:
    absent = VectorStore.absent(tmp_path / "lancedb", "chunks")
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", 3, rng), new=["docs:a.md"])

    absent.refresh()

    assert absent.count() == 0 and absent.chunk_ids() == set()
    assert absent.search(np.ones(DIM, dtype=np.float32), limit=5) == []


def test_an_indexed_search_finds_the_exact_nearest_among_near_duplicates(
    store: VectorStore, rng: np.random.Generator
) -> None:
    # 40 pages in 60 near-identical versions each, as an estate of product versions holds.
    pages = rng.standard_normal((40, DIM)).astype(np.float32)
    rows = [
        VectorRow(
            f"docs:v{v}/p{p}.md#0",
            f"docs:v{v}/p{p}.md",
            pages[p] + 0.02 * rng.standard_normal(DIM).astype(np.float32),
        )
        for v in range(60)
        for p in range(40)
    ]
    store.replace_documents(sorted({r.doc_id for r in rows}), rows)
    assert store.ensure_vector_index(min_rows=1000)
    matrix = np.stack([r.vector / np.linalg.norm(r.vector) for r in rows])
    found = 0
    for query in pages[:10]:
        exact = {rows[i].chunk_id for i in np.argsort(-(matrix @ query))[:10]}
        found += len(exact & {chunk for chunk, _ in store.search(query, limit=50)[:10]})

    assert found / 100 >= 0.95
