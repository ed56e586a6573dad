"""Jupyter notebooks: Markdown cells' headings, code cells as code, plain-text outputs only.

Real notebooks from jupyter/notebook, jupyter/nbconvert and jupyter/nbformat are in
tests/fixtures/notebooks (README there); hand-made ones cover what those lack.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.indexing.chunking import ChunkSettings, chunk_document
from ragd.indexing.indexer import Indexer
from ragd.indexing.parsers import ParsedDocument, UnsupportedDocument, parse_document
from ragd.indexing.parsers.notebook import MAX_OUTPUT_CHARS
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.manifest_reader import ManifestReader
from tests.conftest import FakeEmbedder

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
VALID_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.ipynb") if p.name != "invalid.ipynb")
# What a notebook stores besides its text: the JSON itself, base64 payloads (on one line,
# or in the 76-column lines notebooks often store them in), HTML, ANSI colours.
_RAW = re.compile(
    r"data:image|[A-Za-z0-9+/=]{200,}|(?:[A-Za-z0-9+/=]{60,}\n){3}|iVBORw0KGgo"
    r'|<div|"outputs"|"cell_type"|\x1b'
)


def parse_fixture(name: str) -> ParsedDocument:
    return parse_document((FIXTURES / name).read_bytes(), name)


def notebook(*cells: dict[str, Any], language: str = "python") -> bytes:
    metadata = {"kernelspec": {"name": "k", "display_name": "K", "language": language}}
    return json.dumps(
        {"nbformat": 4, "nbformat_minor": 4, "metadata": metadata, "cells": list(cells)}
    ).encode()


def markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def code(source: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "metadata": {},
        "execution_count": 1,
        "source": source,
        "outputs": list(outputs),
    }


def all_blocks(doc: ParsedDocument) -> list[tuple[tuple[str, ...], bool, str]]:
    return [(s.heading_path, b.is_code, b.text) for s in doc.sections for b in s.blocks]


def test_markdown_cells_give_the_title_and_heading_path() -> None:
    doc = parse_fixture("importing_notebooks.ipynb")

    assert doc.title == "Importing Jupyter Notebooks as Modules"
    assert [s.heading_path for s in doc.sections] == [
        ("Importing Jupyter Notebooks as Modules",),
        ("Importing Jupyter Notebooks as Modules", "Notebook Loader"),
        ("Importing Jupyter Notebooks as Modules", "The Module Finder"),
        ("Importing Jupyter Notebooks as Modules", "Register the hook"),
        (
            "Importing Jupyter Notebooks as Modules",
            "Register the hook",
            "Aside: displaying notebooks",
        ),
        ("Importing Jupyter Notebooks as Modules", "Notebooks in packages"),
    ]


def test_a_notebook_without_an_h1_is_titled_by_its_file_stem() -> None:
    doc = parse_fixture("many_tracebacks.ipynb")

    assert doc.title == "many_tracebacks"


def test_code_cells_are_code_blocks_fenced_in_the_kernels_language() -> None:
    doc = parse_fixture("importing_notebooks.ipynb")

    loader = [text for path, is_code, text in all_blocks(doc) if "class NotebookLoader" in text]
    assert len(loader) == 1
    assert loader[0].startswith("```python\nclass NotebookLoader(object):")
    assert loader[0].endswith("\n```")
    assert all(is_code for _, is_code, text in all_blocks(doc) if text.startswith("```"))


def test_stdout_and_plain_text_results_follow_their_cell_as_text_blocks() -> None:
    blocks = [(is_code, text) for _, is_code, text in all_blocks(parse_fixture("test4.ipynb"))]

    printed = blocks.index((True, '```\nfrom __future__ import annotations\n\nprint("hello")\n```'))
    assert blocks[printed + 1] == (True, "```text\nhello\n```")


def test_a_version_3_notebook_reads_as_its_version_4_upgrade() -> None:
    v3, v4 = parse_fixture("test3.ipynb"), parse_fixture("test4.ipynb")

    assert v3.title == v4.title == "nbconvert latex test"
    assert [s.heading_path for s in v3.sections] == [s.heading_path for s in v4.sections]


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_no_chunk_holds_images_html_tracebacks_or_notebook_json(name: str) -> None:
    chunks = chunk_document(parse_fixture(name), ChunkSettings(900, 120))

    assert chunks
    assert [c.embed_text for c in chunks if _RAW.search(c.embed_text)] == []


# Any mix of cells and outputs as Jupyter writes them: only text/plain and stdout may reach
# a chunk. Each dropped output carries a word of its own that no chunk may hold.
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 8
_OUTPUTS: list[dict[str, Any]] = [
    {"output_type": "stream", "name": "stdout", "text": "printed line\n"},
    {"output_type": "stream", "name": "stderr", "text": "stderrword warning\n"},
    {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {"text/plain": "(100, 100)", "text/html": "<div>htmlword</div>"},
    },
    {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": _PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"},
    },
    {
        "output_type": "display_data",
        "metadata": {},
        "data": {
            "application/vnd.jupyter.widget-view+json": {"model_id": "widgetword"},
            "text/plain": "IntSlider(value=0)",
        },
    },
    {
        "output_type": "display_data",
        "metadata": {},
        "data": {"text/latex": "$latexword$", "application/javascript": "jsword()"},
    },
    {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/svg+xml": "<svg><text>svgword</text></svg>"},
    },
    {
        "output_type": "error",
        "ename": "NameError",
        "evalue": "tracebackword",
        "traceback": ["\x1b[0;31mNameError\x1b[0m: tracebackword is not defined"],
    },
]
_DROPPED_WORDS = re.compile(r"stderrword|htmlword|widgetword|latexword|jsword|svgword|traceback")
_MARKDOWN_CELLS = [
    "# Title",
    "## Section",
    "### Sub `code`",
    "Plain words in a cell.",
    f"A plot: ![plot](data:image/png;base64,{_PNG})",
    "- a list\n- of items",
    "```python\nx = 1\n```",
    "```bash\npip install x",
]
_CODE = st.sampled_from(["x = 1", "print(x)", "df.head()", "plt.plot(x)", "%matplotlib inline", ""])
_CELLS = st.one_of(
    st.sampled_from(_MARKDOWN_CELLS).map(markdown),
    st.builds(lambda src, outs: code(src, *outs), _CODE, st.lists(st.sampled_from(_OUTPUTS))),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_CELLS, max_size=12), st.sampled_from(["python", "julia", "R"]))
def test_no_mix_of_cells_and_outputs_leaves_notebook_data_in_a_chunk(
    cells: list[dict[str, Any]], language: str
) -> None:
    doc = parse_document(notebook(*cells, language=language), "mix.ipynb")
    chunks = chunk_document(doc, ChunkSettings(900, 120))

    assert [c.embed_text for c in chunks if _RAW.search(c.embed_text)] == []
    assert [c.embed_text for c in chunks if _DROPPED_WORDS.search(c.embed_text)] == []


def test_images_html_and_tracebacks_stored_in_outputs_are_dropped() -> None:
    text = "\n".join(b for _, _, b in all_blocks(parse_fixture("numpy_matplotlib.ipynb")))
    traceback = "\n".join(b for _, _, b in all_blocks(parse_fixture("many_tracebacks.ipynb")))

    assert "(100, 100)" in text  # the plain-text results are kept...
    assert "iVBORw0KGgo" not in text  # ...the PNG beside them is not
    assert "matplotlib.figure.Figure" not in text  # nor its text/plain stand-in
    assert "NameError" not in traceback and "iAmNotDefined" not in traceback


def test_a_data_uri_written_in_a_markdown_cell_is_dropped() -> None:
    payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 5
    doc = parse_document(
        notebook(markdown(f"# Plot\n\nThe curve: ![curve](data:image/png;base64,{payload})")),
        "plot.ipynb",
    )

    text = "\n".join(b for _, _, b in all_blocks(doc))
    assert "The curve: ![curve](" in text
    assert payload[:40] not in text and "data:image" not in text


def test_outputs_are_cut_at_max_output_chars_per_cell() -> None:
    long_print = {"output_type": "stream", "name": "stdout", "text": "row\n" * 10_000}
    doc = parse_document(notebook(code("print(rows)", long_print)), "rows.ipynb")

    output = [text for _, _, text in all_blocks(doc) if text.startswith("```text")]
    assert len(output) == 1
    assert MAX_OUTPUT_CHARS - 10 < len(output[0]) < MAX_OUTPUT_CHARS + 20
    assert output[0].endswith("…\n```")


def test_stderr_and_error_outputs_are_dropped() -> None:
    stderr = {"output_type": "stream", "name": "stderr", "text": "UserWarning: deprecated\n"}
    error = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "bad",
        "traceback": ["\x1b[0;31mValueError\x1b[0m: bad"],
    }
    doc = parse_document(notebook(code("f()", stderr, error)), "f.ipynb")

    assert [text for _, _, text in all_blocks(doc)] == ["```python\nf()\n```"]


def test_a_fence_left_open_in_a_markdown_cell_ends_with_its_cell() -> None:
    doc = parse_document(
        notebook(markdown("# A\n\n```bash\npip install x"), markdown("## B\n\nAfter the fence.")),
        "open.ipynb",
    )

    assert [s.heading_path for s in doc.sections] == [("A",), ("A", "B")]


def test_code_holding_a_fence_stays_inside_its_block() -> None:
    source = 'print("""\n```\n# not a heading\n```\n""")'
    doc = parse_document(notebook(markdown("# T"), code(source)), "fence.ipynb")

    assert all_blocks(doc) == [(("T",), True, f"````python\n{source}\n````")]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"nbformat": 4, "cells": [', "not valid JSON (Expecting value: line 1 column 27"),
        (b"[1, 2]", "not a Jupyter notebook (AttributeError"),
        (b'{"name": "pkg", "version": "1.0"}', "not a Jupyter notebook (no nbformat version"),
        (b'{"nbformat": 9, "nbformat_minor": 0}', "not a Jupyter notebook (Unsupported nbformat"),
        ((FIXTURES / "invalid.ipynb").read_bytes(), "invalid notebook ("),
    ],
)
def test_an_invalid_notebook_is_unsupported_with_a_one_line_reason(
    data: bytes, reason: str
) -> None:
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(data, "broken.ipynb")

    assert caught.value.reason.startswith(reason)
    assert "\n" not in caught.value.reason and len(caught.value.reason) < 300


def test_nbformat_is_imported_only_when_a_notebook_is_parsed() -> None:
    code = (
        "import sys; from ragd.indexing.parsers import parse_document; "
        "parse_document(b'# A\\n\\ntext', 'a.md'); print('nbformat' in sys.modules); "
        'parse_document(b\'{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, '
        "\"cells\": []}', 'a.ipynb'); print('nbformat' in sys.modules)"
    )

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.split() == ["False", "True"]


# Indexing: real stores on disk, the fake embedder counting what it embeds.


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "docs"
    root.mkdir()
    yield root


def index(root: Path, embedder: FakeEmbedder) -> dict[str, Any]:
    stores = WriterStores(DataDir(root.parent / "data"), keyword_rows=manifest_keyword_rows)
    try:
        source = FolderSource("docs", root, ("**/*.ipynb",))
        pipeline = Pipeline(ChunkSettings(900, 120), embedder.identity)
        report: dict[str, Any] = Indexer(stores, [source], pipeline, embedder).run().to_json()
        return report
    finally:
        stores.close()


def test_an_invalid_notebook_is_a_recorded_failure_beside_indexed_ones(
    folder: Path, fake_embedder: FakeEmbedder
) -> None:
    for name in ("invalid.ipynb", "numpy_matplotlib.ipynb"):
        (folder / name).write_bytes((FIXTURES / name).read_bytes())

    report = index(folder, fake_embedder)

    assert report["documents"]["failed"] == 1 and report["documents"]["added"] == 1
    manifest = ManifestReader.open(DataDir(folder.parent / "data").manifest)
    try:
        failed = manifest.document("docs:invalid.ipynb")
    finally:
        manifest.close()
    assert failed is not None and failed.status == "failed"
    assert failed.error is not None and failed.error.startswith("invalid notebook (")
