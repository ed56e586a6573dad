"""PDF to sections that never span a page, headed by the PDF's outline where it has one.

A PDF is read from its bytes, not decoded as text (`parse_document` sends it here before
decoding). Each page's text becomes paragraphs; every section carries its 1-based `page`.
The outline (bookmarks) gives the heading path: an entry opens a section on the page it
points at, cut where its title appears in that page's text (or at the top of the page's
remaining text when it does not appear), and its path carries on over the following pages
until the next entry. Without an outline each page is a section under the title. The
title is the metadata Title, else the file's stem; every heading path starts with it.

PDFium's text is cleaned: its mark for a word hyphenated across lines (U+FFFE) is
removed, joining the word, a line broken inside a sentence runs on into the next (a
phrase is found whatever the column width), and control characters (NUL, glyphs with
no Unicode mapping) are dropped; a form feed is a line break. Bounds: MAX_INFLATED_BYTES
of inflated streams and MAX_PAGES pages (beyond either, the document fails),
MAX_PAGE_CHARS characters per page (the rest of a page is not read) and MAX_OUTLINE
outline entries (later ones are ignored). PDFium reads in a child process with a memory
limit (1 GiB) and a deadline (30 s + 0.1 s a page); past either, or if PDFium crashes,
the document fails with the reason (`ragd.adapters.pdfium_process`). A PDF with no text
on any page fails: it is scanned images, and ragd does no OCR; one with a quarter or
more of its pages without text, or pages cut at the bound, is indexed with a warning
saying which.
"""

from __future__ import annotations

import dataclasses
import re

from ragd.adapters.pdfium_process import read_pdf_apart
from ragd.adapters.pypdfium2 import OutlineEntry, PdfUnreadable
from ragd.indexing.parsers import (
    Block,
    ParsedDocument,
    Section,
    SectionBuilder,
    UnsupportedDocument,
    normalize_heading,
)
from ragd.indexing.parsers.pdf_streams import inflated_size

MAX_PAGES = 5_000
# A dense page of a manual holds 5-10 thousand characters; far more is not prose.
MAX_PAGE_CHARS = 200_000
MAX_OUTLINE = 20_000
# What a PDF's compressed streams may inflate to, in total (pdf_streams says why).
MAX_INFLATED_BYTES = 256 << 20

IMAGE_ONLY = "no text layer (image-only PDF)"
# Pages without text are warned about once they are this share of a PDF of at least
# MIN_PAGES_WARNED pages: a blank page or a cover is common, a scanned chapter is not.
TEXTLESS_SHARE_WARNED = 0.25
MIN_PAGES_WARNED = 4

# PDFium writes U+FFFE where a word was hyphenated at a line's end; the line is joined.
_SOFT_HYPHEN = re.compile("\ufffe\r?\n?")
# A form feed is a line break; the other controls are glyphs without a Unicode mapping.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_COMPOUND_BREAK = re.compile(r"(?<=[^\W\d_]-)[ \t]*\n[ \t]*(?=[^\W\d_])")
# A list item or an interpreter prompt opens a line of its own.
_RUN_ON = re.compile(r"(?<![.!?:;])[ \t]*\n[ \t]*(?![•◦▪‣*–-][ \t]|>>>|\.\.\.[ \t])")

# The title is the heading at level 1; an outline entry of depth d is at level d + 2.
_TITLE_LEVEL = 1


def parse_pdf(data: bytes, stem: str) -> ParsedDocument:
    """Parse a PDF's bytes into page-bound sections; raise UnsupportedDocument with a reason."""
    if inflated_size(data, MAX_INFLATED_BYTES) > MAX_INFLATED_BYTES:
        raise UnsupportedDocument(
            f"PDF streams inflate to more than {MAX_INFLATED_BYTES >> 20} MB (a decompression bomb)"
        )
    try:
        pdf = read_pdf_apart(
            data, max_pages=MAX_PAGES, max_page_chars=MAX_PAGE_CHARS, max_outline=MAX_OUTLINE
        )
    except PdfUnreadable as exc:
        raise UnsupportedDocument(exc.reason) from None
    pages = [clean_text(text) for text in pdf.pages]
    if not any(text.strip() for text in pages):
        raise UnsupportedDocument(IMAGE_ONLY)
    title = normalize_heading(pdf.title) or normalize_heading(stem)
    starts = _entries_by_page(pdf.outline, title)
    builder = SectionBuilder()
    builder.heading(_TITLE_LEVEL, title)
    sections: list[Section] = []
    for index, text in enumerate(pages):
        cursor = 0
        for entry in starts.get(index, ()):
            name = normalize_heading(entry.title)
            found = _find_heading(name, text, cursor)
            if found is not None:
                _add_paragraphs(builder, text[cursor : found.start()])
                cursor = found.end()
            builder.heading(entry.level + _TITLE_LEVEL + 1, name)
        _add_paragraphs(builder, text[cursor:])
        done = builder.sections()
        sections.extend(dataclasses.replace(s, page=index + 1) for s in done[len(sections) :])
    return ParsedDocument(title=title, sections=tuple(sections), warnings=_warnings(pdf.pages))


def _warnings(pages: tuple[str, ...]) -> tuple[str, ...]:
    """What of a readable PDF was not indexed: scanned pages, pages cut at the bound."""
    warnings = []
    textless = [n for n, text in enumerate(pages, 1) if not text.strip()]
    if len(pages) >= MIN_PAGES_WARNED and len(textless) >= TEXTLESS_SHARE_WARNED * len(pages):
        first = ", ".join(map(str, textless[:5])) + (", …" if len(textless) > 5 else "")
        warnings.append(
            f"{len(textless)} of {len(pages)} pages have no text layer (scanned?), not "
            f"indexed: pages {first}"
        )
    cut = [n for n, text in enumerate(pages, 1) if len(text) >= MAX_PAGE_CHARS]
    if cut:
        pages_cut = f"{len(cut)} page{'' if len(cut) == 1 else 's'}"
        warnings.append(f"{pages_cut} cut at {MAX_PAGE_CHARS:,} characters: first {cut[0]}")
    return tuple(warnings)


def clean_text(text: str) -> str:
    """A page's text as PDFium gives it, with `\\n` newlines, no control characters."""
    text = _SOFT_HYPHEN.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    return _CONTROL.sub("", text)


def _entries_by_page(
    outline: tuple[OutlineEntry, ...], title: str
) -> dict[int, list[OutlineEntry]]:
    """The outline entries that point at a page, by page, in outline order.

    A top-level entry repeating the title is left out: the title already heads every path.
    """
    starts: dict[int, list[OutlineEntry]] = {}
    for entry in outline:
        name = normalize_heading(entry.title)
        if entry.page_index is None or not name or (entry.level == 0 and name == title):
            continue
        starts.setdefault(entry.page_index, []).append(entry)
    return starts


def _find_heading(name: str, text: str, start: int) -> re.Match[str] | None:
    """Where an outline title appears in a page's text at or after `start`, spaced freely.

    As whole words, preferably at the start of a line, where a heading is set: "enum" is
    not found inside "aenum", nor in a sentence above the line that heads its section.
    """
    words = name.rstrip("…").split()
    if not words:
        return None
    title = r"\s+".join(map(re.escape, words))
    for pattern in (rf"(?m)^[ \t]*{title}(?!\w)", rf"(?<!\w){title}(?!\w)"):
        found = re.compile(pattern).search(text, start)
        if found is not None:
            return found
    return None


def _add_paragraphs(builder: SectionBuilder, text: str) -> None:
    for paragraph in _PARAGRAPH_BREAK.split(text):
        builder.add(Block(reflow(paragraph.strip())))


def reflow(paragraph: str) -> str:
    """A paragraph as it reads: where a line was broken inside a sentence the text runs on.

    The page's column width put those breaks there, not the text, and a phrase that spans
    one would not be found. A word broken at its own hyphen is joined as one word
    (`type-`/`specialized`); a line that ends a sentence, and one before a bullet or a
    `>>>` prompt, still ends its line.
    """
    paragraph = _COMPOUND_BREAK.sub("", paragraph)
    return _RUN_ON.sub(" ", "\n".join(line.rstrip() for line in paragraph.split("\n")))
