"""Plain text parsing: one untitled section of paragraphs, titled by the file stem."""

from __future__ import annotations

from ragd.indexing.parsers import Block, parse_document


def test_paragraphs_split_on_blank_lines() -> None:
    doc = parse_document(b"First line\nsame paragraph.\n\n  \t\nSecond.\n\n\n\nThird.  \n", "a.txt")
    assert [b.text for b in doc.sections[0].blocks] == [
        "First line\nsame paragraph.",
        "Second.",
        "Third.",
    ]


def test_text_is_one_section_without_headings() -> None:
    doc = parse_document(b"# not a heading\n\nbody\n", "notes.txt")
    assert [s.heading_path for s in doc.sections] == [()]
    assert doc.sections[0].blocks[0] == Block("# not a heading")


def test_title_is_the_file_stem() -> None:
    assert parse_document(b"text", "dir/release.notes.text").title == "release.notes"


def test_underlined_lines_in_plain_text_are_paragraphs() -> None:
    doc = parse_document(b"Title\n=====\n\nBody text.\n", "index.txt")
    assert [b.text for b in doc.sections[0].blocks] == ["Title\n=====", "Body text."]
