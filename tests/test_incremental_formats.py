"""Edit one section of a real document, index again: only that section's chunks are embedded.

For each format that reads sections from markup (reStructuredText, MDX, notebooks,
Markdown with generator markup), a real page is indexed into real stores on disk, one
section (one notebook cell) is edited, and it is indexed again. The fake embedder records
every text sent to the "model": it must be exactly the edited section's new chunk texts,
and every chunk of the other sections keeps its id. A PDF's sections are its pages (under
its outline's headings): a real PDF cannot be edited in place, so tests/pdfs.py writes one
whose pages each have an outline entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.indexing.chunking import ChunkSettings, chunk_document
from ragd.indexing.indexer import Indexer
from ragd.indexing.parsers import parse_document
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import ChunkRecord
from tests.conftest import FASTAPI_DOCS, FakeEmbedder
from tests.pdfs import text_pdf

FIXTURES = Path(__file__).parent / "fixtures"
SETTINGS = ChunkSettings(900, 120)


@dataclass(frozen=True)
class Edit:
    """A one-place change to a page, and the heading path of the section it is in."""

    name: str
    original: Callable[[], bytes]
    old: str
    new: str
    section: tuple[str, ...]


def real(page: Path, old: str, new: str, section: tuple[str, ...]) -> Edit:
    return Edit(page.name, page.read_bytes, old, new, section)


_MANUAL = [["Install", "Run the installer."], ["Configure", "Edit the settings file."]]
_MANUAL += [["Usage", "Call it with the file."]]


def _manual() -> bytes:
    return text_pdf(_MANUAL, outline=[(lines[0], n) for n, lines in enumerate(_MANUAL)])


EDITS = {
    "rst section": real(
        FIXTURES / "rst" / "command_add_library.rst",
        "targets can be used as linkable targets",
        "targets can be used as linked-to targets",
        ("add_library", "Alias Libraries"),
    ),
    "mdx section": real(
        FIXTURES / "mdx" / "markdown-features-tabs.mdx",
        "customize the appearance of a certain set of tabs",
        "customize the look of a certain set of tabs",
        ("Tabs", "Customizing tabs"),
    ),
    "notebook markdown cell": real(
        FIXTURES / "notebooks" / "importing_notebooks.ipynb",
        "All this one does is check, when you do:",
        "All this one does is check, on every import:",
        ("Importing Jupyter Notebooks as Modules", "The Module Finder"),
    ),
    "notebook code cell": real(
        FIXTURES / "notebooks" / "importing_notebooks.ipynb",
        "sys.meta_path.append(NotebookFinder())",
        "sys.meta_path.insert(0, NotebookFinder())",
        ("Importing Jupyter Notebooks as Modules", "Register the hook"),
    ),
    "markdown admonition": real(
        FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial" / "body.md",
        "It improves editor support for Pydantic models, with:",
        "It improves editor support for Pydantic models, including:",
        ("Request Body", "Editor support"),
    ),
    # Same length: the hand-written PDF's offsets stay right.
    "pdf page": Edit(
        "manual.pdf",
        _manual,
        "Edit the settings file.",
        "Edit the settings note.",
        ("manual", "Configure"),
    ),
}


def index(root: Path, embedder: FakeEmbedder) -> dict[str, dict[str, int]]:
    stores = WriterStores(DataDir(root.parent / "data"), keyword_rows=manifest_keyword_rows)
    try:
        folder = FolderSource("docs", root, ("**/*",))
        pipeline = Pipeline(SETTINGS, embedder.identity)
        report = Indexer(stores, [folder], pipeline, embedder).run().to_json()
        return {key: report[key] for key in ("documents", "chunks")}  # type: ignore[misc]
    finally:
        stores.close()


def stored_chunks(root: Path, name: str) -> list[ChunkRecord]:
    manifest = ManifestReader.open(DataDir(root.parent / "data").manifest)
    try:
        return manifest.chunks_of(f"docs:{name}")
    finally:
        manifest.close()


def embed_texts(data: bytes, name: str) -> list[tuple[tuple[str, ...], str]]:
    """Each chunk's heading path and embedded text, as the pipeline makes them."""
    chunks = chunk_document(parse_document(data, name), SETTINGS)
    return [(chunk.heading_path, chunk.embed_text) for chunk in chunks]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_editing_one_section_embeds_exactly_that_sections_new_chunks(
    edit: Edit, root: Path, fake_embedder: FakeEmbedder
) -> None:
    original = edit.original()
    assert original.count(edit.old.encode()) == 1
    edited = original.replace(edit.old.encode(), edit.new.encode())
    page = root / edit.name
    page.write_bytes(original)
    index(root, fake_embedder)
    before = stored_chunks(root, page.name)
    fake_embedder.texts.clear()
    page.write_bytes(edited)

    report = index(root, fake_embedder)

    after = stored_chunks(root, page.name)
    old_texts = {text for _, text in embed_texts(original, page.name)}
    new_in_section = {
        text
        for path, text in embed_texts(edited, page.name)
        if path == edit.section and text not in old_texts
    }
    assert report["documents"]["changed"] == 1
    assert any(edit.new in text for text in new_in_section)
    assert sorted(fake_embedder.texts) == sorted(new_in_section)
    assert report["chunks"]["embedded"] == len(new_in_section)
    others_before = {(c.chunk_id, c.text) for c in before if c.heading_path != edit.section}
    others_after = {(c.chunk_id, c.text) for c in after if c.heading_path != edit.section}
    assert others_after == others_before != set()


def test_editing_only_a_dropped_code_include_embeds_nothing(
    root: Path, fake_embedder: FakeEmbedder
) -> None:
    source = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial" / "body.md"
    include = "{* ../../docs_src/body/tutorial001_py310.py hl[2] *}"
    original = source.read_bytes()
    assert original.count(include.encode()) == 1
    page = root / source.name
    page.write_bytes(original)
    first = index(root, fake_embedder)
    before = stored_chunks(root, page.name)
    fake_embedder.texts.clear()
    page.write_bytes(original.replace(include.encode(), include.replace("hl[2]", "hl[3]").encode()))

    report = index(root, fake_embedder)

    assert report["documents"]["changed"] == 1
    assert fake_embedder.texts == []
    assert report["chunks"]["reused"] == first["chunks"]["embedded"]
    assert stored_chunks(root, page.name) == before
