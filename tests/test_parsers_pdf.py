"""PDF parsing on real PDFs (tests/fixtures/pdf/README.md): pages, outline headings, failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.config.sources import DEFAULT_INCLUDE
from ragd.indexing.parsers import (
    SUPPORTED_SUFFIXES,
    ParsedDocument,
    UnsupportedDocument,
    parse_document,
    pdf,
)
from tests.pdfs import flate_bomb_pdf, text_pdf

FIXTURES = Path(__file__).parent / "fixtures" / "pdf"
AENUM_TITLE = "aenum --- support for advanced enumerations, namedtuples, and constants"


def parse(name: str) -> ParsedDocument:
    return parse_document((FIXTURES / name).read_bytes(), name)


def reason(data: bytes) -> str:
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(data, "manual.pdf")
    return caught.value.reason


def first_page(doc: ParsedDocument, path: tuple[str, ...]) -> int | None:
    return next(s.page for s in doc.sections if s.heading_path == path)


def section_text(doc: ParsedDocument, path: tuple[str, ...], page: int) -> str:
    (section,) = [s for s in doc.sections if s.heading_path == path and s.page == page]
    return "\n\n".join(b.text for b in section.blocks)


def test_outline_entries_head_sections_from_the_page_they_point_at() -> None:
    doc = parse("aenum.pdf")
    # The outline's destinations, as the PDF gives them (0-based index + 1).
    assert first_page(doc, (AENUM_TITLE, "Module Contents")) == 1
    assert first_page(doc, (AENUM_TITLE, "Creating an Enum")) == 3
    assert first_page(doc, (AENUM_TITLE, "Pickling")) == 9
    assert first_page(doc, (AENUM_TITLE, "Derived Enumerations", "IntFlag")) == 11
    assert first_page(doc, (AENUM_TITLE, "Creating NamedConstants")) == 27


def test_a_section_holds_the_text_under_its_heading_on_its_page() -> None:
    doc = parse("aenum.pdf")
    pickling = section_text(doc, (AENUM_TITLE, "Pickling"), 9)
    assert pickling.startswith("Enumerations can be pickled and unpickled:")
    assert "A new Enum class must have one base Enum class" in section_text(
        doc, (AENUM_TITLE, "Restricted Enum subclassing"), 9
    )


def test_a_heading_spanning_pages_gives_one_section_per_page() -> None:
    doc = parse("aenum.pdf")
    path = (AENUM_TITLE, "Creating an Enum")
    assert [s.page for s in doc.sections if s.heading_path == path] == [3, 4, 5]


def test_sections_follow_the_pages_in_order_numbered_from_one() -> None:
    pages = [s.page or 0 for s in parse("aenum.pdf").sections]
    assert pages == sorted(pages)
    assert set(pages) == set(range(1, 29))


def test_a_word_inside_another_is_not_taken_for_a_heading() -> None:
    doc = parse("aenum.pdf")
    # The outline's "enum" follows a line starting "aenum supports ...".
    goodies = section_text(doc, (AENUM_TITLE, "Extra Goodies"), 15)
    assert goodies.startswith("aenum supports a few extra techniques")


def test_two_outline_entries_on_one_page_cut_it_at_their_titles() -> None:
    data = text_pdf(
        [["Install", "Run the installer.", "Configure", "Edit the file."]],
        outline=[("Install", 0), ("Configure", 0)],
    )
    doc = parse_document(data, "guide.pdf")
    assert [(s.heading_path, s.blocks[0].text, s.page) for s in doc.sections] == [
        (("guide", "Install"), "Run the installer.", 1),
        (("guide", "Configure"), "Edit the file.", 1),
    ]


def test_an_outline_title_missing_from_its_page_heads_the_page_from_its_top() -> None:
    data = text_pdf([["Before."], ["Body of the chapter."]], outline=[("Chapter Two", 1)])
    doc = parse_document(data, "book.pdf")
    assert [(s.heading_path, s.page) for s in doc.sections] == [
        (("book",), 1),
        (("book", "Chapter Two"), 2),
    ]


def test_without_a_metadata_title_the_title_is_the_stem() -> None:
    doc = parse_document(text_pdf([["Some text."]]), "docs/user-guide.pdf")
    assert doc.title == "user-guide"
    assert [s.heading_path for s in doc.sections] == [("user-guide",)]


def test_editing_one_page_leaves_the_other_pages_sections_unchanged() -> None:
    pages = [["Intro", "First page."], ["Second page, old."], ["Third page."]]
    before = parse_document(text_pdf(pages, outline=[("Intro", 0)]), "a.pdf").sections
    pages[1] = ["Second page, rewritten at length."]
    after = parse_document(text_pdf(pages, outline=[("Intro", 0)]), "a.pdf").sections
    assert [s.page for s in after] == [1, 2, 3]
    assert (after[0], after[2]) == (before[0], before[2])
    assert after[1] != before[1]


def test_the_title_is_the_metadata_title_and_heads_every_path() -> None:
    doc = parse("aenum.pdf")
    assert doc.title == AENUM_TITLE
    assert all(s.heading_path[0] == AENUM_TITLE for s in doc.sections)


def test_without_an_outline_each_page_is_a_section_under_the_title() -> None:
    doc = parse("music21-test-file.pdf")
    assert doc.title == "Test File"
    assert [(s.heading_path, s.page) for s in doc.sections] == [(("Test File",), 1)]
    assert doc.sections[0].blocks[0].text.startswith("Test File Movement title Christopher")


def test_a_sentence_broken_across_lines_reads_on_and_list_items_keep_their_lines() -> None:
    text = section_text(parse("aenum.pdf"), (AENUM_TITLE, "Creating an Enum"), 3)
    assert "An alternative creation method is described in Enum Functional API." in text
    assert "the value of Color.blue is 3" in text
    assert "(or enum)\n• The attributes Color.red" in text
    assert "\n>>> class Color(Enum):\n" in text


def test_a_word_broken_at_its_own_hyphen_is_one_word_and_a_sentence_end_keeps_its_line() -> None:
    assert (
        pdf.reflow("type-\nspecialized trace\ntrees.\nNext")
        == "type-specialized trace trees.\nNext"
    )


def test_text_has_no_nul_form_feed_or_control_characters() -> None:
    # The music21 score's notation glyphs have no Unicode mapping: PDFium gives them as C0.
    for name in ("aenum.pdf", "music21-test-file.pdf"):
        for section in parse(name).sections:
            for block in section.blocks:
                assert not [c for c in block.text if c < " " and c not in "\n\t"], name


def test_a_word_hyphenated_across_lines_is_joined() -> None:
    cleaned = pdf.clean_text("improv\ufffeing the\r\nstate\fof\x00 art")
    assert cleaned == "improving the\nstate\nof art"


def test_an_encrypted_pdf_fails_naming_the_password() -> None:
    data = (FIXTURES / "matplotlib-logo-encrypted.pdf").read_bytes()
    assert reason(data) == "encrypted PDF (a password is needed to read it)"


def test_an_image_only_pdf_fails_as_having_no_text_layer() -> None:
    data = (FIXTURES / "matplotlib-logo.pdf").read_bytes()
    assert reason(data) == "no text layer (image-only PDF)"


def test_a_corrupt_pdf_fails_as_unreadable() -> None:
    assert reason(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage") == (
        "not a readable PDF (corrupt or not a PDF)"
    )


def test_a_truncated_pdf_fails_as_unreadable() -> None:
    data = (FIXTURES / "aenum.pdf").read_bytes()
    assert reason(data[: len(data) // 2]) == "not a readable PDF (corrupt or not a PDF)"


def test_a_pdf_past_the_page_bound_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "MAX_PAGES", 27)
    data = (FIXTURES / "aenum.pdf").read_bytes()
    assert reason(data) == "PDF has 28 pages, more than the 27 read"


def test_a_pdf_whose_streams_inflate_past_the_bound_fails_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pdf, "MAX_INFLATED_BYTES", 4 << 20)
    data = flate_bomb_pdf(8 << 20)
    assert len(data) < 20_000
    assert reason(data) == "PDF streams inflate to more than 4 MB (a decompression bomb)"


def test_streams_within_the_inflation_bound_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "MAX_INFLATED_BYTES", 16 << 20)
    doc = parse_document(flate_bomb_pdf(8 << 20), "zeros.pdf")
    assert [b.text for s in doc.sections for b in s.blocks] == ["Hello"]


def test_an_image_is_not_counted_against_the_inflation_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PDFium does not decode images to read text, so a huge one costs nothing.
    monkeypatch.setattr(pdf, "MAX_INFLATED_BYTES", 4 << 20)
    doc = parse_document(flate_bomb_pdf(8 << 20, as_image=True), "picture.pdf")
    assert [b.text for s in doc.sections for b in s.blocks] == ["Hello"]


def test_page_text_is_cut_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = parse("music21-test-file.pdf").sections[0].blocks[0].text
    monkeypatch.setattr(pdf, "MAX_PAGE_CHARS", 20)
    (block,) = parse("music21-test-file.pdf").sections[0].blocks
    assert len(block.text) <= 20
    assert whole.startswith(block.text)
    assert block.text.startswith("Test File Movement")


def test_a_pdf_with_many_pages_without_text_is_read_with_a_warning_naming_them() -> None:
    pages = [["Install", "Run it."], [], ["Usage"], [], [], ["Index"]]

    doc = parse_document(text_pdf(pages), "scan.pdf")

    assert [s.page for s in doc.sections] == [1, 3, 6]
    assert doc.warnings == (
        "3 of 6 pages have no text layer (scanned?), not indexed: pages 2, 4, 5",
    )


def test_a_blank_page_among_many_is_no_warning() -> None:
    pages = [["Install"], [], ["Usage"], ["More"], ["Index"]]

    assert parse_document(text_pdf(pages), "guide.pdf").warnings == ()


def test_a_page_cut_at_the_bound_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "MAX_PAGE_CHARS", 20)

    assert parse("music21-test-file.pdf").warnings == ("1 page cut at 20 characters: first 1",)


def test_pdf_is_a_supported_suffix_included_by_default() -> None:
    assert ".pdf" in SUPPORTED_SUFFIXES
    assert "**/*.pdf" in DEFAULT_INCLUDE


def test_sections_of_unpaged_formats_have_no_page() -> None:
    doc = parse_document(b"# Guide\n\nBody.\n", "guide.md")
    assert [s.page for s in doc.sections] == [None]
