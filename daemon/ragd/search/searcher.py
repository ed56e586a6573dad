"""The read path: hybrid retrieval over the stores, with staleness on every hit.

Owns query validation (length cap, control characters), the retrieval modes (bm25,
vector, hybrid = both fused with RRF), the join of hits with the manifest (only chunks
the manifest lists are served, so orphans and half-written documents never surface)
and the query result contract of DESIGN.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from ragd.embedding import Embedder
from ragd.errors import QueryRefused
from ragd.search.abstention import Evidence, agreement, is_weak
from ragd.search.fusion import Fused, Fusion, convex_fusion, reciprocal_rank_fusion
from ragd.search.sections import section_text
from ragd.search.staleness import SourcePolicy, stale_reasons
from ragd.stores.keywords import IDENTIFIER_WEIGHT, KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import ChunkRecord, DocumentRecord
from ragd.stores.vectors import VectorStore

Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[Mode, ...] = ("hybrid", "bm25", "vector")

# Control characters, and lone surrogates (invalid UTF-8 decoded with surrogateescape, or
# "\ud800" in JSON), which no tokenizer can encode.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class SearchSettings:
    """How wide to retrieve and how much to keep."""

    k: int = 10
    candidates: int = 50
    rrf_k: int = 60
    max_query_chars: int = 2000
    bm25_weight: float = 1.0
    vector_weight: float = 0.5
    fusion: Fusion = "convex"
    identifier_weight: float = IDENTIFIER_WEIGHT
    max_context_chars: int = 4000


@dataclass(frozen=True)
class Hit:
    """One result, shaped as the query contract's result object."""

    rank: int
    chunk: ChunkRecord
    document: DocumentRecord
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    stale_reasons: tuple[str, ...]
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
            "uri": doc.uri,
            "title": doc.title,
            "heading_path": list(self.chunk.heading_path),
            "text": self.chunk.text,
            "score": self.score,
            "bm25_rank": self.bm25_rank,
            "vector_rank": self.vector_rank,
            "indexed_at": doc.indexed_at,
            "stale": bool(self.stale_reasons),
            "stale_reasons": list(self.stale_reasons),
        } | ({} if self.context is None else {"context": self.context})


@dataclass
class SearchResponse:
    """A query's answer."""

    query: str
    mode: Mode
    hits: list[Hit] = field(default_factory=list)
    abstained: bool = False
    excluded_stale: int | None = None

    def to_json(self) -> dict[str, object]:
        """The JSON object of the query contract (CLI --json and HTTP)."""
        body: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "abstained": self.abstained,
            "results": [h.to_json() for h in self.hits],
        }
        if self.excluded_stale is not None:
            body["excluded_stale"] = self.excluded_stale
        return body


def clean_query(text: str, max_chars: int) -> str:
    """Refuse over-long or empty queries; drop control characters; collapse whitespace."""
    if len(text) > max_chars:
        raise QueryRefused(
            f"query is {len(text)} characters; the limit is {max_chars}",
            hint="shorten it, or raise search.max_query_chars",
        )
    cleaned = " ".join(_CONTROL.sub(" ", text).split())
    if not cleaned:
        raise QueryRefused("query is empty")
    return cleaned


class Searcher:
    """Answers queries from read-only store handles."""

    def __init__(
        self,
        manifest: ManifestReader,
        vectors: VectorStore,
        keywords: KeywordStore,
        embedder: Embedder,
        *,
        fingerprint: str,
        policies: Mapping[str, SourcePolicy],
        settings: SearchSettings | None = None,
    ) -> None:
        self.manifest = manifest
        self.vectors = vectors
        self.keywords = keywords
        self.embedder = embedder
        self.fingerprint = fingerprint
        self.policies = dict(policies)
        self.settings = settings or SearchSettings()

    def search(
        self,
        text: str,
        *,
        k: int | None = None,
        mode: Mode = "hybrid",
        exclude_stale: bool = False,
        expand: bool = False,
    ) -> SearchResponse:
        """Retrieve `candidates` per retriever, fuse, join with the manifest, flag stale hits.

        With `expand`, every hit also carries its whole section as `context`, at most
        `max_context_chars` and around the hit's own window.
        """
        if mode not in MODES:
            raise QueryRefused(f"unknown mode '{mode}'", hint="use hybrid, bm25 or vector")
        limit = self.settings.k if k is None else k
        if not 1 <= limit <= 1000:
            raise QueryRefused(f"k must be between 1 and 1000, got {limit}")
        query = clean_query(text, self.settings.max_query_chars)
        found = self._retrieve(query, mode)
        fused = self._fuse(found)
        scores = {item: score for ranking in found.values() for item, score in ranking}
        response = SearchResponse(query=query, mode=mode)
        excluded = 0
        now = datetime.now(UTC)
        documents: dict[str, DocumentRecord | None] = {}
        pending = self.manifest.pending_doc_ids()
        sections: set[tuple[str, tuple[str, ...]]] = set()
        for f, chunk in self._committed(fused, page=2 * limit + 10):
            if chunk.doc_id not in documents:
                documents[chunk.doc_id] = self.manifest.document(chunk.doc_id)
            doc = documents[chunk.doc_id]
            if doc is None:
                continue
            section = (chunk.doc_id, chunk.heading_path)
            if section in sections:
                continue  # the best window of a section stands for it; room for others
            sections.add(section)
            reasons = stale_reasons(
                doc,
                policy=self.policies.get(doc.source),
                fingerprint=self.fingerprint,
                now=now,
                pending=doc.doc_id in pending,
            )
            if reasons and exclude_stale:
                excluded += 1
                continue
            score = f.score if mode == "hybrid" else scores[f.item]
            response.hits.append(
                Hit(
                    rank=len(response.hits) + 1,
                    chunk=chunk,
                    document=doc,
                    score=round(score, 6),
                    bm25_rank=f.ranks.get("bm25"),
                    vector_rank=f.ranks.get("vector"),
                    stale_reasons=tuple(reasons),
                )
            )
            if len(response.hits) == limit:
                break
        if exclude_stale:
            response.excluded_stale = excluded
        if expand:
            response.hits = [replace(h, context=self._section(h.chunk)) for h in response.hits]
        response.abstained = not response.hits or (
            mode == "hybrid" and is_weak(self._evidence(query, found))
        )
        return response

    def _section(self, chunk: ChunkRecord) -> str:
        """The hit's section: the run of consecutive chunks around it with its heading path.

        Consecutive, because two sections of one document can share a heading path (two
        "Example" subsections) and must not be merged.
        """
        same = {
            c.ordinal: c.text
            for c in self.manifest.chunks_of(chunk.doc_id)
            if c.heading_path == chunk.heading_path
        }
        same.setdefault(chunk.ordinal, chunk.text)
        first = last = chunk.ordinal
        while first - 1 in same:
            first -= 1
        while last + 1 in same:
            last += 1
        texts = [same[o] for o in range(first, last + 1)]
        return section_text(texts, chunk.ordinal - first, self.settings.max_context_chars)

    def _fuse(self, found: dict[str, list[tuple[str, float]]]) -> list[Fused]:
        weights = {"bm25": self.settings.bm25_weight, "vector": self.settings.vector_weight}
        if self.settings.fusion == "rrf":
            rankings = {name: [item for item, _ in hits] for name, hits in found.items()}
            return reciprocal_rank_fusion(rankings, k=self.settings.rrf_k, weights=weights)
        return convex_fusion(found, weights=weights)

    def _evidence(self, query: str, found: dict[str, list[tuple[str, float]]]) -> Evidence:
        bm25 = found.get("bm25") or []
        terms = len(self.keywords.query_terms(query)) or 1
        return Evidence(
            agreement=agreement(
                [item for item, _ in bm25], [item for item, _ in found.get("vector") or []]
            ),
            bm25_per_term=bm25[0][1] / terms if bm25 else 0.0,
        )

    def _committed(self, fused: list[Fused], page: int) -> Iterator[tuple[Fused, ChunkRecord]]:
        """The fused items the manifest lists, in order, read a page at a time.

        Items not (or no longer) committed in the manifest are never served. Paging keeps
        the common query from loading every candidate's text (~1.5 ms at 100 candidates).
        """
        for start in range(0, len(fused), page):
            part = fused[start : start + page]
            rows = self.manifest.chunks([f.item for f in part])
            for f in part:
                if (chunk := rows.get(f.item)) is not None:
                    yield f, chunk

    def _retrieve(self, query: str, mode: Mode) -> dict[str, list[tuple[str, float]]]:
        """Each retriever's `candidates` best (chunk_id, score), best first."""
        found: dict[str, list[tuple[str, float]]] = {}
        n = self.settings.candidates
        nearest = None
        if mode in ("hybrid", "vector"):
            # The vector search runs on LanceDB's thread while BM25 runs on this one: a
            # hybrid query then takes about the longer of the two, not their sum.
            nearest = self.vectors.start_search(self.embedder.embed([query])[0], n)
        if mode in ("hybrid", "bm25"):
            found["bm25"] = self.keywords.search(
                query, n, identifier_weight=self.settings.identifier_weight
            )
        if nearest is not None:
            found["vector"] = nearest()
        return found
