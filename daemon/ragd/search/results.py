"""What a query asks and returns: the request, its hits and the response, shaped as
DESIGN.md's query contract.

Plain values with their JSON forms (CLI --json and HTTP). Imports nothing from ragd but
the manifest's records and the query filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ragd.search.filters import NO_FILTER, QueryFilter
from ragd.stores.records import ChunkRecord, DocumentRecord

Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[Mode, ...] = ("hybrid", "bm25", "vector")


def cited_uri(uri: str, page: int | None) -> str:
    """Where a chunk is: its document's uri, and `#page=N` for one on a page of a PDF
    (the fragment PDF viewers open at, RFC 8118)."""
    return uri if page is None else f"{uri}#page={page}"


@dataclass(frozen=True)
class QueryRequest:
    """A query as a client asks it (`mode` None: the configured default)."""

    query: str
    k: int | None = None
    mode: Mode | None = None
    exclude_stale: bool = False
    expand: bool = False
    rerank: bool = True
    filters: QueryFilter = NO_FILTER


@dataclass(frozen=True)
class Hit:
    """One result, shaped as the query contract's result object.

    `first_stage_rank` is its rank in the fused candidate list (BM25, the first stage's
    vectors and, with the second stage on, its own nearest chunks), before re-scoring;
    `second_stage_rank` its rank by second-stage similarity among the re-scored
    candidates (None when the second stage did not score it: off, not a candidate, or its
    vector not stored yet).
    """

    rank: int
    chunk: ChunkRecord
    document: DocumentRecord
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    stale_reasons: tuple[str, ...]
    first_stage_rank: int | None = None
    second_stage_rank: int | None = None
    context: str | None = None  # the whole section (bounded), when expansion was asked for

    def to_json(self) -> dict[str, object]:
        """The result object of DESIGN.md's query contract."""
        doc = self.document
        return {
            "rank": self.rank,
            "chunk_id": self.chunk.chunk_id,
            "doc_id": doc.doc_id,
            "source": doc.source,
            "path": doc.key,
            "uri": cited_uri(doc.uri, self.chunk.page),
            "title": doc.title,
            "heading_path": list(self.chunk.heading_path),
            "page": self.chunk.page,
            "text": self.chunk.text,
            "score": self.score,
            "bm25_rank": self.bm25_rank,
            "vector_rank": self.vector_rank,
            "first_stage_rank": self.first_stage_rank,
            "second_stage_rank": self.second_stage_rank,
            "indexed_at": doc.indexed_at,
            "stale": bool(self.stale_reasons),
            "stale_reasons": list(self.stale_reasons),
        } | ({} if self.context is None else {"context": self.context})


@dataclass
class SearchResponse:
    """A query's answer. `rerank` says whether the second stage re-scored it."""

    query: str
    mode: Mode
    hits: list[Hit] = field(default_factory=list)
    abstained: bool = False
    rerank: bool = False
    excluded_stale: int | None = None

    def to_json(self) -> dict[str, object]:
        """The JSON object of the query contract (CLI --json and HTTP)."""
        body: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "rerank": self.rerank,
            "abstained": self.abstained,
            "results": [h.to_json() for h in self.hits],
        }
        if self.excluded_stale is not None:
            body["excluded_stale"] = self.excluded_stale
        return body
