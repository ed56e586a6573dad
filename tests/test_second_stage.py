"""Second-stage vectors on the write side: a pass leaves them to the fill, unchanged text is
never embedded twice, each model's change re-embeds that model's vectors only, and the
second stage's table holds exactly the rows of the stored vectors (real stores, fake models).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.indexing.report import IndexReport
from ragd.indexing.second_stage import SecondStageWriter, embed
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorRow, VectorStore, second_stage_table
from tests.conftest import FakeEmbedder

GUIDE = (
    "# Guide\n\n## Install\n\nRun the installer.\n\n"
    "## Configure\n\nEdit the file.\n\n## Deploy\n\nShip it.\n"
)


class Harness:
    """A folder source indexed with a first- and a second-stage fake model."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "docs"
        self.root.mkdir()
        self.data = DataDir(tmp_path / "data")
        self.first = FakeEmbedder(dim=16, identity="first:a")
        self.second = FakeEmbedder(dim=24, identity="second:a")

    def write(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def stores(self) -> WriterStores:
        return WriterStores(
            self.data,
            keyword_rows=manifest_keyword_rows,
            second_table=second_stage_table(self.second.identity),
        )

    def indexer(self, stores: WriterStores) -> Indexer:
        pipeline = Pipeline(
            ChunkSettings(max_chars=200, overlap=0),
            self.first.identity,
            second_identity=self.second.identity,
        )
        source = FolderSource("docs", self.root, ("**/*.md",))
        return Indexer(stores, [source], pipeline, self.first, second=self.second)

    def run(self, *, fill: bool = True) -> tuple[IndexReport, IndexReport]:
        stores = self.stores()
        try:
            indexer = self.indexer(stores)
            report = indexer.run()
            filled = indexer.fill_second_stage() if fill else IndexReport()
            return report, filled
        finally:
            stores.close()

    def manifest(self) -> ManifestReader:
        return ManifestReader.open(self.data.manifest)

    def table_ids(self) -> set[str]:
        name = second_stage_table(self.second.identity)
        return VectorStore.open_readonly(self.data.lancedb, name=name).chunk_ids()


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_a_pass_writes_first_stage_vectors_and_leaves_the_second_stage_to_the_fill(
    harness: Harness,
) -> None:
    harness.write("guide.md", GUIDE)

    report, _ = harness.run(fill=False)

    assert report.embedded == 3
    assert harness.second.calls == 0
    assert harness.manifest().second_stage_missing_count() == 3


def test_the_fill_embeds_each_chunk_once_and_writes_its_row(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)

    _, filled = harness.run()

    manifest = harness.manifest()
    assert filled.second_embedded == 3 and filled.second_pending == 0
    assert len(harness.second.texts) == 3
    assert manifest.second_stage_missing_count() == 0
    assert harness.table_ids() == manifest.chunk_ids() == manifest.second_stage_chunk_ids()


def test_chunks_of_equal_text_share_one_second_stage_embedding(harness: Harness) -> None:
    harness.write("a.md", "# Same\n\nThe very same words.\n")
    harness.write("b.md", "# Same\n\nThe very same words.\n")

    _, filled = harness.run()

    assert filled.second_embedded == 1
    assert len(harness.table_ids()) == 2


def test_editing_one_section_embeds_only_that_sections_second_stage_vector(
    harness: Harness,
) -> None:
    harness.write("guide.md", GUIDE)
    harness.run()
    harness.second.texts.clear()

    harness.write("guide.md", GUIDE.replace("Edit the file.", "Edit the settings file."))
    report, filled = harness.run()

    assert report.second_reused == 2  # the unchanged sections' rows, from stored vectors
    assert filled.second_embedded == 1
    assert harness.second.texts == ["Guide — Configure\n\nEdit the settings file."]
    assert harness.table_ids() == harness.manifest().chunk_ids()


def test_a_new_second_stage_model_re_embeds_only_second_stage_vectors(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)
    harness.run()
    old_table = second_stage_table(harness.second.identity)
    harness.second = FakeEmbedder(dim=24, identity="second:b")

    report, filled = harness.run()

    assert report.changed == 1  # the fingerprint names both models
    assert report.embedded == 0 and report.reused == 3
    assert filled.second_embedded == 3
    assert old_table not in VectorStore.tables(harness.data.lancedb)
    assert harness.table_ids() == harness.manifest().chunk_ids()


def test_a_new_first_stage_model_re_uses_every_second_stage_vector(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)
    harness.run()
    harness.first = FakeEmbedder(dim=16, identity="first:b")
    harness.second.texts.clear()

    report, filled = harness.run()

    assert report.embedded == 3
    assert report.second_reused == 3
    assert filled.second_embedded == 0 and harness.second.texts == []


def test_a_deleted_document_leaves_no_second_stage_rows(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)
    harness.write("other.md", "# Other\n\nSomething else.\n")
    harness.run()

    (harness.root / "guide.md").unlink()
    harness.run()

    assert harness.table_ids() == harness.manifest().chunk_ids()
    assert len(harness.table_ids()) == 1


def test_reconciling_restores_lost_rows_and_drops_orphans(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)
    harness.run()
    stores = harness.stores()
    try:
        table = stores.second_vectors()
        assert table is not None
        lost = sorted(harness.table_ids())[:2]
        table.delete_chunks(lost)
        table.upsert([VectorRow("orphan", "docs:gone.md", np.ones(24, dtype=np.float32))])

        harness.indexer(stores).reconcile()
    finally:
        stores.close()

    assert harness.table_ids() == harness.manifest().chunk_ids()


def test_rows_written_without_their_keys_are_written_again_without_duplicates(
    harness: Harness,
) -> None:
    harness.write("guide.md", GUIDE)
    harness.run(fill=False)
    stores = harness.stores()
    try:
        work = stores.manifest.second_stage_missing(10)
        embedded = embed(work, harness.second)
        table = stores.second_vectors(24)
        assert table is not None
        # A crash after the rows, before the keys: the rows are there, the keys are not.
        vector_of = dict(zip(embedded.keys, embedded.vectors, strict=True))
        table.upsert([VectorRow(w.chunk_id, w.doc_id, vector_of[w.second_key]) for w in work])
    finally:
        stores.close()

    _, filled = harness.run()

    assert filled.second_embedded == 3
    assert harness.table_ids() == harness.manifest().chunk_ids()
    name = second_stage_table(harness.second.identity)
    assert VectorStore.open_readonly(harness.data.lancedb, name=name).count() == 3


def test_a_vector_for_a_chunk_replaced_meanwhile_writes_no_row(harness: Harness) -> None:
    harness.write("guide.md", GUIDE)
    harness.run(fill=False)
    stale_work = harness.manifest().second_stage_missing(10)
    embedded = embed(stale_work, harness.second)
    harness.write("guide.md", "# Guide\n\nAll new.\n")
    harness.run(fill=False)

    stores = harness.stores()
    try:
        written = SecondStageWriter(stores).write(embedded)
    finally:
        stores.close()

    assert written == 0  # none of those chunks is listed any more
    assert harness.manifest().second_stage_missing_count() == 1


def test_turning_the_second_stage_off_drops_its_tables_at_the_next_write(
    harness: Harness,
) -> None:
    harness.write("guide.md", GUIDE)
    harness.run()
    harness.write("other.md", "# Other\n\nSomething else.\n")

    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        pipeline = Pipeline(ChunkSettings(max_chars=200, overlap=0), harness.first.identity)
        source = FolderSource("docs", harness.root, ("**/*.md",))
        Indexer(stores, [source], pipeline, harness.first).run()
    finally:
        stores.close()

    assert not [t for t in VectorStore.tables(harness.data.lancedb) if t.startswith("second")]
