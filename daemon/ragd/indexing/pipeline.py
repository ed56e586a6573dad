"""The document pipeline: bytes in, chunks with stable ids out, under one fingerprint.

Owns the pipeline fingerprint (the identities of both models, the parser and chunker
versions and settings) and the identities derived from content: chunk ids and embedding
keys, one per model. A document indexed under another fingerprint is re-processed; a
chunk whose embedding key is already stored is not sent to that model again, so changing
one model re-embeds with that model only. Each chunk leaves as one
`PreparedChunk`, the record that travels from parsing (here or in a worker) to the stores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

from ragd.errors import one_line
from ragd.indexing.chunking import CHUNKER_VERSION, ChunkSettings, chunk_document, labelled_text
from ragd.indexing.parsers import PARSER_VERSION, ReadInclude, UnsupportedDocument, parse_document
from ragd.stores.keywords import KeywordRow
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import DocumentWrite, Vector

# About 20 MB of prose at the default max_chars: more is a generated file, not a document.
# One document is embedded and written in one batch, so this bounds what one can cost.
MAX_CHUNKS_PER_DOCUMENT = 25_000


def chunk_id(doc_id: str, ordinal: int, text: str) -> str:
    """A deterministic chunk id, so replaying a write is an idempotent upsert."""
    text_hash = hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256(f"{doc_id}\0{ordinal}\0{text_hash}".encode()).hexdigest()[:32]


def embed_key(model_identity: str, embed_text: str) -> str:
    """The cache key of an embedding: a vector depends only on the model and the text."""
    return hashlib.sha256(f"{model_identity}\0{embed_text}".encode()).hexdigest()[:32]


# Named tuples, as the other values a pass makes by the ten thousand (ragd.indexing.preparing):
# cheap to build and to unpickle from a worker, and one object each for the cycle collector.
class PreparedChunk(NamedTuple):
    """A chunk on its way to the stores: its manifest row (a `ChunkRow`), the labelled text
    that is embedded and BM25-indexed, and what a worker already computed for it: its
    vector and its identifier terms (`" ".join(identifier_terms(embed_text))`)."""

    chunk_id: str
    doc_id: str
    ordinal: int
    heading_path: tuple[str, ...]
    text: str
    embed_key: str
    embed_text: str
    vector: Vector | None = None
    identifiers: str | None = None
    second_key: str | None = None  # the second-stage embedding key; None with it off
    page: int | None = None  # the 1-based page of a paged document (PDF)


PreparedWrite = DocumentWrite[PreparedChunk]
"""A document's write as the indexer makes it: its chunks carry what the stores need."""


class ProcessedDocument(NamedTuple):
    """A parsed and chunked document: `warning` says where it was read other than as
    written (the parser's warnings on one line), else None; `includes` the files it
    included (ragd.sources.includes)."""

    title: str
    chunks: tuple[PreparedChunk, ...]
    warning: str | None = None
    includes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Pipeline:
    """Parsing and chunking settings plus the identities of the models they are paired
    with: the first stage's, and the second stage's when it is on.

    `max_chunks` is the most chunks one document may make (config
    chunking.max_chunks_per_document); a document over it fails with that reason. It is
    not part of the recipe either: it decides whether a document is indexed, never what
    its chunks are, so raising it re-processes nothing until the failed files change (or
    `ragd index --full`).
    """

    chunking: ChunkSettings
    model_identity: str
    second_identity: str | None = None
    max_chunks: int = MAX_CHUNKS_PER_DOCUMENT

    @cached_property  # asked once per document on every pass: 38k JSON dumps cost 0.4 s
    def fingerprint(self) -> str:
        """Changes whenever re-processing could produce different chunks or vectors."""
        recipe: dict[str, object] = {"model": self.model_identity, **self._chunking_recipe()}
        # Absent when off, so fingerprints from before the second stage still hold.
        if self.second_identity is not None:
            recipe["second_stage"] = self.second_identity
        return _digest(recipe)

    @cached_property
    def chunk_recipe(self) -> str:
        """Changes whenever re-processing could produce different chunks; the models play
        no part. Two fingerprints with the same chunk recipe cut a document into the same
        chunks, so a model change alone can re-embed them without parsing anything again
        (ragd.indexing.reembed.bulk)."""
        return _digest(self._chunking_recipe())

    def _chunking_recipe(self) -> dict[str, object]:
        return {
            "parser": PARSER_VERSION,
            "chunker": CHUNKER_VERSION,
            "max_chars": self.chunking.max_chars,
            "overlap": self.chunking.overlap,
        }

    def process(
        self,
        data: bytes,
        filename: str,
        doc_id: str,
        *,
        title: str | None = None,
        read_include: ReadInclude | None = None,
    ) -> ProcessedDocument:
        """Parse and chunk the document `doc_id`, labelled with `title` when given (a CMS
        delivery's) instead of the one parsed, its includes read with `read_include` (none
        without); raises parsers.UnsupportedDocument with a reason. The title labels every
        chunk's embedded text, so the manifest's title of the document must be this one
        (the text is rebuilt from it).

        Any other error on the way is this document's too: it becomes the reason the
        document failed, so that it never fails the pass or the batch it is in."""
        try:
            return self._process(data, filename, doc_id, title, read_include)
        except UnsupportedDocument:
            raise
        except Exception as exc:
            raise UnsupportedDocument(f"could not be processed: {one_line(exc)}") from exc

    def _process(
        self,
        data: bytes,
        filename: str,
        doc_id: str,
        title: str | None,
        read_include: ReadInclude | None,
    ) -> ProcessedDocument:
        parsed = parse_document(data, filename, read_include)
        if title:
            parsed = replace(parsed, title=title)
        chunks = chunk_document(parsed, self.chunking)
        if len(chunks) > self.max_chunks:
            raise UnsupportedDocument(
                f"too many chunks: the document makes {len(chunks)}, more than "
                f"chunking.max_chunks_per_document ({self.max_chunks})"
            )
        return ProcessedDocument(
            parsed.title,
            tuple(
                PreparedChunk(
                    chunk_id=chunk_id(doc_id, c.ordinal, c.embed_text),
                    doc_id=doc_id,
                    ordinal=c.ordinal,
                    heading_path=c.heading_path,
                    text=c.text,
                    embed_key=embed_key(self.model_identity, c.embed_text),
                    embed_text=c.embed_text,
                    second_key=None
                    if self.second_identity is None
                    else embed_key(self.second_identity, c.embed_text),
                    page=c.page,
                )
                for c in chunks
            ),
            "; ".join(parsed.warnings) or None,
        )


def _digest(recipe: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def manifest_keyword_rows(manifest: ManifestReader) -> Iterator[KeywordRow]:
    """Every chunk the manifest lists, as the keyword store indexes it (for a rebuild):
    the labelled text is rebuilt exactly as chunking made it."""
    for document in manifest.documents():
        for chunk in manifest.chunks_of(document.doc_id):
            text = labelled_text(document.title, chunk.heading_path, chunk.text)
            yield KeywordRow(chunk.chunk_id, chunk.doc_id, text, title=document.title)
