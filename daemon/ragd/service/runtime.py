"""Assembly: turning a validated Config into core objects.

The one place that knows both the config schema and the core's constructors, so the
core never reads configuration and the shells (CLI, daemon, HTTP) never wire stores.
A test's wrapper of the writer's parts (ragd.stores.wrapping) enters here, and only
here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

from ragd.adapters.lancedb import size_index_cache
from ragd.adapters.object_store import object_store, s3_options
from ragd.config import Config, FolderSourceConfig, PollSourceConfig, SourceConfig
from ragd.embedding.static import Model2VecEmbedder
from ragd.embedding.transformer import TransformerEmbedder
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.search.rescoring import StoredVectors
from ragd.search.searcher import Searcher, SearchSettings
from ragd.search.staleness import SourcePolicy
from ragd.search.status import SourceInfo, StatusReport, build_status
from ragd.sources.folders import FolderSource
from ragd.sources.http_client import shown
from ragd.stores.data_dir import DataDir, WriterLock, WriterStores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_report import ManifestReport
from ragd.stores.publishing import Publisher
from ragd.stores.vectors import FIRST_STAGE, VectorStore, second_stage_table
from ragd.stores.wrapping import Wrapper, unwrapped


class ReadStores(NamedTuple):
    """Read-only handles on the stores; `second` is the second stage's table (None off)."""

    manifest: ManifestReader
    vectors: VectorStore
    keywords: KeywordStore
    second: VectorStore | None


@dataclass(frozen=True)
class Runtime:
    """The pieces every shell needs, derived once from a Config."""

    config: Config
    data_dir: DataDir
    embedder: Model2VecEmbedder
    second_stage: TransformerEmbedder | None  # None when [rerank] is off
    pipeline: Pipeline
    folders: tuple[FolderSource, ...]
    # A read replica's: the vector table versions of the generation it serves (readers
    # stay on them); None reads the newest commit.
    pinned: Mapping[str, int] | None = None
    # What the writer's stores, its job queue and the publisher's object store pass
    # through as they open; the pipeline already did. Production's leaves them as they are.
    wrap: Wrapper = field(default=unwrapped, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: Config, *, wrap: Wrapper = unwrapped) -> Runtime:
        """Build the runtime; nothing heavy happens until a store or the model is used.
        `wrap` is a test's (tests/faults.py); production never passes one. With the stores
        on object storage, the AWS variables are checked here (ConfigError), before any work."""
        if config.storage.uri is not None:
            s3_options(os.environ)
        size_index_cache(config.search.index_cache_bytes)
        embedder = Model2VecEmbedder(
            config.embedding.model,
            is_local=config.embedding.model_is_local,
            batch_size=config.embedding.batch_size,
        )
        rerank = config.rerank
        second = (
            TransformerEmbedder(rerank.model, is_local=rerank.model_is_local)
            if rerank.enabled
            else None
        )
        chunking = ChunkSettings(config.chunking.max_chars, config.chunking.overlap)
        folders = tuple(
            FolderSource(
                s.name, s.path, s.include, s.exclude, max_file_bytes=config.daemon.max_file_bytes
            )
            for s in config.sources
            if isinstance(s, FolderSourceConfig)
        )
        return cls(
            config=config,
            data_dir=DataDir(config.daemon.data_dir, config.storage.uri),
            embedder=embedder,
            second_stage=second,
            pipeline=wrap(
                Pipeline(
                    chunking,
                    embedder.identity,
                    second_identity=None if second is None else second.identity,
                    max_chunks=config.chunking.max_chunks_per_document,
                )
            ),
            folders=folders,
            wrap=wrap,
        )

    @property
    def other_sources(self) -> frozenset[str]:
        """Names of the configured sources that are not folders."""
        folders = {f.name for f in self.folders}
        return frozenset(s.name for s in self.config.sources if s.name not in folders)

    def policies(self) -> dict[str, SourcePolicy]:
        """Staleness policy per configured source."""
        folders = {f.name: f for f in self.folders}
        return {s.name: SourcePolicy(s.max_age, folders.get(s.name)) for s in self.config.sources}

    @property
    def second_table(self) -> str | None:
        """The name of the second stage's vector table; None when it is off."""
        second = self.second_stage
        return None if second is None else second_stage_table(second.identity)

    def writer_stores(self) -> WriterStores:
        """The one writer's handles on the stores (the caller holds the writer lock)."""
        return WriterStores(
            self.data_dir,
            keyword_rows=manifest_keyword_rows,
            second_table=self.second_table,
            wrap=self.wrap,
        )

    @contextmanager
    def indexer(self, *, second_threads: int = 1) -> Iterator[Indexer]:
        """The single writer: takes the data_dir lock, opens the stores, closes both.
        `second_threads` is how many threads its second-stage model runs on."""
        lock = WriterLock(self.data_dir.lock)
        lock.acquire()
        try:
            stores = self.writer_stores()
            try:
                yield Indexer(
                    stores,
                    self.folders,
                    self.pipeline,
                    self.embedder,
                    cleanup_older_than=self.config.schedule.cleanup_older_than,
                    second=None
                    if self.second_stage is None
                    else self.second_stage.with_threads(second_threads),
                    other_sources=self.other_sources,
                )
            finally:
                stores.close()
        finally:
            lock.release()

    @contextmanager
    def readers(self, *, ids_in_memory: bool = False) -> Iterator[ReadStores]:
        """Read-only handles on the stores; they work beside a running writer.

        `ids_in_memory` is for many queries: see `VectorStore.open_readonly`.
        """
        manifest = ManifestReader.open(self.data_dir.manifest)
        try:
            yield self.open_readers(manifest, ids_in_memory=ids_in_memory)
        finally:
            manifest.close()

    def open_readers(self, manifest: ManifestReader, *, ids_in_memory: bool) -> ReadStores:
        """Read-only handles on the search stores, beside an open manifest reader."""
        table = self.second_table
        return ReadStores(
            manifest,
            self._vectors(FIRST_STAGE, ids_in_memory=ids_in_memory),
            KeywordStore.open_readonly(self.data_dir.tantivy),
            None if table is None else self._vectors(table, ids_in_memory=ids_in_memory),
        )

    def _vectors(self, table: str, *, ids_in_memory: bool = False) -> VectorStore:
        """A read-only handle on one vector table, at the pinned version if there is one.
        A table the generation does not name did not exist when it was published."""
        version = None if self.pinned is None else self.pinned.get(table)
        if self.pinned is not None and version is None:
            return VectorStore.absent(self.data_dir.lancedb, table)
        return VectorStore.open_readonly(
            self.data_dir.lancedb, name=table, ids_in_memory=ids_in_memory, version=version
        )

    def publisher(self) -> Publisher | None:
        """What publishes generations for replicas; None with the stores on local disk."""
        uri = self.config.storage.uri
        if uri is None:
            return None
        paths = self.data_dir
        return Publisher(self.wrap(object_store(uri)), paths.manifest, paths.tantivy)

    def searcher(self, stores: ReadStores) -> Searcher:
        """A Searcher over read-only handles."""
        search, rerank = self.config.search, self.config.rerank
        second = self.second_stage
        return Searcher(
            stores.manifest,
            stores.vectors,
            stores.keywords,
            self.embedder,
            fingerprint=self.pipeline.fingerprint,
            policies=self.policies(),
            settings=SearchSettings(
                k=search.k,
                candidates=search.candidates,
                rrf_k=search.rrf_k,
                max_query_chars=search.max_query_chars,
                bm25_weight=search.bm25_weight,
                vector_weight=search.vector_weight,
                fusion=search.fusion,
                rerank_candidates=rerank.candidates,
                rerank_weight=rerank.weight,
            ),
            second=None
            if second is None or stores.second is None
            else StoredVectors(second, stores.second, stores.manifest),
            is_word=self.embedder.has_word,
        )

    def status(self, *, watched: bool = False) -> StatusReport:
        """The status report, read-only: it works beside a running writer. `watched`: a
        watcher reports every change to the folders (`build_status`)."""
        policies = self.policies()
        infos = [
            SourceInfo(
                s.name,
                s.type,
                _location(s),
                policies[s.name],
            )
            for s in self.config.sources
        ]
        manifest = ManifestReport.open(self.data_dir.manifest)
        try:
            return build_status(
                manifest,
                self._vectors(FIRST_STAGE),
                KeywordStore.open_readonly(self.data_dir.tantivy),
                sources=infos,
                fingerprint=self.pipeline.fingerprint,
                second_stage_model=self.pipeline.second_identity,
                watched=watched,
            )
        finally:
            manifest.close()


def _location(source: SourceConfig) -> str:
    """Where a source's documents come from, as the status report names it."""
    if isinstance(source, FolderSourceConfig):
        return str(source.path)
    if isinstance(source, PollSourceConfig):
        return shown(source.url)
    return (
        "webhook" if source.api_url is None else f"webhook; reconciled from {shown(source.api_url)}"
    )
