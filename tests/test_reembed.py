"""Bulk re-embedding with real stores and fake models: the plan holds exactly the texts the
current models have no vector for, each is embedded once, the switch re-keys chunks and
settles fingerprints in one step, documents chunked otherwise are left to the normal pass,
and a run cut short anywhere is finished by the next."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from ragd.embedding import Embedder
from ragd.errors import UsageError
from ragd.indexing.chunking import ChunkSettings, labelled_text
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, embed_key, manifest_keyword_rows
from ragd.indexing.reembed import bulk as reembed_module
from ragd.indexing.reembed.backends import Batch, LocalBackend, RayBackend
from ragd.indexing.reembed.bulk import ReembedReport, plan_reembed, reembed
from ragd.indexing.report import IndexReport
from ragd.sources.folders import FolderSource
from ragd.stores.agreement import compare_stores
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore, second_stage_table
from tests.conftest import FakeEmbedder

GUIDE = (
    "# Guide\n\n## Install\n\nRun the installer.\n\n"
    "## Configure\n\nEdit the file.\n\n## Deploy\n\nShip it.\n"
)
NOTES = "# Notes\n\nA short note about deployment.\n"


class Harness:
    """A folder source indexed with fake models that a test swaps to change the model."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "docs"
        self.root.mkdir()
        self.data = DataDir(tmp_path / "data")
        self.first = FakeEmbedder(dim=16, identity="first:a")
        self.second: FakeEmbedder | None = None
        self.max_chars = 200

    def write(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def pipeline(self) -> Pipeline:
        return Pipeline(
            ChunkSettings(max_chars=self.max_chars, overlap=0),
            self.first.identity,
            second_identity=None if self.second is None else self.second.identity,
        )

    @contextmanager
    def stores(self) -> Iterator[WriterStores]:
        table = None if self.second is None else second_stage_table(self.second.identity)
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows, second_table=table)
        try:
            yield stores
        finally:
            stores.close()

    def index(self, *, keys: tuple[str, ...] = (), fill: bool = True) -> IndexReport:
        """A pass over the folder (or over `keys` alone), then the second stage's fill."""
        with self.stores() as stores:
            source = FolderSource("docs", self.root, ("**/*.md",))
            indexer = Indexer(stores, [source], self.pipeline(), self.first, second=self.second)
            report = indexer.sync("docs", keys=keys) if keys else indexer.run()
            return report.merged(indexer.fill_second_stage()) if fill else report

    def reembed(self, backend: object | None = None) -> ReembedReport:
        with self.stores() as stores:
            return reembed(
                stores,
                self.pipeline(),
                self.first,
                self.second,
                backend or LocalBackend(),  # type: ignore[arg-type]
            )

    @contextmanager
    def manifest(self) -> Iterator[ManifestReader]:
        manifest = ManifestReader.open(self.data.manifest)
        try:
            yield manifest
        finally:
            manifest.close()

    def fingerprints(self) -> dict[str, str | None]:
        with self.manifest() as manifest:
            return {d.doc_id: d.fingerprint for d in manifest.documents()}

    def stores_agree(self) -> bool:
        with self.manifest() as manifest:
            found = compare_stores(
                manifest,
                VectorStore.open_readonly(self.data.lancedb),
                KeywordStore.open_readonly(self.data.tantivy),
            )
        return found.agree


class CrashingBackend:
    """Embeds one text per batch and dies (raises) before the batch numbered `dies_at`."""

    name = "crashing"

    def __init__(self, dies_at: int) -> None:
        self.dies_at = dies_at
        self.batches = 0

    def embed(self, stage: str, texts: Mapping[str, str], embedder: Embedder) -> Iterator[Batch]:
        for key, text in texts.items():
            if self.batches == self.dies_at:
                raise RuntimeError("killed")
            self.batches += 1
            yield [key], embedder.embed([text])


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    harness = Harness(tmp_path)
    harness.write("guide.md", GUIDE)
    harness.write("copy.md", GUIDE)  # the same three texts: embedded once per model
    harness.write("notes.md", NOTES)
    return harness


def _new_model(harness: Harness, *, dim: int = 16) -> list[str]:
    """Index with model A, switch the harness to model B; the distinct texts A embedded."""
    harness.index()
    texts = sorted(set(harness.first.texts))
    harness.first = FakeEmbedder(dim=dim, identity="first:b")
    return texts


def test_the_plan_holds_exactly_the_texts_the_new_model_has_no_vector_for(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reembed_module, "_CHECK_EVERY", 1)  # checks interleave with the reads
    texts = _new_model(harness)
    with harness.stores() as stores:  # one text the new model embedded already
        stores.manifest.store_vectors({embed_key("first:b", texts[0]): np.ones(16, np.float32)})

    with harness.manifest() as manifest:
        plan = plan_reembed(manifest, harness.pipeline(), rebuild=False)

    assert len(texts) == 4
    assert sorted(plan.first.values()) == texts[1:]
    assert set(plan.first) == {embed_key("first:b", text) for text in texts[1:]}
    assert plan.second == {}
    assert len(plan.rekeyed) == 7 and len(plan.switched) == 3 and plan.left == []


def test_every_distinct_text_is_embedded_once_and_the_next_pass_embeds_nothing(
    harness: Harness,
) -> None:
    texts = _new_model(harness)

    report = harness.reembed()
    after = harness.index()

    assert sorted(harness.first.texts) == texts  # 7 chunks, 4 distinct texts
    assert report.first_texts == 4 and report.documents_switched == 3
    assert report.documents_left == 0 and report.chunks_rekeyed == 7
    assert after.embedded == 0 and after.reused == 0
    assert after.added == after.changed == after.deleted == 0 and after.unchanged == 3
    assert set(harness.fingerprints().values()) == {harness.pipeline().fingerprint}
    assert harness.stores_agree()


def test_vector_search_ranks_by_the_new_model_after_the_switch(harness: Harness) -> None:
    _new_model(harness)
    harness.reembed()

    query = harness.first.embed(["deployment note"])[0]
    found = VectorStore.open_readonly(harness.data.lancedb).search(query, 7)

    with harness.manifest() as manifest:
        chunks = manifest.chunks([chunk_id for chunk_id, _ in found])
        titles: dict[str, str] = {d.doc_id: d.title for d in manifest.documents()}
    texts = [
        labelled_text(titles[c.doc_id], c.heading_path, c.text)
        for c in (chunks[i] for i, _ in found)
    ]
    expected = harness.first.embed(texts) @ query
    assert [round(score, 5) for _, score in found] == [round(float(s), 5) for s in expected]
    assert found[0][1] == pytest.approx(float(expected.max()), abs=1e-5)


def test_the_switch_is_one_transaction_that_fails_whole(harness: Harness) -> None:
    harness.index()
    with harness.manifest() as manifest:
        before = {c.chunk_id: c.embed_key for c in manifest.all_chunks()}
    first, second = sorted(before)[:2]
    manifest_writer = Manifest.open(harness.data.manifest)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            manifest_writer.switch_embeddings(
                [(first, "new-key", None), (second, None, None)],  # type: ignore[list-item]
                [("docs:guide.md", "new-fingerprint")],
            )
    finally:
        manifest_writer.close()

    with harness.manifest() as manifest:
        assert {c.chunk_id: c.embed_key for c in manifest.all_chunks()} == before
    assert harness.fingerprints()["docs:guide.md"] == harness.pipeline().fingerprint


def test_documents_chunked_with_another_recipe_are_left_to_the_normal_pass(
    harness: Harness,
) -> None:
    harness.index()
    harness.max_chars = 300  # one document indexed with other chunk settings
    harness.write("later.md", "# Later\n\nWritten after the others.\n")
    harness.index(keys=("later.md",))
    harness.max_chars = 200
    harness.first = FakeEmbedder(dim=16, identity="first:b")

    report = harness.reembed()
    after = harness.index()

    assert report.documents_switched == 3 and report.documents_left == 1
    assert report.first_texts == 4  # later.md's text is the pass's to embed
    assert after.changed == 1 and after.unchanged == 3 and after.embedded == 1
    assert harness.stores_agree()


def test_a_document_indexed_before_recipes_were_recorded_is_left(harness: Harness) -> None:
    harness.index()
    with sqlite3.connect(harness.data.manifest) as conn:  # as an older ragd left it
        conn.execute("DELETE FROM meta WHERE key LIKE 'recipe:%'")
    harness.first = FakeEmbedder(dim=16, identity="first:b")

    report = harness.reembed()

    assert report.documents_switched == 0 and report.documents_left == 3
    assert report.first_texts == 0 and harness.first.texts == []


def test_a_document_whose_text_does_not_rebuild_exactly_is_left(harness: Harness) -> None:
    harness.index()
    with sqlite3.connect(harness.data.manifest) as conn:
        conn.execute("UPDATE documents SET title = 'Renamed' WHERE doc_id = 'docs:notes.md'")
    harness.first = FakeEmbedder(dim=16, identity="first:b")

    report = harness.reembed()

    assert report.documents_switched == 2 and report.documents_left == 1
    assert not any(text.startswith("Renamed") for text in harness.first.texts)


def test_a_rerun_after_a_crash_while_embedding_embeds_only_what_is_missing(
    harness: Harness,
) -> None:
    texts = _new_model(harness)

    with pytest.raises(RuntimeError, match="killed"):
        harness.reembed(CrashingBackend(dies_at=2))
    assert harness.stores_agree()
    assert set(harness.fingerprints().values()) != {harness.pipeline().fingerprint}
    report = harness.reembed()

    assert report.first_texts == 2
    assert sorted(harness.first.texts) == texts  # two before the crash, two after
    assert set(harness.fingerprints().values()) == {harness.pipeline().fingerprint}
    assert harness.stores_agree()


def test_a_rerun_after_a_crash_before_the_manifest_commit_finishes_the_switch(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _new_model(harness)

    def dies(*args: object) -> None:
        raise RuntimeError("killed")

    with monkeypatch.context() as patched:
        patched.setattr(Manifest, "switch_embeddings", dies)
        with pytest.raises(RuntimeError, match="killed"):
            harness.reembed()
    assert harness.stores_agree()  # the new rows replaced the old ones under the same ids
    report = harness.reembed()

    assert report.first_texts == 0 and len(harness.first.texts) == 4
    assert report.documents_switched == 3
    assert harness.index().embedded == 0
    assert harness.stores_agree()


def test_a_model_of_another_width_rebuilds_the_table_with_every_chunk(harness: Harness) -> None:
    harness.index()
    harness.max_chars = 300
    harness.write("later.md", "# Later\n\nWritten after the others.\n")
    harness.index(keys=("later.md",))
    harness.max_chars = 200
    harness.first = FakeEmbedder(dim=24, identity="first:wide")

    report = harness.reembed()

    table = VectorStore.open_readonly(harness.data.lancedb)
    assert report.table_rebuilt and table.dim == 24
    assert report.first_texts == 5  # the left document's current text too
    assert report.documents_switched == 3 and report.documents_left == 1
    assert harness.stores_agree()
    after = harness.index()  # the pass can open the table again, and re-chunks later.md
    assert after.changed == 1 and after.unchanged == 3
    assert harness.stores_agree()


def test_a_rerun_after_a_crash_inside_a_rebuild_finishes_it(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _new_model(harness, dim=24)

    def dies(*args: object) -> None:
        raise RuntimeError("killed")

    with monkeypatch.context() as patched:  # after the drop, before the new table's rows
        patched.setattr(VectorStore, "upsert", dies)
        with pytest.raises(RuntimeError, match="killed"):
            harness.reembed()
    with harness.manifest() as manifest:
        assert not manifest.is_clean()
    report = harness.reembed()

    assert report.first_texts == 0 and report.table_rebuilt
    assert report.documents_switched == 3
    assert VectorStore.open_readonly(harness.data.lancedb).dim == 24
    assert harness.stores_agree()
    assert harness.index().embedded == 0


def test_missing_second_stage_vectors_of_current_documents_are_filled(harness: Harness) -> None:
    harness.second = FakeEmbedder(dim=24, identity="second:a")
    harness.index(fill=False)

    report = harness.reembed()

    assert report.first_texts == 0 and report.second_texts == 4
    assert report.documents_switched == 0 and report.documents_left == 0
    with harness.manifest() as manifest:
        assert manifest.second_stage_missing_count() == 0
        name = second_stage_table("second:a")
        rows = VectorStore.open_readonly(harness.data.lancedb, name=name).chunk_ids()
        assert rows == manifest.chunk_ids()


def test_a_new_second_stage_model_is_switched_to_with_its_rows(harness: Harness) -> None:
    harness.second = FakeEmbedder(dim=24, identity="second:a")
    harness.index()
    harness.second = FakeEmbedder(dim=24, identity="second:b")

    report = harness.reembed()
    after = harness.index()

    assert report.first_texts == 0 and report.second_texts == 4
    assert report.documents_switched == 3
    assert after.embedded == after.second_embedded == 0 and after.changed == 0
    with harness.manifest() as manifest:
        name = second_stage_table("second:b")
        rows = VectorStore.open_readonly(harness.data.lancedb, name=name).chunk_ids()
        assert rows == manifest.chunk_ids() == manifest.second_stage_chunk_ids()


def test_a_run_with_nothing_to_do_embeds_and_writes_nothing(harness: Harness) -> None:
    _new_model(harness)
    harness.reembed()
    harness.first.texts.clear()

    report = harness.reembed()

    assert report.first_texts == report.documents_switched == report.chunks_rekeyed == 0
    assert harness.first.texts == []


def test_the_ray_backend_without_the_extra_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragd.adapters.ray import RayCluster, Scratch

    monkeypatch.setitem(sys.modules, "ray", None)
    backend = RayBackend(RayCluster(), Scratch(str(tmp_path / "scratch")))

    with pytest.raises(UsageError, match=r"pip install -e '\.\[ray\]'"):
        list(backend.embed("first", {"key": "text"}, FakeEmbedder()))


def test_reembed_help_says_what_switches_and_how_to_run_on_ray(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ragd.cli import main

    assert main(["reembed", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())

    assert "--ray" in text and "--ray-address ADDR" in text and "--ray-cpus N" in text
    assert "--config PATH" in text and "--debug" in text
    assert "left, for `ragd index`" in text and "pip install -e '.[ray]'" in text


def test_the_text_summary_names_the_counts_and_the_backend() -> None:
    from ragd.cli.text import reembed_summary

    report = ReembedReport("ray", first_texts=39, documents_switched=6, chunks_rekeyed=41)

    text = reembed_summary(report)

    assert "39 first stage, 0 second stage (on Ray)" in text
    assert "6 switched to the current models, 0 left for `ragd index`" in text
