"""Includes through the write path: real stores on disk, a deterministic fake embedder.

The source selects Markdown and RST only; the code its pages include (FastAPI's
`docs_src/*.py`) is not a document, and an edit to it still reaches every page that
includes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.indexing.report import IndexReport
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.manifest_reader import ManifestReader
from tests.conftest import FakeEmbedder

BODY = (
    "# Request body\n\nDeclare it as a model.\n\n{* ../../docs_src/body/tutorial001.py hl[3] *}\n"
)
CODE = "from pydantic import BaseModel\n\nclass Item(BaseModel):\n    name: str\n"


class Docs:
    """A source root laid out like FastAPI's repository, and its data directory."""

    def __init__(self, tmp_path: Path, embedder: FakeEmbedder, worker_min_files: int = 500) -> None:
        self.worker_min_files = worker_min_files  # 1: every pass prepares on worker processes
        self.root = tmp_path / "repo"
        self.data = DataDir(tmp_path / "data")
        self.embedder = embedder
        self.write("docs_src/body/tutorial001.py", CODE)
        self.write("docs/en/docs/tutorial/body.md", BODY)
        self.write("docs/en/docs/tutorial/other.md", "# Other\n\nNo includes here.\n")

    def write(self, key: str, text: str) -> Path:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def _indexer(self, stores: WriterStores) -> Indexer:
        folder = FolderSource("docs", self.root, ("**/*.md", "**/*.rst"))
        pipeline = Pipeline(ChunkSettings(900, 120), self.embedder.identity)
        return Indexer(
            stores, [folder], pipeline, self.embedder, worker_min_files=self.worker_min_files
        )

    def run(self) -> IndexReport:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            return self._indexer(stores).run()
        finally:
            stores.close()

    def sync(self, keys: Sequence[str]) -> IndexReport:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            return self._indexer(stores).sync("docs", keys=keys)
        finally:
            stores.close()

    def text_of(self, key: str) -> str:
        manifest = ManifestReader.open(self.data.manifest)
        try:
            return "\n\n".join(c.text for c in manifest.chunks_of(f"docs:{key}"))
        finally:
            manifest.close()


def test_a_code_include_outside_the_selected_files_is_indexed_as_code(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)

    report = docs.run()

    assert report.added == 2
    text = docs.text_of("docs/en/docs/tutorial/body.md")
    assert f"```py\n{CODE}```" in text
    assert "{*" not in text


def test_worker_processes_read_includes_as_the_writer_does(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder, worker_min_files=1)
    docs.run()
    docs.write("docs_src/body/tutorial001.py", CODE.replace("name: str", "price: float"))

    report = docs.run()

    assert report.changed == 1
    assert "price: float" in docs.text_of("docs/en/docs/tutorial/body.md")


def test_editing_an_included_file_reindexes_its_includers_and_only_them(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    docs.write("docs/en/docs/tutorial/again.md", BODY.replace("Request body", "Again"))
    docs.run()
    fake_embedder.texts.clear()
    docs.write("docs_src/body/tutorial001.py", CODE.replace("name: str", "price: float"))

    report = docs.run()

    assert report.changed == 2
    assert report.unchanged == 1
    assert "price: float" in docs.text_of("docs/en/docs/tutorial/body.md")
    assert "price: float" in docs.text_of("docs/en/docs/tutorial/again.md")
    assert all("No includes here" not in text for text in fake_embedder.texts)


def test_a_pass_after_the_includes_changed_passes_over_them_again(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    docs.run()
    docs.write("docs_src/body/tutorial001.py", CODE + "\n# more\n")
    docs.run()

    report = docs.run()

    assert report.changed == 0
    assert report.unchanged == 2


def test_a_missing_include_is_dropped_and_read_once_it_appears(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    docs.write("docs/en/docs/tutorial/body.md", BODY + '\n--8<-- "snippets/later.md"\n')
    first = docs.run()
    text_before = docs.text_of("docs/en/docs/tutorial/body.md")
    docs.write("docs/en/docs/tutorial/snippets/later.md", "Written after the first pass.\n")

    report = docs.run()

    assert first.added == 2 and first.failed == 0
    assert "8<" not in text_before and "later.md" not in text_before
    assert report.changed == 1
    assert "Written after the first pass." in docs.text_of("docs/en/docs/tutorial/body.md")


def test_an_include_that_climbs_out_of_the_root_is_dropped(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    (tmp_path / "secret.md").write_text("the password is quokka\n")
    escape = "../" * 8 + "secret.md"
    page = f'# Page\n\nText.\n\n--8<-- "{escape}"\n\n{{! ../../secret.md !}}\n'
    docs.write("docs/page.md", page)

    report = docs.run()

    assert report.failed == 0
    assert docs.text_of("docs/page.md") == "Text."


def test_an_include_through_a_symlink_out_of_the_root_is_dropped(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("PASSWORD = 'quokka'\n")
    (docs.root / "docs_src" / "linked").symlink_to(outside)
    docs.write("docs/en/docs/page.md", "# Page\n\n{* ../../docs_src/linked/secret.py *}\n")

    docs.run()

    assert "quokka" not in docs.text_of("docs/en/docs/page.md")


def test_an_rst_page_includes_rst_and_code_inside_the_root(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    docs.write("manual/shared/intro.rst", "Shared introduction paragraph.\n")
    docs.write(
        "manual/guide.rst",
        "Guide\n=====\n\n.. include:: shared/intro.rst\n\n"
        ".. literalinclude:: ../docs_src/body/tutorial001.py\n   :lines: 3-4\n",
    )

    docs.run()

    text = docs.text_of("manual/guide.rst")
    assert "Shared introduction paragraph." in text
    assert "class Item(BaseModel):\n    name: str" in text
    assert "include::" not in text and "BaseModel\n\nclass" not in text


def test_a_hint_on_an_included_file_reindexes_its_includers(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    docs = Docs(tmp_path, fake_embedder)
    docs.run()
    docs.write("docs_src/body/tutorial001.py", CODE.replace("name: str", "price: float"))

    report = docs.sync(["docs_src/body/tutorial001.py"])

    assert report.changed == 1
    assert "price: float" in docs.text_of("docs/en/docs/tutorial/body.md")
