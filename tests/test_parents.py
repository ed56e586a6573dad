"""Parent retrieval from a real manifest: a chunk's whole section, a whole document."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.search.parents import ParentReader
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.manifest_reader import ManifestReader
from tests.conftest import FakeEmbedder
from tests.pdfs import text_pdf

PARAGRAPHS = [f"Paragraph {n} of the long section, with words enough to fill." for n in range(8)]
DOC = (
    "# Guide\n\n## Short\n\nA short section.\n\n## Long\n\n"
    + "\n\n".join(PARAGRAPHS)
    + "\n\n## Example\n\nFirst example.\n\n## Other\n\nBetween.\n\n## Example\n\nSecond example.\n"
)


def indexed(tmp_path: Path, name: str, content: bytes) -> ParentReader:
    """A reader over an index of one document, `docs:<name>`, written into real stores."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / name).write_bytes(content)
    data = DataDir(tmp_path / "data")
    embedder = FakeEmbedder()
    stores = WriterStores(data, keyword_rows=manifest_keyword_rows)
    try:
        pipeline = Pipeline(ChunkSettings(max_chars=150, overlap=40), embedder.identity)
        Indexer(stores, [FolderSource("docs", root, (name,))], pipeline, embedder).run()
    finally:
        stores.close()
    return ParentReader(ManifestReader.open(data.manifest), lambda doc: ())


@pytest.fixture
def reader(tmp_path: Path) -> ParentReader:
    return indexed(tmp_path, "guide.md", DOC.encode())


def _chunk_with(reader: ParentReader, text: str) -> str:
    chunks = reader.manifest.chunks_of("docs:guide.md")
    return next(c.chunk_id for c in chunks if text in c.text)


def test_a_section_of_several_chunks_comes_back_whole_without_repeated_overlap(
    reader: ParentReader,
) -> None:
    found = reader.section(_chunk_with(reader, "Paragraph 5"), 10_000)

    assert found is not None
    assert found.parent.heading_path == ("Guide", "Long")
    assert found.parent.text == "\n\n".join(PARAGRAPHS)
    assert found.parent.last > found.parent.first and not found.parent.truncated


def test_a_section_longer_than_the_budget_is_cut_around_the_chunk(reader: ParentReader) -> None:
    found = reader.section(_chunk_with(reader, "Paragraph 6"), 120)

    assert found is not None and found.parent.truncated
    assert len(found.parent.text) == 120 and "Paragraph 6" in found.parent.text


def test_two_sections_sharing_a_heading_stay_apart(reader: ParentReader) -> None:
    found = reader.section(_chunk_with(reader, "Second example"), 10_000)

    assert found is not None and found.parent.text == "Second example."


def test_a_whole_document_has_every_section_under_its_heading(reader: ParentReader) -> None:
    found = reader.document("docs:guide.md", 100_000)

    assert found is not None and not found.parent.truncated
    text = found.parent.text
    assert text.startswith("## Guide › Short\n\nA short section.")
    assert "## Guide › Long\n\n" + "\n\n".join(PARAGRAPHS) in text
    assert found.to_json()["chars"] == len(text)


def test_a_document_cut_to_the_budget_says_so(reader: ParentReader) -> None:
    found = reader.document("docs:guide.md", 50)

    assert found is not None and found.parent.truncated and len(found.parent.text) == 50
    assert found.parent.chars > 50


def test_unknown_ids_find_nothing(reader: ParentReader) -> None:
    assert reader.section("no-such-chunk", 100) is None
    assert reader.document("docs:missing.md", 100) is None


def test_a_pdf_section_spanning_two_pages_is_cited_by_the_page_of_its_chunk(
    tmp_path: Path,
) -> None:
    pages = [["Install", "Run the installer first."], ["Then answer its questions."]]
    pdf = indexed(tmp_path, "guide.pdf", text_pdf(pages, outline=[("Install", 0)]))
    second = next(c for c in pdf.manifest.chunks_of("docs:guide.pdf") if "questions" in c.text)

    found = pdf.section(second.chunk_id, 10_000)

    assert found is not None and found.parent.heading_path == second.heading_path
    assert (found.parent.page, found.parent.text) == (2, "Then answer its questions.")
    assert str(found.to_json()["uri"]).endswith("guide.pdf#page=2")
