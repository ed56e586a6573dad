"""pypdfium2 behind one adapter: a PDF's bytes to its title, outline and text per page.

Owns every call into PDFium (Chrome's PDF engine, through pypdfium2's public helpers):
opening a document from memory, with the empty user password only, reading its metadata
title, its outline (bookmarks) and each page's text. PDFium is native code with no
locking of its own, and the daemon may parse from more than one thread, so every call
holds one lock. What PDFium refuses comes back as PdfUnreadable with a one-line reason;
the bounds (pages, characters per page) are the caller's, checked before a page is read.
This reads in the calling process, with no limit on time or memory: the daemon calls it
only inside the child process `ragd.adapters.pdfium_process` owns, which has both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pypdfium2

# PDFium keeps global state and is not thread-safe.
_LOCK = threading.Lock()

# FPDF_GetLastError codes pypdfium2 names in its message; the reasons a user can act on.
_REASONS = {
    "Incorrect password error": "encrypted PDF (a password is needed to read it)",
    "Data format error": "not a readable PDF (corrupt or not a PDF)",
    "Unsupported security scheme error": "encrypted PDF (unsupported security handler)",
    "File access error": "not a readable PDF (file access error)",
}


class PdfUnreadable(ValueError):
    """A PDF that PDFium cannot open or read, or one past the caller's bounds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """A bookmark: its depth (0 at the top), its title and the 0-based page it points at."""

    level: int
    title: str
    page_index: int | None


@dataclass(frozen=True, slots=True)
class PdfText:
    """What a PDF says: its metadata title ("" if none), outline and text of each page."""

    title: str
    outline: tuple[OutlineEntry, ...]
    pages: tuple[str, ...]


def read_pdf(
    data: bytes,
    *,
    max_pages: int,
    max_page_chars: int,
    max_outline: int,
    counted: Callable[[int], None] | None = None,
) -> PdfText:
    """Open `data` and extract every page's text, each cut at `max_page_chars`.

    The outline keeps its first `max_outline` entries. `counted`, if given, is told the
    number of pages once the document is open, before any page is read.

    Raises PdfUnreadable when the PDF is encrypted with a password, corrupt, or has more
    than `max_pages` pages (checked before any page is read).
    """
    with _LOCK:
        try:
            document = pypdfium2.PdfDocument(data)
        except pypdfium2.PdfiumError as exc:
            raise PdfUnreadable(_reason(exc)) from None
        try:
            count = len(document)
            if count > max_pages:
                raise PdfUnreadable(f"PDF has {count} pages, more than the {max_pages} read")
            if counted is not None:
                counted(count)
            title = document.get_metadata_value("Title")
            outline = _outline(document, count, max_outline)
            pages = tuple(_page_text(document, index, max_page_chars) for index in range(count))
        except pypdfium2.PdfiumError as exc:
            raise PdfUnreadable(_reason(exc)) from None
        finally:
            document.close()
    return PdfText(title=title, outline=outline, pages=pages)


def _outline(
    document: pypdfium2.PdfDocument, count: int, max_entries: int
) -> tuple[OutlineEntry, ...]:
    entries: list[OutlineEntry] = []
    # get_toc bounds the depth and skips cycles (an outline is a linked structure).
    for bookmark in document.get_toc():
        if len(entries) >= max_entries:
            break
        destination = bookmark.get_dest()
        index = destination.get_index() if destination is not None else None
        if index is not None and not 0 <= index < count:
            index = None
        entries.append(OutlineEntry(bookmark.level, bookmark.get_title(), index))
    return tuple(entries)


def _page_text(document: pypdfium2.PdfDocument, index: int, max_chars: int) -> str:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text: str = textpage.get_text_range(count=min(textpage.count_chars(), max_chars))
        finally:
            textpage.close()
    finally:
        page.close()
    return text


def _reason(exc: pypdfium2.PdfiumError) -> str:
    message = str(exc)
    for known, reason in _REASONS.items():
        if known in message:
            return reason
    return f"not a readable PDF ({' '.join(message.split())})"
