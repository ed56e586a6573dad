"""Document parsing: bytes plus a file name in, titled sections of blocks out.

Owns the parsed-document types every format produces, the heading stack they share, the
table of supported suffixes and the dispatch from suffix to format. Decoding lives in
`decoding`, one module per format beside it. Parsing never chunks, embeds or stores, and
this package imports nothing from ragd except `ragd.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragd.errors import DocumentError

__all__ = [
    "PARSER_VERSION",
    "SUPPORTED_SUFFIXES",
    "Block",
    "ParsedDocument",
    "ReadInclude",
    "Section",
    "SectionBuilder",
    "UnsupportedDocument",
    "normalize_heading",
    "parse_document",
]

ReadInclude = Callable[[str], bytes | None]
"""An included file's bytes given its path as written; None when it is not to be read."""

# Part of the pipeline fingerprint: bump whenever any parser's output can change.
PARSER_VERSION = "4"  # 3: RST, MDX, notebooks, PDF, generator markup; 4: includes, Sphinx objects

_MARKDOWN = frozenset({".md", ".markdown"})
_MDX = frozenset({".mdx"})
_HTML = frozenset({".html", ".htm"})
_TEXT = frozenset({".txt", ".text"})
_RST = frozenset({".rst", ".rest"})
_NOTEBOOK = frozenset({".ipynb"})
_PDF = frozenset({".pdf"})

SUPPORTED_SUFFIXES: frozenset[str] = _MARKDOWN | _MDX | _HTML | _TEXT | _RST | _NOTEBOOK | _PDF

# A heading longer than this is almost certainly not one (a runaway line); it would
# otherwise be repeated in the prefix of every chunk below it.
MAX_HEADING_CHARS = 256


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph-like unit of a section; code is never cut unless it alone is too long."""

    text: str
    is_code: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    """The blocks under one heading; `heading_path` runs from the title heading down.

    `page` is the 1-based page of a paged document (PDF) the blocks are on, else None.
    """

    heading_path: tuple[str, ...]
    blocks: tuple[Block, ...]
    page: int | None = None


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A document's title and its non-empty sections, in reading order.

    `warnings` say, one line each, where a document was read other than as written (MDX
    read as Markdown, PDF pages with no text): it is indexed, and the status report names
    it with them.
    """

    title: str
    sections: tuple[Section, ...]
    warnings: tuple[str, ...] = ()


class UnsupportedDocument(DocumentError):
    """A document that cannot be parsed; `reason` is one line for the manifest and logs."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def normalize_heading(text: str) -> str:
    """A heading or title on one line, whitespace collapsed, runaway lengths cut short."""
    if len(text) > 4 * MAX_HEADING_CHARS:
        text = text[: 4 * MAX_HEADING_CHARS]  # bound the work on a megabyte "heading"
    text = " ".join(text.split())
    if len(text) > MAX_HEADING_CHARS:
        text = text[: MAX_HEADING_CHARS - 1].rstrip() + "…"
    return text


class SectionBuilder:
    """Collects blocks under a stack of headings, so every format nests sections alike.

    A heading closes the current section and replaces every open heading of the same or a
    deeper level: an h3 right after an h1 gives (h1, h3). A heading with no blocks before
    the next heading yields no section, but still names the path of its subsections.
    """

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self._path: tuple[str, ...] = ()
        self._blocks: list[Block] = []
        self._sections: list[Section] = []

    def heading(self, level: int, text: str) -> str:
        """Start a section under a heading of `level` (1 for h1); return the text used.

        An empty heading is ignored (its blocks stay in the current section) and returns "".
        """
        text = normalize_heading(text)
        if not text:
            return text
        self._close()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))
        self._path = tuple(name for _, name in self._stack)
        return text

    def add(self, block: Block) -> None:
        """Append a block to the current section; whitespace-only blocks are dropped."""
        if block.text.strip():
            self._blocks.append(block)

    def sections(self) -> tuple[Section, ...]:
        """Every section with at least one block, in order."""
        self._close()
        return tuple(self._sections)

    def _close(self) -> None:
        if self._blocks:
            self._sections.append(Section(self._path, tuple(self._blocks)))
            self._blocks = []


def file_suffix(filename: str) -> tuple[str, str]:
    """A path's last component and its lowercased suffix, as PurePosixPath names them.

    String operations: two PurePosixPath per document were a seventh of parsing tldr.
    """
    name = filename.replace("\\", "/").rstrip("/").rpartition("/")[2]
    dot = name.rfind(".")
    return name, name[dot:].lower() if 0 < dot < len(name) - 1 else ""


def parse_document(
    data: bytes, filename: str, read_include: ReadInclude | None = None
) -> ParsedDocument:
    """Decode bytes and parse them by the file's suffix; raise UnsupportedDocument with a reason.

    Markdown and RST includes are read through `read_include` (ragd.indexing.parsers.includes);
    without it they are dropped."""
    # Imported here because the format modules import the types defined above.
    from ragd.indexing.parsers import decoding, html, markdown, mdx, text

    name, suffix = file_suffix(filename)
    if suffix not in SUPPORTED_SUFFIXES:
        if not suffix:
            raise UnsupportedDocument("unsupported file type (no suffix)")
        raise UnsupportedDocument(f"unsupported file type '{suffix}'")
    stem = name[: -len(suffix)] or name
    if suffix in _PDF:  # binary: read from its bytes, never decoded as text
        from ragd.indexing.parsers import pdf

        return pdf.parse_pdf(data, stem)
    source = decoding.decode_document(data)
    if not source.strip():
        return ParsedDocument(title=stem, sections=())
    if suffix in _MARKDOWN:
        return markdown.parse_markdown(source, stem, read_include)
    if suffix in _MDX:
        return mdx.parse_mdx(source, stem, filename)
    if suffix in _HTML:
        return html.parse_html(source, stem)
    if suffix in _RST:
        from ragd.indexing.parsers import rst  # docutils costs 75 ms to import: only when used

        return rst.parse_rst_document(source, stem, read_include)
    if suffix in _NOTEBOOK:
        from ragd.indexing.parsers import notebook  # nbformat's ~0.15 s import: notebooks only

        return notebook.parse_notebook(source, stem)
    return text.parse_text(source, stem)
