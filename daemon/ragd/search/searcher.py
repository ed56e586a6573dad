"""The read path: hybrid retrieval over the stores, with staleness on every hit.

Owns query validation (length cap, control characters, filters), the retrieval modes
(bm25, vector, hybrid = both fused), the second stage's place in hybrid mode (its own
nearest chunks fused as a third list, then the best candidates re-scored: its share of
the score depends on how much of the query the keywords cover), the join of hits with the
manifest (only chunks the manifest lists are served, so orphans and half-written documents
never surface), abstention, and the query result contract of DESIGN.md (`results`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ragd.embedding import Embedder
from ragd.errors import QueryRefused
from ragd.search.abstention import coverage, evidence, is_weak, unknown_names
from ragd.search.filters import NO_FILTER, QueryFilter
from ragd.search.fusion import (
    Fused,
    Fusion,
    convex_fusion,
    reciprocal_rank_fusion,
    rescore,
    second_stage_share,
)
from ragd.search.parents import ParentReader, section_around
from ragd.search.rescoring import QueryScorer, Rescorer
from ragd.search.results import MODES, Hit, Mode, SearchResponse
from ragd.search.staleness import SourcePolicy, stale_reasons
from ragd.stores.keywords import IDENTIFIER_WEIGHT, TITLE_WEIGHT, KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import ChunkRecord, DocumentRecord, Vector
from ragd.stores.vectors import VectorStore

__all__ = [
    "MODES",
    "EncodedQuery",
    "Hit",
    "Mode",
    "SearchResponse",
    "SearchSettings",
    "Searcher",
    "clean_query",
]

# Control characters, and lone surrogates (invalid UTF-8 decoded with surrogateescape, or
# "\ud800" in JSON), which no tokenizer can encode.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class SearchSettings:
    """How wide to retrieve, how to fuse, and how much to keep."""

    k: int = 10
    candidates: int = 50
    rrf_k: int = 60
    max_query_chars: int = 2000
    bm25_weight: float = 1.0
    vector_weight: float = 0.5
    fusion: Fusion = "convex"
    identifier_weight: float = IDENTIFIER_WEIGHT
    title_weight: float = TITLE_WEIGHT
    max_context_chars: int = 4000
    rerank_candidates: int = 30  # first-stage candidates the second stage re-scores
    rerank_weight: float = 1.0  # scales the second stage's share of the score


@dataclass(frozen=True)
class EncodedQuery:
    """A query, cleaned, with what the models make of it: computed before a search, as it
    needs no store (the daemon encodes outside its readers' lock, so one query's model time
    overlaps another's search). A vector is None where the search will not use it."""

    text: str
    mode: Mode
    rerank: bool
    first: Vector | None
    second: Vector | None


@dataclass(frozen=True, slots=True)
class _Ranked:
    """A candidate in final order, with where each stage put it."""

    chunk: ChunkRecord
    fused: Fused
    score: float
    first_rank: int
    second_rank: int | None


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
    """Answers queries from read-only store handles.

    `second` is the second stage (None when it is off); `is_word` tells an ordinary word
    from a name for abstention (ragd.search.abstention), from a model's vocabulary.
    """

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
        second: Rescorer | None = None,
        is_word: Callable[[str], bool] | None = None,
    ) -> None:
        self.manifest = manifest
        self.vectors = vectors
        self.keywords = keywords
        self.embedder = embedder
        self.fingerprint = fingerprint
        self.policies = dict(policies)
        self.settings = settings or SearchSettings()
        self.second = second
        self.is_word = is_word
        self.parents = ParentReader(manifest, self.flag)  # sections and documents by id

    def encode(self, text: str, *, mode: Mode = "hybrid", rerank: bool = True) -> EncodedQuery:
        """The query cleaned (QueryRefused if it cannot be) and its vectors for `mode`."""
        if mode not in MODES:
            raise QueryRefused(f"unknown mode '{mode}'", hint="use hybrid, bm25 or vector")
        query = clean_query(text, self.settings.max_query_chars)
        reranking = mode == "hybrid" and rerank and self.second is not None
        return EncodedQuery(
            query,
            mode,
            reranking,
            self.embedder.embed([query])[0] if mode in ("hybrid", "vector") else None,
            self.second.encode(query) if reranking and self.second is not None else None,
        )

    def search(
        self,
        text: str | EncodedQuery,
        *,
        k: int | None = None,
        mode: Mode = "hybrid",
        exclude_stale: bool = False,
        expand: bool = False,
        rerank: bool = True,
        filters: QueryFilter = NO_FILTER,
    ) -> SearchResponse:
        """Retrieve `candidates` per retriever, fuse, re-score with the second stage (hybrid
        mode, when it is on and `rerank`), join with the manifest, flag stale hits.

        `text` may come encoded already (`encode`; its mode and rerank then apply).
        `filters` limits every retriever to some sources and keys before it picks its
        best. With `expand`, every hit also carries its whole section as `context`, at
        most `max_context_chars` and around the hit's own window.
        """
        encoded = (
            text if isinstance(text, EncodedQuery) else self.encode(text, mode=mode, rerank=rerank)
        )
        query, mode = encoded.text, encoded.mode
        limit = self.settings.k if k is None else k
        if not 1 <= limit <= 1000:
            raise QueryRefused(f"k must be between 1 and 1000, got {limit}")
        self._check_sources(filters)
        if filters.matches_nothing:  # every source asked for is outside the token's scope
            return SearchResponse(query=query, mode=mode, abstained=True)
        if filters.scope is not None and filters.scope.issuperset(
            {*self.policies, *self.manifest.sources()}
        ):
            # A scope holding every configured and indexed source filters nothing (a new
            # document's source is one of them): no pattern for the retrievers to match.
            filters = replace(filters, scope=None)
        pattern = filters.doc_pattern()
        scorer = (
            self.second.prepare(query, encoded.second, self.settings.candidates, pattern)
            if encoded.rerank and self.second is not None
            else None
        )
        found = self._retrieve(encoded, pattern, scorer)
        terms = self.keywords.query_terms(query) if mode == "hybrid" else []
        covered = self._coverage(terms, found["bm25"]) if mode == "hybrid" else 0.0
        share = 0.0 if scorer is None else second_stage_share(covered, self.settings.rerank_weight)
        fused = self._fuse(found, share)
        ranked, similarity, reranked = self._rank(fused, found, scorer, share, limit)
        response = SearchResponse(query=query, mode=mode, rerank=reranked)
        # A single retriever reports its own score; hybrid mode the fused one.
        raw = None if mode == "hybrid" else {i: s for hits in found.values() for i, s in hits}
        self._collect(response, ranked, raw, limit, exclude_stale)
        if expand:
            budget = self.settings.max_context_chars
            response.hits = [
                replace(h, context=section_around(self.manifest, h.chunk, budget).text)
                for h in response.hits
            ]
        response.abstained = not response.hits or (
            mode == "hybrid"
            and is_weak(
                evidence(
                    covered,
                    unknown_names(terms, self.keywords.in_corpus, self.is_word)
                    if self.is_word is not None
                    else (),
                    response.hits[0].chunk.chunk_id if response.hits else None,
                    similarity,
                )
            )
        )
        return response

    # -- retrieving and ranking -----------------------------------------------------------

    def _retrieve(
        self, encoded: EncodedQuery, pattern: str | None, scorer: QueryScorer | None
    ) -> dict[str, list[tuple[str, float]]]:
        """Each retriever's `candidates` best (chunk_id, score), best first."""
        found: dict[str, list[tuple[str, float]]] = {}
        n = self.settings.candidates
        nearest = None
        if encoded.first is not None:
            # The vector searches run on LanceDB's thread while BM25 runs on this one: a
            # hybrid query then takes about the longest of them, not their sum.
            nearest = self.vectors.start_search(encoded.first, n, doc_pattern=pattern)
        if encoded.mode in ("hybrid", "bm25"):
            found["bm25"] = self.keywords.search(
                encoded.text,
                n,
                identifier_weight=self.settings.identifier_weight,
                title_weight=self.settings.title_weight,
                doc_pattern=pattern,
            )
        if nearest is not None:
            found["vector"] = nearest()
        if scorer is not None:
            found["second"] = scorer.retrieve()
        return found

    def _fuse(self, found: dict[str, list[tuple[str, float]]], share: float) -> list[Fused]:
        weights = {
            "bm25": self.settings.bm25_weight,
            "vector": self.settings.vector_weight,
            "second": share,
        }
        if self.settings.fusion == "rrf":
            rankings = {name: [item for item, _ in hits] for name, hits in found.items()}
            return reciprocal_rank_fusion(rankings, k=self.settings.rrf_k, weights=weights)
        return convex_fusion(found, weights=weights)

    def _rank(
        self,
        fused: list[Fused],
        found: dict[str, list[tuple[str, float]]],
        scorer: QueryScorer | None,
        share: float,
        limit: int,
    ) -> tuple[Iterator[_Ranked], dict[str, float], bool]:
        """The committed candidates in final order; each scored candidate's semantic
        similarity (the second stage's, else the first stage's cosine), for abstention;
        and whether the second stage re-scored them (it needs a stored vector to score)."""
        committed = self._committed(
            fused, page=max(self.settings.rerank_candidates, 2 * limit + 10)
        )
        head = [next(committed, None) for _ in range(self.settings.rerank_candidates)]
        candidates = [c for c in head if c is not None]
        position = {f.item: rank for rank, f in enumerate(fused, start=1)}
        second = {} if scorer is None else scorer.score([c for _, c in candidates])
        if second:
            rescored = rescore([f for f, _ in candidates], second, share)
            pairs = {f.item: (f, c) for f, c in candidates}
            first = [
                _Ranked(
                    pairs[r.item][1], pairs[r.item][0], r.score, position[r.item], r.second_rank
                )
                for r in rescored
            ]
            # The rest on the same scale, and below the re-scored ones.
            best = max(f.score for f, _ in candidates)
            floor = min(r.score for r in first)

            def score(f: Fused) -> float:
                return min(floor, f.score / best)

            similarity = second
        else:
            first = [_Ranked(c, f, f.score, position[f.item], None) for f, c in candidates]

            def score(f: Fused) -> float:
                return f.score

            cosine = dict(found.get("vector") or [])
            similarity = {f.item: cosine[f.item] for f, _ in candidates if f.item in cosine}

        def ordered() -> Iterator[_Ranked]:
            yield from first
            for f, c in committed:
                yield _Ranked(c, f, score(f), position[f.item], None)

        return ordered(), similarity, bool(second)

    def _collect(
        self,
        response: SearchResponse,
        ranked: Iterator[_Ranked],
        raw: dict[str, float] | None,
        limit: int,
        exclude_stale: bool,
    ) -> None:
        """Fill `response` with the first `limit` hits: one per section, known documents
        only, stale ones flagged (or dropped and counted, with `exclude_stale`)."""
        excluded = 0
        now = datetime.now(UTC)
        documents: dict[str, DocumentRecord | None] = {}
        pending = self.manifest.pending_doc_ids()
        unreachable = self.manifest.unreachable_sources()
        sections: set[tuple[str, tuple[str, ...]]] = set()
        for r in ranked:
            chunk = r.chunk
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
                unreachable=doc.source in unreachable,
            )
            if reasons and exclude_stale:
                excluded += 1
                continue
            response.hits.append(
                Hit(
                    rank=len(response.hits) + 1,
                    chunk=chunk,
                    document=doc,
                    score=round(r.score if raw is None else raw[r.fused.item], 6),
                    bm25_rank=r.fused.ranks.get("bm25"),
                    vector_rank=r.fused.ranks.get("vector"),
                    stale_reasons=tuple(reasons),
                    first_stage_rank=r.first_rank,
                    second_stage_rank=r.second_rank,
                )
            )
            if len(response.hits) == limit:
                break
        if exclude_stale:
            response.excluded_stale = excluded

    def flag(self, document: DocumentRecord) -> tuple[str, ...]:
        """The document's stale reasons now."""
        pending = document.doc_id in self.manifest.pending_doc_ids()
        reasons = stale_reasons(
            document,
            policy=self.policies.get(document.source),
            fingerprint=self.fingerprint,
            now=datetime.now(UTC),
            pending=pending,
            unreachable=document.source in self.manifest.unreachable_sources(),
        )
        return tuple(reasons)

    # -- evidence -------------------------------------------------------------------------

    def _coverage(self, terms: list[str], bm25: list[tuple[str, float]]) -> float:
        """How much of the query the best BM25 hit covers (ragd.search.abstention)."""
        documents, frequencies = self.keywords.document_frequencies(terms)
        return coverage(bm25[0][1] if bm25 else 0.0, documents, frequencies)

    # -- helpers --------------------------------------------------------------------------

    def _check_sources(self, filters: QueryFilter) -> None:
        """Refuse a source no one configured or indexed, naming those there are; within a
        token's scope only (beyond it, a name is neither refused nor listed)."""
        asked = filters.searched if filters.scope is not None else filters.sources
        if not asked:
            return
        known = set(self.policies) | set(self.manifest.sources())
        if filters.scope is not None:
            known &= filters.scope
        unknown = [s for s in asked if s not in known]
        if unknown:
            raise QueryRefused(
                f"unknown source {unknown[0]!r}",
                hint="the sources are " + (", ".join(sorted(known)) or "none yet"),
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
