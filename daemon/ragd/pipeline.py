"""The document pipeline: bytes in, chunks with stable ids out, under one fingerprint.

Owns the pipeline fingerprint (model identity + parser and chunker versions and
settings) and the identities derived from content: content hashes, chunk ids and
embedding keys. A document indexed under another fingerprint is re-processed; a chunk
whose embedding key is already stored is not sent to the model again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property

from ragd.chunking import CHUNKER_VERSION, Chunk, ChunkSettings, chunk_document
from ragd.faults import POISON, armed, fault_point
from ragd.parsers import PARSER_VERSION, UnsupportedDocument, parse_document
from ragd.records import ChunkRecord

# About 20 MB of prose at the default max_chars: more is a generated file, not a document.
MAX_CHUNKS_PER_DOCUMENT = 25_000


def content_hash(data: bytes) -> str:
    """The hash of a document's bytes, as read."""
    return hashlib.sha256(data).hexdigest()


def chunk_id(doc_id: str, ordinal: int, text: str) -> str:
    """A deterministic chunk id, so replaying a write is an idempotent upsert."""
    text_hash = hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256(f"{doc_id}\0{ordinal}\0{text_hash}".encode()).hexdigest()[:32]


def embed_key(model_identity: str, embed_text: str) -> str:
    """The cache key of an embedding: a vector depends only on the model and the text."""
    return hashlib.sha256(f"{model_identity}\0{embed_text}".encode()).hexdigest()[:32]


@dataclass(frozen=True)  # no slots: it crosses from the worker, see Prepared
class ProcessedDocument:
    """A parsed and chunked document, before embedding."""

    title: str
    chunks: tuple[Chunk, ...]


def chunk_records(
    doc_id: str, processed: ProcessedDocument, model_identity: str
) -> tuple[ChunkRecord, ...]:
    """The manifest's records of a processed document's chunks, with their ids and keys."""
    return tuple(
        ChunkRecord(
            chunk_id=chunk_id(doc_id, c.ordinal, c.embed_text),
            doc_id=doc_id,
            ordinal=c.ordinal,
            heading_path=c.heading_path,
            text=c.text,
            embed_key=embed_key(model_identity, c.embed_text),
        )
        for c in processed.chunks
    )


@dataclass(frozen=True)
class Pipeline:
    """Parsing and chunking settings plus the model identity they are paired with."""

    chunking: ChunkSettings
    model_identity: str

    @cached_property  # asked once per document on every pass: 38k JSON dumps cost 0.4 s
    def fingerprint(self) -> str:
        """Changes whenever re-processing could produce different chunks or vectors."""
        recipe = {
            "model": self.model_identity,
            "parser": PARSER_VERSION,
            "chunker": CHUNKER_VERSION,
            "max_chars": self.chunking.max_chars,
            "overlap": self.chunking.overlap,
        }
        return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]

    def process(self, data: bytes, filename: str) -> ProcessedDocument:
        """Parse and chunk; raises parsers.UnsupportedDocument with a reason."""
        if armed("poisoned_parse") and POISON in data:
            fault_point("poisoned_parse")
        parsed = parse_document(data, filename)
        chunks = tuple(chunk_document(parsed, self.chunking))
        if len(chunks) > MAX_CHUNKS_PER_DOCUMENT:
            # One document is embedded and written in one batch; bound what it can cost.
            raise UnsupportedDocument(
                f"document has {len(chunks)} chunks; the limit is {MAX_CHUNKS_PER_DOCUMENT}"
            )
        return ProcessedDocument(parsed.title, chunks)
