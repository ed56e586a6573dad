"""The second stage at query time: a slower, better model re-scores the first stage's best.

Owns what a query asks of the second stage: encoding the query (once), retrieving the
chunks whose stored vectors are nearest to it (a third list, fused with BM25 and the first
stage so that re-scoring sees a wider pool), and the similarity of given candidates.
Chunk vectors are never computed here: ragd stores each chunk's second-stage vector at
index time (ragd.indexing.second_stage), so a query costs one encode, one vector search
and dot products. A candidate whose vector is not stored yet has no score; the fusion
(ragd.search.fusion.rescore) ranks it by the first stage.

`Rescorer` is the seam: a cross-encoder, which reads the query and each candidate's text
together and retrieves nothing on its own, fits it as well (`retrieve` returns [] and
`score` reads the texts); ragd ships the bi-encoder, the one it can test here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from ragd.embedding import Embedder
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import ChunkRecord, Vector
from ragd.stores.vectors import VectorStore


class QueryScorer(Protocol):
    """The second stage prepared for one query."""

    def retrieve(self) -> list[tuple[str, float]]:
        """Chunks it finds on its own, (chunk_id, similarity), best first ([] for none)."""
        ...

    def score(self, candidates: Sequence[ChunkRecord]) -> dict[str, float]:
        """Similarity of each candidate it can score (higher is better, 0 unrelated)."""
        ...


class Rescorer(Protocol):
    """A second-stage model, as the searcher uses it."""

    def encode(self, query: str) -> Vector | None:
        """The query's vector, computed ahead of the search (it needs no store); None for a
        model that reads the query with each candidate instead."""
        ...

    def prepare(
        self, query: str, vector: Vector | None, limit: int, doc_pattern: str | None
    ) -> QueryScorer:
        """Start on a query (and its `encode` result): `limit` chunks to retrieve, among
        doc_ids `doc_pattern` matches when given. Returns at once; `retrieve` waits."""
        ...


class StoredVectors:
    """The bi-encoder second stage: the query's vector against stored chunk vectors."""

    def __init__(self, embedder: Embedder, table: VectorStore, manifest: ManifestReader) -> None:
        self.embedder = embedder
        self.table = table
        self.manifest = manifest

    def encode(self, query: str) -> Vector:
        vector: Vector = self.embedder.embed([query])[0]
        return vector

    def prepare(
        self, query: str, vector: Vector | None, limit: int, doc_pattern: str | None
    ) -> QueryScorer:
        if vector is None:
            vector = self.encode(query)
        # A table of another width (written before a model change reached it) is skipped.
        usable = self.table.dim == vector.shape[0]
        nearest = (
            self.table.start_search(vector, limit, doc_pattern=doc_pattern)
            if usable
            else (lambda: [])
        )
        return _StoredScorer(vector, nearest, self.manifest)


class _StoredScorer:
    def __init__(
        self,
        vector: np.ndarray,
        nearest: Callable[[], list[tuple[str, float]]],
        manifest: ManifestReader,
    ) -> None:
        self._vector = vector
        self._nearest = nearest
        self._manifest = manifest

    def retrieve(self) -> list[tuple[str, float]]:
        return self._nearest()

    def score(self, candidates: Sequence[ChunkRecord]) -> dict[str, float]:
        # From the stored vectors, exactly: the search's distances may come from a
        # quantised index.
        ids = [c.chunk_id for c in candidates]
        return {
            chunk_id: float(vector @ self._vector)
            for chunk_id, _, vector in self._manifest.second_stage_vectors(ids)
            if vector.shape == self._vector.shape
        }
