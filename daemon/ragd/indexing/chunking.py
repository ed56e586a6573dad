"""Sections to retrieval-sized chunks, and the prefix that labels every chunk.

A section that fits in `max_chars` is one chunk. A longer one is windowed on block
boundaries; a window after a prose block starts with up to `overlap` characters from the end
of that block, cut at a sentence or word start. A code block that fits is never cut (it opens
a new window instead); a block that alone exceeds the limit is split: code on line breaks,
prose on paragraph, line, sentence and word boundaries, a giant "word" hard. Chunks depend
only on their own section, so an edit re-embeds that section's chunks and no others.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ragd.indexing.parsers import Block, ParsedDocument

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ChunkSettings",
    "chunk_document",
    "embed_prefix",
    "labelled_text",
]

# Part of the pipeline fingerprint: bump whenever chunk output can change.
CHUNKER_VERSION = "1"

_SEPARATOR = "\n\n"
# Cut points inside an over-long prose block, best first. A cut is only taken if it keeps
# the piece at least half full, so a lone early boundary cannot produce a sliver.
_CUT_PATTERNS = (
    re.compile(r"\n[ \t]*\n"),
    # A line break after a sentence, or before a list item, table row or quote.
    re.compile(r"(?<=[.!?:;])\n|\n(?=[ \t]*(?:[-*+>|]|\d{1,9}[.)])[ \t])"),
    # Whitespace after a sentence end, allowing one closing quote or bracket.
    re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"')\]’”]))\s"),
    re.compile(r"\s"),
)
_NON_SPACE = re.compile(r"\S")
# Where an overlap may start: after a sentence end, or after any whitespace.
_SENTENCE_START = re.compile(r"(?<=[.!?…])[\"')\]’”]*\s+(?=\S)|\n\s*(?=\S)")
_WORD_START = re.compile(r"\s+(?=\S)")


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """Chunk size and overlap, in characters."""

    max_chars: int = 900
    overlap: int = 120

    def __post_init__(self) -> None:
        if self.max_chars < 100:
            raise ValueError(f"max_chars must be at least 100, got {self.max_chars}")
        if not 0 <= self.overlap < self.max_chars // 2:
            raise ValueError(
                f"overlap must be at least 0 and less than max_chars // 2 "
                f"({self.max_chars // 2}), got {self.overlap}"
            )


@dataclass(
    frozen=True
)  # no slots: it crosses from the worker, see ragd.indexing.preparing.Prepared
class Chunk:
    """One unit of retrieval: its body, and the labelled text that is embedded and indexed.

    `page` is the 1-based page of a paged document it is on (a section never spans pages).
    """

    ordinal: int
    heading_path: tuple[str, ...]
    text: str
    embed_text: str
    page: int | None = None


def embed_prefix(title: str, heading_path: tuple[str, ...]) -> str:
    """The label of a chunk: "title — heading / subheading", without repeating the title."""
    path = heading_path[1:] if heading_path[:1] == (title,) else heading_path
    if not path:
        return title
    trail = " / ".join(path)
    return f"{title} — {trail}" if title else trail


def labelled_text(title: str, heading_path: tuple[str, ...], text: str) -> str:
    """A chunk's embedded and BM25-indexed text: its label, a blank line, its body.

    Rebuilding the keyword index from the manifest (title, heading path, body) relies on
    this producing exactly what chunking produced.
    """
    return f"{embed_prefix(title, heading_path)}{_SEPARATOR}{text}"


def chunk_document(doc: ParsedDocument, settings: ChunkSettings) -> list[Chunk]:
    """Chunk every section of a document; ordinals run from 0 across the document."""
    chunks: list[Chunk] = []
    for section in doc.sections:
        for text in _chunk_section(section.blocks, settings):
            chunks.append(
                Chunk(
                    ordinal=len(chunks),
                    heading_path=section.heading_path,
                    text=text,
                    embed_text=labelled_text(doc.title, section.heading_path, text),
                    page=section.page,
                )
            )
    return chunks


def _chunk_section(blocks: tuple[Block, ...], settings: ChunkSettings) -> Iterator[str]:
    pieces = [piece for block in blocks if (piece := _clean(block)).text]
    whole = _SEPARATOR.join(piece.text for piece in pieces)
    if not whole:
        return
    if len(whole) <= settings.max_chars:
        yield whole
        return
    window: list[str] = []
    size = 0
    last: Block | None = None
    for piece in _fitting_pieces(pieces, settings):
        if window and size + len(_SEPARATOR) + len(piece.text) <= settings.max_chars:
            window.append(piece.text)
            size += len(_SEPARATOR) + len(piece.text)
        else:
            if window:
                yield _SEPARATOR.join(window)
            window, size = [piece.text], len(piece.text)
            if last is not None and not last.is_code:
                room = settings.max_chars - len(piece.text) - len(_SEPARATOR)
                lead = _overlap(last.text, min(settings.overlap, room))
                if lead:
                    window.insert(0, lead)
                    size += len(lead) + len(_SEPARATOR)
        last = piece
    yield _SEPARATOR.join(window)


def _clean(block: Block) -> Block:
    # Code keeps its indentation; prose loses surrounding whitespace.
    text = block.text.strip("\n").rstrip() if block.is_code else block.text.strip()
    return Block(text, block.is_code)


def _fitting_pieces(blocks: list[Block], settings: ChunkSettings) -> Iterator[Block]:
    """The blocks, with each one longer than max_chars split into pieces that fit."""
    # Prose pieces leave room for the overlap that will lead the next window.
    prose_limit = settings.max_chars - (
        settings.overlap + len(_SEPARATOR) if settings.overlap else 0
    )
    for block in blocks:
        if len(block.text) <= settings.max_chars:
            yield block
        elif block.is_code:
            yield from (Block(text, True) for text in _split_code(block.text, settings.max_chars))
        else:
            yield from (Block(text) for text in _split_prose(block.text, prose_limit))


def _split_code(code: str, limit: int) -> Iterator[str]:
    """Pack whole lines into pieces of at most `limit`; hard-cut only a line that is longer."""
    lines: list[str] = []
    size = -1
    for line in code.split("\n"):
        if lines and size + 1 + len(line) > limit:
            yield from _nonblank("\n".join(lines))
            lines, size = [], -1
        if len(line) > limit:
            tail = len(line) - (len(line) - 1) % limit - 1  # where the last, partial cut starts
            for cut in range(0, tail, limit):
                yield from _nonblank(line[cut : cut + limit])
            line = line[tail:]
        lines.append(line)
        size += 1 + len(line)
    yield from _nonblank("\n".join(lines))


def _nonblank(code: str) -> Iterator[str]:
    code = code.strip("\n").rstrip()
    if code.strip():
        yield code


def _split_prose(text: str, limit: int) -> Iterator[str]:
    """Cut prose into pieces of at most `limit` at the best boundary in each window."""
    start, end = 0, len(text)
    while end - start > limit:
        cut = _best_cut(text, start, start + limit)
        piece = text[start:cut].strip()
        if piece:
            yield piece
        resume = _NON_SPACE.search(text, cut)
        start = resume.start() if resume else end
    piece = text[start:].strip()
    if piece:
        yield piece


def _best_cut(text: str, start: int, stop: int) -> int:
    # Look one character past the window so a boundary right at its edge still counts.
    window = text[start : stop + 1]
    floor = (stop - start) // 2
    for pattern in _CUT_PATTERNS:
        cut = -1
        for match in pattern.finditer(window, floor):
            if match.start() > stop - start:
                break
            cut = match.start()
        if cut > 0:
            return start + cut
    return stop


def _overlap(text: str, budget: int) -> str:
    """At most `budget` characters from the end of `text`, starting at a sentence or word."""
    if budget <= 0:
        return ""
    if len(text) <= budget:
        return text
    # Searching from one character early accepts an offset that already starts a word.
    offset = len(text) - budget - 1
    sentence = _SENTENCE_START.search(text, offset)
    if sentence and len(text) - sentence.end() >= budget // 2:
        return text[sentence.end() :]
    word = _WORD_START.search(text, offset)
    return text[word.end() :] if word else ""
