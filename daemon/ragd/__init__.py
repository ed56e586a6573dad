"""ragd keeps a hybrid (BM25 + vector) retrieval index in step with the documents it serves.

The core is usable as a library: build stores, an Indexer and a Searcher from plain
values (see `ragd.app.Runtime` for how the CLI does it from a config file).
"""

from ragd.chunking import Chunk, ChunkSettings
from ragd.embedding import Embedder, Model2VecEmbedder
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
from ragd.folders import FolderSource
from ragd.fusion import reciprocal_rank_fusion
from ragd.index_report import IndexReport
from ragd.indexer import Indexer
from ragd.pipeline import Pipeline
from ragd.search import Searcher, SearchResponse, SearchSettings
from ragd.staleness import SourcePolicy
from ragd.stores import DataDir, WriterLock, WriterStores

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
