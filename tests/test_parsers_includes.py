"""Includes expanded by the Markdown and RST parsers, read through a callback."""

from __future__ import annotations

from ragd.indexing.parsers import parse_document

FILES = {
    "docs_src/app.py": (
        "import fastapi\n\napp = fastapi.FastAPI()\n\n\n@app.get('/')\ndef root():\n    return {}\n"
    ),
    "snippets/install.md": "Run `pip install ragd` first.\n",
    "snippets/nested.md": 'Nested text.\n\n--8<-- "snippets/install.md"\n',
    "shared/intro.rst": "Shared introduction.\n",
    "shared/section.rst": "Included section\n----------------\n\nUnder the included heading.\n",
}


class Reader:
    """A `ReadInclude` over FILES that remembers what it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, path: str) -> bytes | None:
        self.asked.append(path)
        text = FILES.get(path)
        return None if text is None else text.encode()


def blocks(source: str, filename: str = "page.md") -> list[tuple[str, bool]]:
    parsed = parse_document(source.encode(), filename, Reader())
    return [(b.text, b.is_code) for s in parsed.sections for b in s.blocks]


def test_a_fastapi_code_include_becomes_a_code_block() -> None:
    source = "# Body\n\nText.\n\n{* docs_src/app.py hl[3] *}\n"

    assert blocks(source) == [("Text.", False), (f"```py\n{FILES['docs_src/app.py']}```", True)]


def test_a_fastapi_line_selection_keeps_those_lines() -> None:
    assert blocks("{* docs_src/app.py ln[6:8] hl[7] *}\n") == [
        ("```py\n@app.get('/')\ndef root():\n    return {}\n```", True)
    ]


def test_a_markdown_snippet_becomes_text_of_the_page() -> None:
    assert blocks('Intro.\n\n--8<-- "snippets/install.md"\n\nOutro.\n') == [
        ("Intro.", False),
        ("Run `pip install ragd` first.", False),
        ("Outro.", False),
    ]


def test_a_snippet_of_code_inside_a_fence_becomes_its_lines() -> None:
    source = '```python\n--8<-- "docs_src/app.py:6:8"\n```\n'

    assert blocks(source) == [("```python\n@app.get('/')\ndef root():\n    return {}\n```", True)]


def test_a_snippet_block_includes_each_listed_file() -> None:
    source = "--8<--\nsnippets/install.md\ndocs_src/app.py:3:3\n--8<--\n"

    assert blocks(source) == [
        ("Run `pip install ragd` first.", False),
        ("```py\napp = fastapi.FastAPI()\n```", True),
    ]


def test_an_mdx_include_becomes_text_of_the_page() -> None:
    assert blocks("{! snippets/install.md !}\n") == [("Run `pip install ragd` first.", False)]


def test_an_included_files_own_includes_are_dropped() -> None:
    reader = Reader()
    parsed = parse_document(b'--8<-- "snippets/nested.md"\n', "page.md", reader)

    assert [b.text for s in parsed.sections for b in s.blocks] == ["Nested text."]
    assert reader.asked == ["snippets/nested.md"]


def test_a_missing_include_is_dropped() -> None:
    source = 'Text.\n\n--8<-- "gone.md"\n\n{* docs_src/gone.py *}\n\n{! gone.md !}\n'

    assert blocks(source) == [("Text.", False)]


def test_without_a_reader_includes_are_dropped_unread() -> None:
    parsed = parse_document(b"Text.\n\n{* docs_src/app.py *}\n", "page.md")

    assert [b.text for s in parsed.sections for b in s.blocks] == ["Text."]


def test_an_rst_include_is_parsed_as_rst() -> None:
    source = "Guide\n=====\n\n.. include:: shared/section.rst\n\n.. include:: shared/intro.rst\n"
    parsed = parse_document(source.encode(), "guide.rst", Reader())

    assert [(s.heading_path, [b.text for b in s.blocks]) for s in parsed.sections] == [
        (("Guide", "Included section"), ["Under the included heading.", "Shared introduction."])
    ]


def test_an_rst_literalinclude_becomes_code_with_its_lines() -> None:
    source = "Text.\n\n.. literalinclude:: docs_src/app.py\n   :language: python\n   :lines: 6-\n"

    assert blocks(source, "guide.rst") == [
        ("Text.", False),
        ("@app.get('/')\ndef root():\n    return {}", True),
    ]


def test_an_rst_include_shown_in_a_literal_block_is_code() -> None:
    source = "Write::\n\n    .. include:: shared/intro.rst\n"

    assert blocks(source, "guide.rst") == [
        ("Write:", False),
        (".. include:: shared/intro.rst", True),
    ]


def test_a_missing_rst_include_is_dropped() -> None:
    source = "Text.\n\n.. include:: gone.rst\n\n.. literalinclude:: gone.py\n   :lines: 1-2\n"

    assert blocks(source, "guide.rst") == [("Text.", False)]
