"""The read side of a running ragd: long-lived read-only store handles, kept current.

Owns the handles queries, prompt contexts and section or document lookups go through in
`ragd serve` (its HTTP API and /mcp) and in `ragd mcp`: opened once, refreshed to the
newest committed version before a read that follows a commit (the daemon's writer says
when), or before every read (`ragd mcp`, beside a writer in another process, which says
nothing). A query's models run before the lock; everything that touches the shared SQLite
connection is serialised.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from ragd.search.context import Context, build_context, check_budget
from ragd.search.freshness import SourceFreshness, measure_freshness
from ragd.search.parents import ParentHit
from ragd.search.results import QueryRequest, SearchResponse
from ragd.search.searcher import EncodedQuery, Searcher
from ragd.service.runtime import Runtime
from ragd.stores.manifest_counts import ManifestCounts
from ragd.stores.manifest_reader import ManifestReader


class Readers:
    """Read-only handles on the stores; `every_read` refreshes them before each read."""

    def __init__(self, runtime: Runtime, *, every_read: bool = False) -> None:
        self.config = runtime.config
        self.manifest = ManifestReader.open(runtime.data_dir.manifest)
        self.stores = runtime.open_readers(self.manifest, ids_in_memory=True)
        self.vectors = self.stores.vectors
        self.keywords = self.stores.keywords
        self.searcher: Searcher = runtime.searcher(self.stores)
        self.lock = threading.Lock()
        self._runtime = runtime
        # /metrics counts on a connection of its own, opened on the first scrape: a scrape
        # and a query never wait for each other, and its page cache stays warm.
        self._counts: ManifestCounts | None = None
        self._counts_lock = threading.Lock()
        self._every_read = every_read
        self._seen = self._generation = 0
        self._second_seen = self._second_generation = 0

    def committed(self) -> None:
        """The writer committed: the next read refreshes the handles first."""
        self._generation += 1

    def second_stage_written(self) -> None:
        """Second-stage vectors were written: the next read refreshes that table only."""
        self._second_generation += 1

    def _refresh(self) -> None:
        """Bring the search stores' handles to the newest commit if one may have come
        (under the lock). Seen only once refreshed: a refresh that fails is tried again."""
        generation, second = self._generation, self._second_generation
        if self._every_read or self._seen != generation:
            self.vectors.refresh()
            self.keywords.refresh()
            self._seen, self._second_seen = generation, -1  # it may have written both
        if self.stores.second is not None and (self._every_read or self._second_seen != second):
            self.stores.second.refresh()
            self._second_seen = second

    def _encode(self, request: QueryRequest) -> EncodedQuery:
        mode = request.mode or self.config.search.mode
        return self.searcher.encode(request.query, mode=mode, rerank=request.rerank)

    def search(self, request: QueryRequest) -> SearchResponse:
        """Run one query."""
        encoded = self._encode(request)
        with self.lock:
            self._refresh()
            return self._search(encoded, request)

    def context(self, request: QueryRequest, max_chars: int) -> Context:
        """One query's hits as prompt-ready, cited passages (ragd.search.context)."""
        check_budget(max_chars)
        request = replace(request, expand=False)  # the context builds the sections itself
        encoded = self._encode(request)
        with self.lock:
            self._refresh()
            response = self._search(encoded, request)
            return build_context(response, self.searcher.parents.around, max_chars)

    # Sections and documents come from the manifest alone, whose every read sees the
    # newest commit: nothing to refresh.

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        """The whole section around a chunk, at most `max_chars`; None for an unknown id."""
        with self.lock:
            return self.searcher.parents.section(chunk_id, max_chars)

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        """A whole document, its first `max_chars`; None for an unknown (or empty) one."""
        with self.lock:
            return self.searcher.parents.document(doc_id, max_chars)

    def _search(self, encoded: EncodedQuery, request: QueryRequest) -> SearchResponse:
        return self.searcher.search(
            encoded,
            k=request.k,
            exclude_stale=request.exclude_stale,
            expand=request.expand,
            filters=request.filters,
        )

    def confirmed_ages(self, thresholds: Sequence[str]) -> dict[str, list[int]]:
        """Per source, how many documents were last confirmed at or after each threshold
        (the status page's freshness chart)."""
        with self.lock:
            return self.manifest.confirmed_ages(thresholds)

    def second_stage_coverage(self) -> dict[str, tuple[int, int]]:
        """Per source: (chunks with a second-stage vector, chunks that should have one)."""
        with self.lock:
            return self.manifest.second_stage_coverage()

    def links(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The uri and title of each of these documents the manifest knows."""
        with self.lock:
            found = [self.manifest.document(doc_id) for doc_id in doc_ids]
        return {doc.doc_id: (doc.uri, doc.title) for doc in found if doc is not None}

    def freshness(self, now: datetime) -> dict[str, SourceFreshness]:
        """Per source, the counts behind the staleness gauges (ragd.search.freshness)."""
        with self._counts_lock:
            if self._counts is None:
                self._counts = ManifestCounts.open(self._runtime.data_dir.manifest)
            return measure_freshness(
                self._counts,
                self._runtime.policies(),
                fingerprint=self._runtime.pipeline.fingerprint,
                now=now,
            )

    def chunk_counts(self) -> tuple[int, int, int]:
        """How many chunks the manifest lists and LanceDB and Tantivy hold, each at its
        newest commit: whether the stores agree, cheaply enough for every /metrics scrape
        (`ragd status` compares the chunk ids themselves)."""
        with self.lock:
            # Also after a repair, which changes the search stores without a commit to note.
            self.vectors.refresh()
            self.keywords.refresh()
            return self.manifest.chunk_count(), self.vectors.count(), self.keywords.count()

    def close(self) -> None:
        """Close the manifest connections."""
        self.manifest.close()
        with self._counts_lock:
            if self._counts is not None:
                self._counts.close()
                self._counts = None
