"""The lance adapter: a writer committing through lance leaves the table that committing
through lancedb leaves, commit for commit, and is used only on the versions tested."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ragd.adapters import pylance
from ragd.adapters.lancedb import (
    IvfSqIndex,
    VectorTable,
    open_vector_table,
    sql_in,
    vector_tables,
)
from ragd.adapters.pylance import DatasetTable, dataset_tables, open_dataset_table
from ragd.errors import StoreError
from ragd.stores.vectors import VectorStore
from tests.conftest import MODEL_DIR, REPO

DIM = 8
Table = VectorTable | DatasetTable


def rows(prefix: str, doc: str, n: int, seed: int) -> tuple[list[str], list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = [f"{doc}#{prefix}{i}" for i in range(n)]
    return ids, [doc] * n, rng.random((n, DIM), dtype=np.float32)


def contents(directory: Path) -> list[tuple[str, str, tuple[float, ...]]]:
    """Every row of the table under `directory`, in chunk id order."""
    import lance

    scanned = lance.dataset(str(directory / "chunks.lance")).to_table()
    return sorted(
        (str(c), str(d), tuple(v))
        for c, d, v in zip(
            scanned["chunk_id"].to_pylist(),
            scanned["doc_id"].to_pylist(),
            scanned["vector"].to_pylist(),
            strict=True,
        )
    )


def state(table: Table, directory: Path) -> dict[str, Any]:
    return {
        "rows": contents(directory),
        "version": table.version(),
        "versions kept": table.version_count(),
        "versions by age": sorted(table.version_ages()),
        "chunk id column": sorted(table.column("chunk_id")),
        "count": table.count(),
        "small fragments": table.small_fragments(),
        "has index": table.has_index("vector"),
        "unindexed rows": table.unindexed_rows("vector"),
        "vector metadata": table.field_metadata("vector"),
    }


# Each step is one call a writer makes, in the order an index pass and its housekeeping do.
STEPS: list[tuple[str, Callable[[Table], None]]] = [
    ("append two documents", lambda t: t.add(*rows("", "docs:a.md", 300, 1))),
    ("append more", lambda t: t.add(*rows("", "docs:b.md", 300, 2))),
    (
        "replace a document (upsert, delete the rest)",
        lambda t: t.upsert(
            *rows("", "docs:a.md", 200, 3), delete_others_where=sql_in("doc_id", ["docs:a.md"])
        ),
    ),
    (
        "upsert without deleting",
        lambda t: t.upsert(*rows("n", "docs:c.md", 50, 4), delete_others_where=None),
    ),
    ("delete a document", lambda t: t.delete(sql_in("doc_id", ["docs:b.md"]))),
    ("build the vector index", lambda t: t.create_index("vector", IvfSqIndex(2, 16))),
    ("record what it was built for", lambda t: t.set_field_metadata("vector", {"k": "v"})),
    ("append rows the index does not cover", lambda t: t.add(*rows("", "docs:d.md", 20, 5))),
    (
        "delete rows the index covers and rows it does not",
        lambda t: t.delete("chunk_id LIKE 'docs:a.md#1%' OR chunk_id LIKE 'docs:d.md#1%'"),
    ),
    ("compact, fold in, clean up", lambda t: t.optimize(timedelta(milliseconds=1))),
    ("append after compaction", lambda t: t.add(*rows("", "docs:e.md", 5, 6))),
]


def test_each_write_through_lance_leaves_the_table_lancedbs_write_leaves(tmp_path: Path) -> None:
    through_lance = open_dataset_table(tmp_path / "lance", "chunks", create_dim=DIM)
    through_lancedb = open_vector_table(tmp_path / "lancedb", create_dim=DIM)
    assert through_lance is not None and through_lancedb is not None

    for step, write in STEPS:
        write(through_lance)
        write(through_lancedb)

        assert state(through_lance, tmp_path / "lance") == state(
            through_lancedb, tmp_path / "lancedb"
        ), step


def test_a_data_file_is_small_below_as_many_rows_as_lancedb_says(tmp_path: Path) -> None:
    through_lance = open_dataset_table(tmp_path / "lance", "chunks", create_dim=DIM)
    through_lancedb = open_vector_table(tmp_path / "lancedb", create_dim=DIM)
    assert through_lance is not None and through_lancedb is not None
    big = rows("", "docs:big.md", pylance.SMALL_FRAGMENT_ROWS, 1)
    small = rows("", "docs:small.md", pylance.SMALL_FRAGMENT_ROWS - 1, 2)

    for table in (through_lance, through_lancedb):
        table.add(*big)
        table.add(*small)
        table.delete("chunk_id LIKE 'docs:big.md#1%'")  # written rows count, not live ones

    assert through_lance.small_fragments() == through_lancedb.small_fragments() == 1


def test_a_table_lance_creates_is_the_table_lancedb_creates(tmp_path: Path) -> None:
    import lance

    open_dataset_table(tmp_path / "lance", "chunks", create_dim=DIM)
    open_vector_table(tmp_path / "lancedb", create_dim=DIM)
    made_by = ("lance", "lancedb")
    made = [lance.dataset(str(tmp_path / kind / "chunks.lance")) for kind in made_by]

    assert made[0].schema == made[1].schema
    assert made[0].data_storage_version == made[1].data_storage_version
    assert made[0].config() == made[1].config()
    versions = [os.listdir(tmp_path / kind / "chunks.lance" / "_versions") for kind in made_by]
    assert sorted(versions[0]) == sorted(versions[1])  # one version, v2 manifest paths


def test_tables_are_listed_as_lancedb_lists_them(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    open_dataset_table(directory, "chunks", create_dim=DIM)
    open_vector_table(directory, table_name="second_stage_abc", create_dim=DIM)
    (directory / "notes").mkdir()
    (directory / "stray.lance").write_text("a file, not a table")

    assert (
        dataset_tables(directory)
        == sorted(vector_tables(directory))
        == [
            "chunks",
            "second_stage_abc",
        ]
    )
    assert dataset_tables(tmp_path / "missing") == []


def test_a_lance_write_lancedb_refuses_is_a_store_error_naming_the_directory(
    tmp_path: Path,
) -> None:
    table = open_dataset_table(tmp_path / "db", "chunks", create_dim=DIM)
    assert table is not None

    with pytest.raises(StoreError, match=r"cannot delete from the LanceDB store at .*db"):
        table.delete("chunk_id = ((")
    assert table.count() == 0


def test_a_table_with_other_columns_is_refused_on_opening(tmp_path: Path) -> None:
    import lance

    lance.write_dataset(pa.table({"text": ["x"]}), str(tmp_path / "db" / "chunks.lance"))

    with pytest.raises(StoreError, match="is not ragd's"):
        open_dataset_table(tmp_path / "db", "chunks")


def test_a_missing_table_is_none_unless_asked_to_create_it(tmp_path: Path) -> None:
    assert open_dataset_table(tmp_path / "db", "chunks") is None
    assert not (tmp_path / "db").exists()


def test_the_installed_lance_and_lancedb_are_versions_whose_writes_were_tested(
    tmp_path: Path,
) -> None:
    # CI installs the newest versions in pyproject's ranges: one outside WRITES_TESTED fails
    # here, so the ranges and the tested versions move together.
    assert pylance.writes_supported(tmp_path)


def test_object_storage_and_untested_versions_write_through_lancedb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not pylance.writes_supported("s3://bucket/prefix")
    monkeypatch.setitem(pylance.WRITES_TESTED, "pylance", ((0, 1), (0, 2)))
    pylance._versions_tested.cache_clear()
    try:
        assert not pylance.writes_supported(tmp_path)
        store = VectorStore.open(tmp_path / "lancedb", DIM)
        ids, docs, matrix = rows("", "docs:a.md", 3, 1)
        store._writer_table().add(ids, docs, matrix)

        assert isinstance(store._writer_table(), VectorTable)
        assert store.chunk_ids() == set(ids)
    finally:
        pylance._versions_tested.cache_clear()


def test_a_one_shot_index_after_an_edit_never_imports_lancedb(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a", "b", "c"):
        (docs / f"{name}.md").write_text(f"# {name}\n\nSome words about {name}.\n")
    config = tmp_path / "ragd.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{tmp_path / "data"}"\n[embedding]\nmodel = "{MODEL_DIR}"\n'
        f'[rerank]\nenabled = false\n[[sources]]\nname = "docs"\ntype = "folder"\n'
        f'path = "{docs}"\ninclude = ["**/*.md"]\n'
    )
    script = (
        "import sys; from ragd.cli import main; "
        f"code = main(['--config', {str(config)!r}, 'index', '--json']); "
        "print('lancedb imported' if 'lancedb' in sys.modules else 'lancedb not imported', "
        "file=sys.stderr); sys.exit(code)"
    )

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120
        )

    assert run().returncode == 0  # the first pass creates the table
    (docs / "b.md").write_text("# b\n\nOther words about b.\n")

    edited = run()

    assert edited.returncode == 0, edited.stderr
    assert '"changed": 1' in edited.stdout
    assert edited.stderr.strip().endswith("lancedb not imported")
