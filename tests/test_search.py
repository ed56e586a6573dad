"""The read path: modes, fusion, the manifest guard and stale flags (real stores, fake model)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from ragd.errors import QueryRefused
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.search.searcher import Searcher, SearchSettings, clean_query
from ragd.search.staleness import SourcePolicy
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.keywords import KeywordRow, KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore
from tests.conftest import FakeEmbedder

DOCS = {
    "install.md": "# Install\n\nRun the quokka installer from the terminal.\n",
    "config.md": "# Configure\n\nEdit the settings file with any editor.\n",
    "deploy.md": "# Deploy\n\nShip the container to production servers.\n",
}


def _index(root: Path, data: DataDir, pipeline: Pipeline, embedder: FakeEmbedder) -> None:
    """One indexing pass over `root` as folder source "docs"."""
    stores = WriterStores(data, keyword_rows=manifest_keyword_rows)
    try:
        Indexer(stores, [FolderSource("docs", root, ("**/*.md",))], pipeline, embedder).run()
    finally:
        stores.close()


@pytest.fixture
def indexed(tmp_path: Path, fake_embedder: FakeEmbedder) -> tuple[Path, DataDir, Pipeline]:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    data = DataDir(tmp_path / "data")
    pipeline = Pipeline(ChunkSettings(), fake_embedder.identity)
    _index(root, data, pipeline, fake_embedder)
    return root, data, pipeline


def _searcher(
    root: Path, data: DataDir, pipeline: Pipeline, *, max_age: timedelta = timedelta(days=1)
) -> Searcher:
    folder = FolderSource("docs", root, ("**/*.md",))
    return Searcher(
        ManifestReader.open(data.manifest),
        VectorStore.open_readonly(data.lancedb),
        KeywordStore.open_readonly(data.tantivy),
        FakeEmbedder(),
        fingerprint=pipeline.fingerprint,
        policies={"docs": SourcePolicy(max_age, folder)},
        settings=SearchSettings(k=3, max_query_chars=100),
    )


def test_bm25_mode_finds_the_document_with_the_word(
    indexed: tuple[Path, DataDir, Pipeline],
) -> None:
    response = _searcher(*indexed).search("quokka", mode="bm25")

    assert response.hits[0].document.key == "install.md"
    assert response.hits[0].vector_rank is None


def test_hybrid_reports_both_ranks_for_a_hit_both_retrievers_found(
    indexed: tuple[Path, DataDir, Pipeline],
) -> None:
    response = _searcher(*indexed).search("quokka installer")

    top = response.hits[0]
    assert top.document.key == "install.md"
    assert top.bm25_rank == 1 and top.vector_rank == 1


def test_an_edited_file_is_flagged_source_changed(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    root = indexed[0]
    (root / "install.md").write_text("# Install\n\nNow with wombats.\n")

    response = _searcher(*indexed).search("quokka", mode="bm25")

    assert response.hits[0].stale_reasons == ("source_changed",)
    assert response.hits[0].to_json()["stale"] is True


def test_a_touched_but_identical_file_is_not_stale(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    os.utime(indexed[0] / "install.md", ns=(5, 5))

    response = _searcher(*indexed).search("quokka", mode="bm25")

    assert response.hits[0].stale_reasons == ()


def test_a_deleted_file_is_flagged_source_deleted(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    (indexed[0] / "install.md").unlink()

    response = _searcher(*indexed).search("quokka", mode="bm25")

    assert response.hits[0].stale_reasons == ("source_deleted",)


def test_exclude_stale_drops_stale_hits_and_counts_them(
    indexed: tuple[Path, DataDir, Pipeline],
) -> None:
    (indexed[0] / "install.md").unlink()

    response = _searcher(*indexed).search("quokka", mode="bm25", exclude_stale=True)

    assert all(h.document.key != "install.md" for h in response.hits)
    assert response.excluded_stale == 1
    assert response.to_json()["excluded_stale"] == 1


def test_a_document_older_than_max_age_is_flagged(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    response = _searcher(*indexed, max_age=timedelta(0)).search("quokka", mode="bm25")

    assert response.hits[0].stale_reasons == ("max_age",)


def test_another_fingerprint_is_flagged(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    root, data, _ = indexed
    other = Pipeline(ChunkSettings(max_chars=500), "fake:v1")

    response = _searcher(root, data, other).search("quokka", mode="bm25")

    assert response.hits[0].stale_reasons == ("fingerprint",)


def test_chunks_the_manifest_does_not_list_are_never_served(
    indexed: tuple[Path, DataDir, Pipeline],
) -> None:
    _, data, _ = indexed
    orphans = KeywordStore.open(data.tantivy)
    orphans.replace_documents(["ghost"], [KeywordRow("ghost-1", "ghost", "quokka quokka quokka")])
    orphans.close()

    response = _searcher(*indexed).search("quokka", mode="bm25")

    assert [h.chunk.chunk_id for h in response.hits if h.chunk.chunk_id == "ghost-1"] == []
    assert response.hits[0].document.key == "install.md"


def test_a_query_longer_than_the_limit_is_refused(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    with pytest.raises(QueryRefused, match="101 characters; the limit is 100"):
        _searcher(*indexed).search("x" * 101)


def test_control_characters_are_dropped_and_an_empty_query_refused() -> None:
    assert clean_query("a\x00b\tc\n", 100) == "a b c"
    with pytest.raises(QueryRefused, match="empty"):
        clean_query("\x00 \x01", 100)


def test_no_hits_means_abstained(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    response = _searcher(*indexed).search("zzzzunknownword", mode="bm25")

    assert response.hits == [] and response.abstained is True


def test_a_keyword_index_from_an_older_schema_is_rebuilt_from_the_manifest(
    indexed: tuple[Path, DataDir, Pipeline],
) -> None:
    import shutil

    import tantivy

    root, data, pipeline = indexed
    before = ManifestReader.open(data.manifest).chunk_ids()
    scores_before = KeywordStore.open_readonly(data.tantivy).search("quokka settings", 10)
    shutil.rmtree(data.tantivy)
    old = tantivy.SchemaBuilder()
    for name in ("chunk_id", "doc_id"):
        old.add_text_field(name, stored=True, tokenizer_name="raw")
    old.add_text_field("text")
    data.tantivy.mkdir()
    tantivy.Index(old.build(), path=str(data.tantivy))

    stores = WriterStores(data, keyword_rows=manifest_keyword_rows)
    try:
        stores.keywords()  # the writer opening it is what rebuilds it
    finally:
        stores.close()

    rebuilt = KeywordStore.open_readonly(data.tantivy)
    assert rebuilt.chunk_ids() == before
    # Same texts as indexing produced, so the same scores.
    assert dict(rebuilt.search("quokka settings", 10)) == pytest.approx(dict(scores_before))
    hits = _searcher(root, data, pipeline).search("quokka installer", mode="bm25").hits
    assert hits[0].document.key == "install.md"


def test_expand_returns_each_hits_whole_section_as_context(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    paragraphs = [f"Paragraph {i} about wombats and their burrows." * 3 for i in range(8)]
    (root / "long.md").write_text("# Wombats\n\n" + "\n\n".join(paragraphs) + "\n")
    data = DataDir(tmp_path / "data")
    pipeline = Pipeline(ChunkSettings(max_chars=300, overlap=0), fake_embedder.identity)
    _index(root, data, pipeline, fake_embedder)
    searcher = _searcher(root, data, pipeline)

    plain = searcher.search("Paragraph 5 wombats", mode="bm25").hits[0]
    expanded = searcher.search("Paragraph 5 wombats", mode="bm25", expand=True).hits[0]

    assert "context" not in plain.to_json()
    assert expanded.context is not None
    assert expanded.chunk.text in expanded.context
    assert all(p in expanded.context for p in paragraphs)  # every window of the section
    assert len(expanded.context) < sum(len(p) + 2 for p in paragraphs) + 2


def test_expanded_context_is_capped(indexed: tuple[Path, DataDir, Pipeline]) -> None:
    root, data, pipeline = indexed
    searcher = _searcher(root, data, pipeline)
    searcher.settings = SearchSettings(k=3, max_query_chars=100, max_context_chars=10)

    hit = searcher.search("quokka installer", mode="bm25", expand=True).hits[0]

    assert hit.context is not None and len(hit.context) == 10
    assert hit.to_json()["context"] == hit.context
