"""Prompt-ready context: a query's hits as one block of numbered, cited passages.

Owns what an LLM application pastes into its prompt: each hit's parent section where it
fits the character budget (else its own chunk, joined to its taken neighbours with the
overlap written once), hits inside one passage cited once, a plain note on every stale
passage, and, when ragd abstained, a sentence saying the documents may not answer the
question. The JSON carries the same passages under the same citation numbers. Pure: the
parents come from a caller's function (ragd.search.parents).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ragd.errors import QueryRefused
from ragd.search.parents import Parent
from ragd.search.results import SearchResponse, cited_uri
from ragd.search.sections import joined
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
"""A chunk's section, within a character budget (`ParentReader.around`)."""


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
    uri: str  # with `#page=N` for a passage on a page of a PDF
    first: int  # the chunk ordinals it covers
    last: int
    text: str
    indexed_at: str | None
    stale_reasons: tuple[str, ...]
    chunk_ids: list[str] = field(default_factory=list)
    page: int | None = None

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
            "page": self.page,
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
    together (citations and notes come on top): a hit's whole section when it fits what
    is left, else its own chunk when that fits, else nothing of it. A hit inside a
    passage already taken adds its chunk to that passage's citation; a chunk next to one
    taken from the same section joins it, the overlap the two windows share written once.

    A section that did not fit once fits no later hit either (what is left only
    shrinks), so a passage is a whole section or a run of its chunks, and two never
    overlap."""
    context = Context(response.query, response.abstained, max_chars)
    left = max_chars
    for hit in response.hits:
        chunk, doc = hit.chunk, hit.document
        mine = [p for p in context.passages if p.doc_id == doc.doc_id]
        taken = next((p for p in mine if p.first <= chunk.ordinal <= p.last), None)
        if taken is not None:
            taken.chunk_ids.append(chunk.chunk_id)
            continue
        section = parent_of(chunk, left)
        if not section.truncated:
            first, last, text = section.first, section.last, section.text
        else:
            run = next(
                (
                    p
                    for p in mine
                    if section.first <= p.first <= p.last <= section.last
                    and p.first - 1 <= chunk.ordinal <= p.last + 1
                ),
                None,
            )
            if run is not None:
                left -= _extend(run, chunk, left)
                continue
            if len(chunk.text) > left:
                continue  # a shorter chunk further down may still fit
            first, last, text = chunk.ordinal, chunk.ordinal, chunk.text
        left -= len(text)
        context.passages.append(
            Passage(
                number=len(context.passages) + 1,
                doc_id=doc.doc_id,
                title=doc.title,
                heading_path=chunk.heading_path,
                uri=cited_uri(doc.uri, chunk.page),
                first=first,
                last=last,
                text=text,
                indexed_at=doc.indexed_at,
                stale_reasons=hit.stale_reasons,
                chunk_ids=[chunk.chunk_id],
                page=chunk.page,
            )
        )
    return context


def _extend(run: Passage, chunk: ChunkRecord, left: int) -> int:
    """Join `chunk` to the run of its neighbours `run` if the characters it adds fit in
    `left`; returns how many it added (0 if it did not fit)."""
    after = chunk.ordinal > run.last
    text, _ = joined([run.text, chunk.text] if after else [chunk.text, run.text])
    added = len(text) - len(run.text)
    if added > left:
        return 0
    run.text = text
    run.first, run.last = min(run.first, chunk.ordinal), max(run.last, chunk.ordinal)
    run.chunk_ids.append(chunk.chunk_id)
    return added
