"""Prompt-ready context: a query's hits as one block of numbered, cited passages.

Owns what an LLM application pastes into its prompt: each hit's parent section where it
fits the character budget (else its own chunk), passages of one document whose chunks
overlap merged into one citation, a plain note on every stale passage, and, when ragd
abstained, a sentence saying the documents may not answer the question. The JSON carries
the same passages under the same citation numbers. Pure: the parents come from a caller's
function (ragd.search.parents).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ragd.errors import QueryRefused
from ragd.search.parents import Parent
from ragd.search.results import SearchResponse
from ragd.stores.records import ChunkRecord

# About 2,000 tokens of English: room for several sections in a small model's prompt.
DEFAULT_CONTEXT_CHARS = 8000
MAX_CONTEXT_CHARS = 200_000
ABSTAINED = (
    "The documents may not answer this question: no passage below matched it with "
    "confidence. Say so rather than answer from them."
)
# What each stale reason means to a reader of the prompt.
STALE_NOTES = {
    "source_changed": "its source has changed since it was indexed",
    "source_deleted": "its source has been deleted",
    "pending": "a newer version of it is waiting to be indexed",
    "max_age": "it has not been confirmed current recently",
    "fingerprint": "it was indexed with another model or chunker than the current one",
}

ParentOf = Callable[[ChunkRecord, int], Parent]
"""A chunk's parent section, within a character budget (`Searcher.parent`)."""


def check_budget(max_chars: int) -> int:
    """`max_chars` if it is a budget a context may have; QueryRefused otherwise."""
    if not 1 <= max_chars <= MAX_CONTEXT_CHARS:
        raise QueryRefused(f"max_chars must be between 1 and {MAX_CONTEXT_CHARS}")
    return max_chars


@dataclass
class Passage:
    """One cited passage: a section (or a chunk) of one document, and the hits it holds."""

    number: int
    doc_id: str
    title: str
    heading_path: tuple[str, ...]
    uri: str
    first: int  # the chunk ordinals it covers
    last: int
    text: str
    indexed_at: str | None
    stale_reasons: tuple[str, ...]
    chunk_ids: list[str] = field(default_factory=list)

    @property
    def citation(self) -> str:
        """`[n] title › heading — uri`."""
        where = " › ".join(self.heading_path) or self.title
        return f"[{self.number}] {where} — {self.uri}"

    @property
    def note(self) -> str | None:
        """A plain note when the passage may be out of date."""
        if not self.stale_reasons:
            return None
        reasons = "; ".join(STALE_NOTES.get(r, r) for r in self.stale_reasons)
        return f"(Note: this passage may be out of date: {reasons}.)"

    def to_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "citation": self.citation,
            "doc_id": self.doc_id,
            "chunk_ids": list(self.chunk_ids),
            "title": self.title,
            "heading_path": list(self.heading_path),
            "uri": self.uri,
            "text": self.text,
            "indexed_at": self.indexed_at,
            "stale": bool(self.stale_reasons),
            "stale_reasons": list(self.stale_reasons),
        }


@dataclass
class Context:
    """A query's prompt-ready context."""

    query: str
    abstained: bool
    max_chars: int
    passages: list[Passage] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The block for the prompt: the abstention sentence when ragd abstained, then
        each passage under its citation, with its note."""
        blocks = [ABSTAINED] if self.abstained else []
        for passage in self.passages:
            note = f"\n{passage.note}" if passage.note else ""
            blocks.append(f"{passage.citation}\n{passage.text}{note}")
        if not self.passages:
            blocks.append("No passage of the documents matched this question.")
        return "\n\n".join(blocks)

    def to_json(self) -> dict[str, object]:
        """`POST /v1/context` and `ragd query --context --json`."""
        return {
            "query": self.query,
            "abstained": self.abstained,
            "max_chars": self.max_chars,
            "context": self.text,
            "passages": [p.to_json() for p in self.passages],
        }


def build_context(response: SearchResponse, parent_of: ParentOf, max_chars: int) -> Context:
    """The passages of `response`'s hits in rank order, their texts at most `max_chars`
    together: a hit's whole section when it fits what is left, else its own chunk when
    that fits, else the context ends there. A hit inside a passage already taken (the same
    document, overlapping chunks) adds its chunk to that passage's citation."""
    context = Context(response.query, response.abstained, max_chars)
    left = max_chars
    for hit in response.hits:
        chunk, doc = hit.chunk, hit.document
        taken = next(
            (
                p
                for p in context.passages
                if p.doc_id == doc.doc_id and p.first <= chunk.ordinal <= p.last
            ),
            None,
        )
        if taken is not None:
            taken.chunk_ids.append(chunk.chunk_id)
            continue
        section = parent_of(chunk, left)
        if not section.truncated:
            first, last, text = section.first, section.last, section.text
        elif len(chunk.text) <= left:
            first, last, text = chunk.ordinal, chunk.ordinal, chunk.text
        else:
            break
        merged = next(
            (
                p
                for p in context.passages
                if p.doc_id == doc.doc_id and first <= p.last and p.first <= last
            ),
            None,
        )
        if merged is not None:  # a section around a chunk an earlier passage holds alone
            left += len(merged.text) - len(text)
            merged.first, merged.last, merged.text = first, last, text
            merged.heading_path = chunk.heading_path
            merged.chunk_ids.append(chunk.chunk_id)
            continue
        left -= len(text)
        context.passages.append(
            Passage(
                number=len(context.passages) + 1,
                doc_id=doc.doc_id,
                title=doc.title,
                heading_path=chunk.heading_path,
                uri=doc.uri,
                first=first,
                last=last,
                text=text,
                indexed_at=doc.indexed_at,
                stale_reasons=hit.stale_reasons,
                chunk_ids=[chunk.chunk_id],
            )
        )
    return context
