"""Assembly: turning a validated Config into core objects.

The one place that knows both the config schema and the core's constructors, so the
core never reads configuration and the shells (CLI, daemon, HTTP) never wire stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ragd.chunking import ChunkSettings
from ragd.config import Config, FolderSourceConfig
from ragd.embedding import Model2VecEmbedder
from ragd.folders import FolderSource
from ragd.indexer import Indexer
from ragd.keywords import KeywordStore
from ragd.manifest_reader import ManifestReader
from ragd.pipeline import Pipeline
from ragd.prefetch import ChildRead
from ragd.search import Searcher, SearchSettings
from ragd.staleness import SourcePolicy
from ragd.status import SourceInfo, StatusReport, build_status
from ragd.stores import DataDir, WriterLock, WriterStores
from ragd.vectors import VectorStore


@dataclass(frozen=True)
class Runtime:
    """The pieces every shell needs, derived once from a Config."""

    config: Config
    data_dir: DataDir
    embedder: Model2VecEmbedder
    pipeline: Pipeline
    folders: tuple[FolderSource, ...]

    @classmethod
    def from_config(cls, config: Config) -> Runtime:
        """Build the runtime; nothing heavy happens until a store or the model is used."""
        embedder = Model2VecEmbedder(
            config.embedding.model,
            is_local=config.embedding.model_is_local,
            batch_size=config.embedding.batch_size,
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
            data_dir=DataDir(config.daemon.data_dir),
            embedder=embedder,
            pipeline=Pipeline(chunking, embedder.identity),
            folders=folders,
        )

    def policies(self) -> dict[str, SourcePolicy]:
        """Staleness policy per configured source."""
        folders = {f.name: f for f in self.folders}
        return {s.name: SourcePolicy(s.max_age, folders.get(s.name)) for s in self.config.sources}

    @contextmanager
    def indexer(self) -> Iterator[Indexer]:
        """The single writer: takes the data_dir lock, opens the stores, closes both."""
        lock = WriterLock(self.data_dir.lock)
        lock.acquire()
        try:
            stores = WriterStores(self.data_dir)
            try:
                yield Indexer(
                    stores,
                    self.folders,
                    self.pipeline,
                    self.embedder,
                    cleanup_older_than=self.config.schedule.cleanup_older_than,
                )
            finally:
                stores.close()
        finally:
            lock.release()

    @contextmanager
    def readers(
        self, *, ids_in_memory: bool = False
    ) -> Iterator[tuple[ManifestReader, VectorStore, KeywordStore]]:
        """Read-only handles on the three stores; they work beside a running writer.

        `ids_in_memory` is for many queries: see `VectorStore.open_readonly`.
        """
        manifest = ManifestReader.open(self.data_dir.manifest)
        try:
            yield (
                manifest,
                VectorStore.open_readonly(self.data_dir.lancedb, ids_in_memory=ids_in_memory),
                KeywordStore.open_readonly(self.data_dir.tantivy),
            )
        finally:
            manifest.close()

    def searcher(
        self, manifest: ManifestReader, vectors: VectorStore, keywords: KeywordStore
    ) -> Searcher:
        """A Searcher over read-only handles."""
        search = self.config.search
        return Searcher(
            manifest,
            vectors,
            keywords,
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
            ),
        )

    def status(self, *, prefetch: bool = False) -> StatusReport:
        """The status report, read-only.

        With `prefetch`, LanceDB's chunk ids are read in a forked child while this process
        reads the manifest and Tantivy; only for single-threaded callers (the CLI).
        """
        policies = self.policies()
        infos = [
            SourceInfo(
                s.name,
                s.type,
                str(s.path) if isinstance(s, FolderSourceConfig) else "webhook",
                policies[s.name],
            )
            for s in self.config.sources
        ]
        lancedb = self.data_dir.lancedb
        child = (
            ChildRead.start(partial(_lancedb_chunk_ids, lancedb), "LanceDB") if prefetch else None
        )
        try:
            manifest = ManifestReader.open(self.data_dir.manifest)
            try:
                return build_status(
                    manifest,
                    child.result if child else VectorStore.open_readonly(lancedb).chunk_ids,
                    KeywordStore.open_readonly(self.data_dir.tantivy),
                    sources=infos,
                    fingerprint=self.pipeline.fingerprint,
                )
            finally:
                manifest.close()
        finally:
            if child is not None:
                child.cancel()  # a no-op once its result was taken


def _lancedb_chunk_ids(directory: Path) -> set[str]:
    """LanceDB's chunk ids, read in a throwaway child process (see Runtime.status)."""
    return VectorStore.open_readonly(directory).chunk_ids()
