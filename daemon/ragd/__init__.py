"""ragd keeps a hybrid (BM25 + vector) retrieval index in step with the documents it serves.

The core is usable as a library: build stores, an Indexer and a Searcher from plain
values (see `ragd.service.runtime.Runtime` for how the CLI does it from a config file).
"""

from ragd.embedding import Embedder
from ragd.embedding.static import Model2VecEmbedder
from ragd.errors import (
    ConfigError,
    DocumentError,
    LockedError,
    ModelLoadError,
    QueryRefused,
    RagdError,
    SourceError,
    StoreError,
    UsageError,
)
from ragd.indexing.chunking import Chunk, ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline
from ragd.indexing.report import IndexReport
from ragd.search.fusion import reciprocal_rank_fusion
from ragd.search.searcher import Searcher, SearchResponse, SearchSettings
from ragd.search.staleness import SourcePolicy
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterLock, WriterStores

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "ChunkSettings",
    "ConfigError",
    "DataDir",
    "DocumentError",
    "Embedder",
    "FolderSource",
    "IndexReport",
    "Indexer",
    "LockedError",
    "Model2VecEmbedder",
    "ModelLoadError",
    "Pipeline",
    "QueryRefused",
    "RagdError",
    "SearchResponse",
    "SearchSettings",
    "Searcher",
    "SourceError",
    "SourcePolicy",
    "StoreError",
    "UsageError",
    "WriterLock",
    "WriterStores",
    "__version__",
    "reciprocal_rank_fusion",
]
