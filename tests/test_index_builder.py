"""The daemon's vector index is built on a thread of its own: the writer only asks, and
goes on writing while the index is built over a real LanceDB table."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from ragd.indexing.passes import compact_vectors, settle_vectors
from ragd.service.daemon.index_builder import IndexBuilder
from ragd.stores.vectors import VECTOR_INDEX_MIN_ROWS, VectorRow, VectorStore
from tests.integration.daemon import wait_until

DIM = 8


def _rows(prefix: str, count: int, rng: np.random.Generator) -> list[VectorRow]:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    return [VectorRow(f"{prefix}{n}", f"docs:{prefix}{n}.md", vectors[n]) for n in range(count)]


def _write(store: VectorStore, rows: list[VectorRow]) -> None:
    """Append rows of documents new to the table."""
    docs = [r.doc_id for r in rows]
    store.replace_documents(docs, rows, new=docs)


def _table_due_an_index(tmp_path: Path, rng: np.random.Generator) -> tuple[VectorStore, int]:
    """A table just past the size an index is built at, and its row count."""
    store = VectorStore.open(tmp_path / "lancedb", DIM)
    rows = _rows("a", VECTOR_INDEX_MIN_ROWS + 500, rng)
    _write(store, rows)
    return store, len(rows)


@pytest.fixture
def builder(tmp_path: Path) -> Iterator[IndexBuilder]:
    stop = threading.Event()
    built = IndexBuilder(tmp_path / "lancedb", stop)
    built.start()
    yield built
    stop.set()
    built.join(10)


def test_the_writer_asks_and_the_index_is_built_off_its_thread(
    tmp_path: Path, builder: IndexBuilder
) -> None:
    rng = np.random.default_rng(5)
    store, first = _table_due_an_index(tmp_path, rng)

    settle_vectors(store, timedelta(minutes=10), builder)
    assert not store.has_vector_index()  # the writer did not build it
    more = _rows("b", 300, rng)  # and writes on meanwhile
    _write(store, more)
    wait_until(lambda: builder.built == 1, 60, 0.05)
    store.refresh()

    assert store.has_vector_index() and store.has_key_index()
    assert store.count() == first + len(more)
    assert store.search(more[0].vector, limit=1)[0][0] == more[0].chunk_id
    assert not store.vector_index_due()


def test_a_compaction_waits_for_a_build_under_way_then_asks_for_one(
    tmp_path: Path, builder: IndexBuilder
) -> None:
    store, _ = _table_due_an_index(tmp_path, np.random.default_rng(6))

    with builder.exclusive():
        settle_vectors(store, timedelta(minutes=10), builder)
        assert builder.built == 0  # held off while the caller holds it
    compact_vectors(store, timedelta(minutes=10), builder)
    wait_until(lambda: builder.built == 1, 60, 0.05)
    store.refresh()

    assert store.has_vector_index()
