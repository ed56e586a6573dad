"""ragd keeps a hybrid (BM25 + vector) retrieval index in step with the documents it serves.

The core is usable as a library: build stores, an Indexer and a Searcher from plain
values (see `ragd.service.runtime.Runtime` for how the CLI does it from a config file).

The names below are imported when first used, so that `ragd status` or a no-op
`ragd index` loads only the modules it runs (PEP 562); `dir(ragd)` lists them all.
"""

import importlib as _importlib
import typing as _typing

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

if _typing.TYPE_CHECKING:
    from ragd.embedding import Embedder
    from ragd.embedding.static import Model2VecEmbedder
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

_LAZY = {
    "Chunk": "ragd.indexing.chunking",
    "ChunkSettings": "ragd.indexing.chunking",
    "DataDir": "ragd.stores.data_dir",
    "Embedder": "ragd.embedding",
    "FolderSource": "ragd.sources.folders",
    "IndexReport": "ragd.indexing.report",
    "Indexer": "ragd.indexing.indexer",
    "Model2VecEmbedder": "ragd.embedding.static",
    "Pipeline": "ragd.indexing.pipeline",
    "SearchResponse": "ragd.search.searcher",
    "SearchSettings": "ragd.search.searcher",
    "Searcher": "ragd.search.searcher",
    "SourcePolicy": "ragd.search.staleness",
    "WriterLock": "ragd.stores.data_dir",
    "WriterStores": "ragd.stores.data_dir",
    "reciprocal_rank_fusion": "ragd.search.fusion",
}


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ragd' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
