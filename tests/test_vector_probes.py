"""How many IVF partitions a vector search reads: at least MIN_PROBES, and one in
PROBE_SHARE of those the index was built with, so recall against exact search holds as
the table grows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragd.adapters import lancedb as adapter
from ragd.stores.vectors import (
    BUILT_FOR,
    MIN_PROBES,
    VectorRow,
    VectorStore,
    probes_for,
)

DIM = 16


VECTORS = np.random.default_rng(7).standard_normal((2048, DIM)).astype(np.float32)


@pytest.fixture
def writer(tmp_path: Path) -> VectorStore:
    store = VectorStore.open(tmp_path / "lancedb", DIM)
    rows = [VectorRow(f"docs:a.md#{i}", "docs:a.md", v) for i, v in enumerate(VECTORS)]
    store.replace_documents(["docs:a.md"], rows)
    return store


def exact_nearest(query: np.ndarray, k: int) -> set[str]:
    units = VECTORS / np.linalg.norm(VECTORS, axis=1, keepdims=True)
    return {f"docs:a.md#{i}" for i in np.argsort(-(units @ query))[:k]}


def test_a_small_index_is_searched_in_twenty_partitions() -> None:
    assert probes_for(0) == probes_for(125_000) == MIN_PROBES == 20


def test_a_large_index_is_searched_in_one_partition_in_eight() -> None:
    assert probes_for(1_031_367) == 126  # 1,007 partitions of 1,024 rows
    assert probes_for(10_000_000) == 1221


def test_a_reader_reads_as_many_partitions_as_its_index_was_built_for(
    tmp_path: Path, writer: VectorStore
) -> None:
    assert writer.ensure_vector_index(min_rows=1000) is True
    reader = VectorStore.open_readonly(tmp_path / "lancedb")
    assert reader.probes == MIN_PROBES
    table = adapter.open_vector_table(tmp_path / "lancedb")
    assert table is not None
    table.set_field_metadata("vector", {BUILT_FOR: "2000000"})  # as if built for 2M rows

    reader.refresh()

    assert reader.probes == probes_for(2_000_000) == 245


def test_a_search_reading_fewer_partitions_finds_fewer_of_the_exact_nearest(
    tmp_path: Path, writer: VectorStore
) -> None:
    table = adapter.open_vector_table(tmp_path / "lancedb")
    assert table is not None
    table.create_index("vector", adapter.IvfSqIndex(partitions=32))
    reader = VectorStore.open_readonly(tmp_path / "lancedb")
    queries = np.random.default_rng(8).standard_normal((20, DIM)).astype(np.float32)

    def found(probes: int) -> int:
        reader.probes = probes
        return sum(
            len({c for c, _ in reader.search(q, 10)} & exact_nearest(q, 10)) for q in queries
        )

    assert found(1) < 150 < 190 <= found(32)
