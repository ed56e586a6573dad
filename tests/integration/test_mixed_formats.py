"""A docs folder as a server holds one: a Sphinx manual's reStructuredText, Docusaurus MDX,
notebooks, real PDFs and generator-written Markdown, served by a real `ragd serve`.

Every document indexes (a malformed MDX page with a warning, never a failure); no chunk
of any format carries that format's markup; hits name the right section, and PDF hits
their page, over HTTP and MCP.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.config.sources import DEFAULT_INCLUDE
from ragd.stores.manifest_reader import ManifestReader
from tests.conftest import FASTAPI_DOCS
from tests.integration.daemon import Served
from tests.integration.mcp_clients import http_session

FIXTURES = Path(__file__).parent.parent / "fixtures"
TUTORIAL = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial"
# fastapi-docs pages dense with MkDocs blocks (`///`), admonitions and code includes.
GENERATOR_PAGES = ("body.md", "query-params-str-validations.md", "dependencies/index.md")
# An MDX page MDX's compiler would refuse: read as Markdown, with a warning.
MALFORMED_MDX = "# Broken\n\nThis page opens { an expression and never closes it.\n"

# (question, document, a heading the hit's path holds, its page for a PDF)
QUESTIONS = [
    ("add_library ALIAS target name", "sphinx/command_add_library.rst", "Alias Libraries", None),
    ("if VERSION_LESS compare versions", "sphinx/command_if.rst", "Version Comparisons", None),
    ("set ENV variable value", "sphinx/command_set.rst", "Set Environment Variable", None),
    ("explicit heading id syntax", "docusaurus/markdown-features-headings.mdx",
     "Explicit ids", None),
    ("persist the selected tab in the url query string", "docusaurus/markdown-features-tabs.mdx",
     "Query string", None),
    ("register NotebookFinder with sys.meta_path", "notebooks/importing_notebooks.ipynb",
     "Register the hook", None),
    ("enumerations can be pickled and unpickled", "manuals/aenum.pdf", "Pickling", 9),
    ("IntFlag members combined with bitwise operators", "manuals/aenum.pdf", "IntFlag", 11),
]  # fmt: skip

# What must never reach a chunk, by the suffix of the document it came from.
MARKUP = {
    ".rst": [
        re.compile(r"^\s*\.\. [\w:-]+::", re.M),  # directives
        re.compile(r":[\w:+-]+:`"),  # roles
        re.compile(r"^([=\-~^\"'*+#`])\1{3,}\s*$", re.M),  # section underlines
        re.compile(r"^\.\.\s*$|^\.\. [^\[]", re.M),  # comments
    ],
    ".mdx": [
        re.compile(r"^\s*(import|export) .*", re.M),
        re.compile(r"\{/\*|\*/\}"),
        re.compile(r"\{#[\w-]+\}"),
        re.compile(r"</?(Tabs|TabItem|Admonition|Highlight)\b"),
        re.compile(r"^:::", re.M),
    ],
    ".ipynb": [
        re.compile(r'"(cell_type|output_type|execution_count)"'),
        re.compile(r"image/png|application/vnd|data:image"),
        re.compile(r"[A-Za-z0-9+/]{200,}"),  # base64
    ],
    ".pdf": [re.compile("[\x00-\x08\x0b-\x1f\ufffe]")],  # PDFium's control marks
    ".md": [
        re.compile(r"^\s*(!!!|\?\?\?\+?|///)", re.M),
        re.compile(r"^:::", re.M),
        re.compile(r"--8<--|\{\*.*?\*\}|\{!.*?!\}|\{\{[<%]"),
    ],
}


# Code shows markup on purpose (a page about MDX shows `<Tabs>`): only prose is checked.
_CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`", re.S)


def prose(text: str) -> str:
    """A chunk's text without its fenced and inline code."""
    return _CODE.sub(" ", text)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("mixed")
    root = workdir / "docs"
    folders = {"sphinx": "rst", "docusaurus": "mdx", "notebooks": "notebooks", "manuals": "pdf"}
    for folder, fixtures in folders.items():
        (root / folder).mkdir(parents=True)
        for path in (FIXTURES / fixtures).iterdir():
            if path.suffix != ".md":
                shutil.copyfile(path, root / folder / path.name)
    # Fixtures kept to show how bad files fail: this folder is a healthy one.
    for bad in ("invalid.ipynb", "matplotlib-logo.pdf", "matplotlib-logo-encrypted.pdf"):
        next(root.glob(f"*/{bad}")).unlink()
    (root / "docusaurus" / "broken.mdx").write_text(MALFORMED_MDX)
    for page in GENERATOR_PAGES:
        target = root / "fastapi" / page
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TUTORIAL / page, target)
    daemon = Served(workdir, root, include=DEFAULT_INCLUDE).start()
    try:
        daemon.wait_ready()
        daemon.wait_scanned()
        yield daemon
    finally:
        daemon.stop()


def test_every_document_of_every_format_indexes_without_a_failure(served: Served) -> None:
    source = served.status()["sources"][0]

    assert source["failed_documents"] == []
    assert source["documents"] == len(list((served.workdir / "docs").rglob("*.*")))
    assert source["empty"] == 0


def test_a_malformed_mdx_page_is_indexed_with_its_warning_in_the_status(served: Served) -> None:
    source = served.status()["sources"][0]

    assert [d["path"] for d in source["warned_documents"]] == ["docusaurus/broken.mdx"]
    assert source["warned_documents"][0]["warning"].startswith("read as Markdown: malformed MDX")
    assert "docusaurus/broken.mdx" in served.get_text("/")


def test_no_chunk_of_any_format_carries_its_markup(served: Served) -> None:
    manifest = ManifestReader.open(served.workdir / "data" / "state.db")
    try:
        leaks = [
            (document.key, pattern.pattern, chunk.text[:120])
            for document in manifest.documents()
            for chunk in manifest.chunks_of(document.doc_id)
            for pattern in MARKUP[Path(document.key).suffix]
            if pattern.search(prose(chunk.text)) and document.key != "docusaurus/broken.mdx"
        ]
        suffixes = {Path(d.key).suffix for d in manifest.documents() if d.chunk_count}
    finally:
        manifest.close()

    assert suffixes == {".rst", ".mdx", ".ipynb", ".pdf", ".md"}
    assert leaks == []


@pytest.mark.parametrize(("question", "path", "heading", "page"), QUESTIONS)
def test_a_question_finds_its_section_and_page(
    served: Served, question: str, path: str, heading: str, page: int | None
) -> None:
    hits = served.query(question, mode="hybrid", k=5)["results"]

    found = [(h["path"], h["page"]) for h in hits if heading in h["heading_path"]]
    assert (path, page) in found, [(h["path"], h["heading_path"], h["page"]) for h in hits]


def test_a_pdf_hit_cites_its_page_in_its_uri_and_context(served: Served) -> None:
    question = "enumerations can be pickled and unpickled"
    top = served.query(question, mode="hybrid", k=1)["results"][0]
    context = served.post_json("/v1/context", {"query": question, "k": 1})

    assert top["uri"].endswith("/manuals/aenum.pdf#page=9")
    assert context["passages"][0]["page"] == 9
    assert context["passages"][0]["citation"].endswith("aenum.pdf#page=9")


def test_an_unpaged_hit_has_no_page_and_a_plain_uri(served: Served) -> None:
    top = served.query("register NotebookFinder with sys.meta_path", mode="hybrid", k=1)
    hit = top["results"][0]

    assert hit["page"] is None
    assert hit["uri"].endswith("/notebooks/importing_notebooks.ipynb")


def test_an_mcp_search_hit_and_its_section_carry_the_page_of_a_pdf(served: Served) -> None:
    async def search() -> tuple[Any, Any]:
        async with http_session(served.port) as session:
            found = await session.call_tool(
                "search", {"query": "enumerations can be pickled and unpickled", "k": 1}
            )
            chunk_id = found.structured_content["hits"][0]["chunk_id"]
            return found, await session.call_tool("get_section", {"chunk_id": chunk_id})

    result, section = asyncio.run(asyncio.wait_for(search(), 60))
    hit = result.structured_content["hits"][0]

    assert hit["page"] == 9
    assert hit["uri"].endswith("aenum.pdf#page=9")
    assert "aenum.pdf#page=9" in result.content[0].text
    assert section.structured_content["page"] == 9
    assert "Pickling" in section.structured_content["heading_path"]
    assert "pickled and unpickled" in section.structured_content["text"]
