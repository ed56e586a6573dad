"""Parent retrieval: the whole section around a chunk, or a whole document, bounded.

Chunks are retrieval-sized; an answer often needs the section or the page a chunk came
from ("embed small, return the parent"). Both are rebuilt from the manifest's chunks, in
order, the overlap windowing repeated dropped (ragd.search.sections), and cut to a
character budget, saying when they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from ragd.search.results import cited_uri
from ragd.search.sections import SEPARATOR, around, joined
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import ChunkRecord, DocumentRecord


@dataclass(frozen=True)
class Parent:
    """A section or a document as text: `first`..`last` are the chunk ordinals it covers,
    `chars` its whole length, `truncated` whether `text` was cut to the budget, `page`
    the page of a paged document a section is on (None for a whole document)."""

    doc_id: str
    heading_path: tuple[str, ...]  # the section's; () for a whole document
    first: int
    last: int
    text: str
    chars: int
    truncated: bool
    page: int | None = None


def section_around(manifest: ManifestReader, chunk: ChunkRecord, max_chars: int) -> Parent:
    """The chunk's section: the run of consecutive chunks with its heading path (two
    sections of one document may share a heading path, "Example" twice, and stay apart)
    and its page (a section of a PDF is cited by the page it is on), at most `max_chars`
    around the chunk's own window."""
    same = {
        c.ordinal: c.text
        for c in manifest.chunks_of(chunk.doc_id)
        if c.heading_path == chunk.heading_path and c.page == chunk.page
    }
    same.setdefault(chunk.ordinal, chunk.text)
    first = last = chunk.ordinal
    while first - 1 in same:
        first -= 1
    while last + 1 in same:
        last += 1
    windows = [same[o] for o in range(first, last + 1)]
    whole, starts = joined(windows)
    start = starts[chunk.ordinal - first]
    text = around(whole, start, start + len(same[chunk.ordinal]), max_chars)
    return Parent(
        chunk.doc_id,
        chunk.heading_path,
        first,
        last,
        text,
        len(whole),
        len(text) < len(whole),
        chunk.page,
    )


def whole_document(manifest: ManifestReader, doc_id: str, max_chars: int) -> Parent | None:
    """The document's sections in order, each under its heading path as a Markdown heading,
    cut to its first `max_chars`; None for a document the manifest does not list or that
    has no chunks."""
    chunks = manifest.chunks_of(doc_id)
    if not chunks:
        return None
    sections = []
    for path, run in groupby(chunks, key=lambda c: c.heading_path):
        body, _ = joined([c.text for c in run])
        heading = f"{'#' * min(len(path), 6)} {' › '.join(path)}{SEPARATOR}" if path else ""
        sections.append(heading + body)
    whole = SEPARATOR.join(sections)
    text = whole[:max_chars]
    return Parent(
        doc_id, (), chunks[0].ordinal, chunks[-1].ordinal, text, len(whole), len(text) < len(whole)
    )


@dataclass(frozen=True)
class ParentHit:
    """A section or document found by id, with what the index knows of its freshness."""

    parent: Parent
    document: DocumentRecord
    chunk_id: str | None  # the chunk a section was asked around
    stale_reasons: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """The object `get_section` / `get_document` answer with."""
        doc, parent = self.document, self.parent
        return {
            "doc_id": doc.doc_id,
            "chunk_id": self.chunk_id,
            "source": doc.source,
            "path": doc.key,
            "uri": cited_uri(doc.uri, parent.page),
            "title": doc.title,
            "heading_path": list(parent.heading_path),
            "page": parent.page,
            "text": parent.text,
            "chars": parent.chars,
            "truncated": parent.truncated,
            "indexed_at": doc.indexed_at,
            "stale": bool(self.stale_reasons),
            "stale_reasons": list(self.stale_reasons),
        }


Flag = Callable[[DocumentRecord], tuple[str, ...]]
"""The stale reasons of a document now (ragd.search.staleness, with its source's policy)."""


class ParentReader:
    """Sections and documents by id, with their freshness, from one manifest."""

    def __init__(self, manifest: ManifestReader, flag: Flag) -> None:
        self.manifest = manifest
        self.flag = flag

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        """The section around a chunk the manifest lists, with its document; None if not."""
        chunk = self.manifest.chunks([chunk_id]).get(chunk_id)
        document = None if chunk is None else self.manifest.document(chunk.doc_id)
        if chunk is None or document is None:
            return None
        parent = section_around(self.manifest, chunk, max_chars)
        return ParentHit(parent, document, chunk_id, self.flag(document))

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        """A whole document the manifest lists, with its record; None if not (or if it
        has no chunks: failed, empty or deleted)."""
        document = self.manifest.document(doc_id)
        parent = None if document is None else whole_document(self.manifest, doc_id, max_chars)
        if document is None or parent is None:
            return None
        return ParentHit(parent, document, None, self.flag(document))

    def around(self, chunk: ChunkRecord, max_chars: int) -> Parent:
        """A chunk's section, at most `max_chars` around it (`ragd.search.context`)."""
        return section_around(self.manifest, chunk, max_chars)
