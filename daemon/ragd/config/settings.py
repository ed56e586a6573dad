"""The configuration as values: frozen, typed dataclasses for each section of config.toml.

Defaults live here, on the dataclasses only; `ragd.config.loading` reads the file, checks
every value and passes just the keys the file sets. The [[sources]] tables are
`ragd.config.sources`. Imports nothing from ragd outside this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Final, Literal

from ragd.config.sources import SourceConfig

LogFormat = Literal["auto", "json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]
SearchMode = Literal["hybrid", "bm25", "vector"]
# How hybrid mode fuses its two lists (ragd.search.fusion): scores each divided by the list's best
# and summed with weights, or weighted reciprocal rank fusion.
SearchFusion = Literal["convex", "rrf"]
DEFAULT_MODEL: Final = "minishlab/potion-base-8M"
DEFAULT_RERANK_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DATA_DIR: Final = ".ragd-data"


@dataclass(frozen=True, kw_only=True)
class DaemonConfig:
    """[daemon]: where state lives, how ragd logs, and limits on what it reads."""

    data_dir: Path
    log_format: LogFormat = "auto"
    log_level: LogLevel = "info"
    default_max_age: timedelta = timedelta(days=7)
    max_file_bytes: int = 20_000_000


@dataclass(frozen=True, kw_only=True)
class HttpConfig:
    """[http]: the address `ragd serve` listens on (host without IPv6 brackets), the body
    limit, and what a connection may hold open: how long its client may take to send a
    request's headers, and then its body, and how many connections may be open at once."""

    host: str = "127.0.0.1"
    port: int = 8750
    max_body_bytes: int = 1_048_576
    header_timeout: timedelta = timedelta(seconds=10)
    body_timeout: timedelta = timedelta(seconds=30)
    max_connections: int = 512

    @property
    def listen(self) -> str:
        """The address as written in config: "host:port", IPv6 hosts in brackets."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, kw_only=True)
class EmbeddingConfig:
    """[embedding]: a Hugging Face model id (kept verbatim) or an absolute local directory."""

    model: str = DEFAULT_MODEL
    model_is_local: bool = False
    batch_size: int = 1024


@dataclass(frozen=True, kw_only=True)
class RerankConfig:
    """[rerank]: the second stage, a transformer model (a Hugging Face id whose repository
    carries an ONNX export, kept verbatim, or an absolute local directory) that re-scores
    the hybrid first stage's best `candidates`; `weight` scales its share of the score."""

    enabled: bool = True
    model: str = DEFAULT_RERANK_MODEL
    model_is_local: bool = False
    candidates: int = 30
    weight: float = 1.0


@dataclass(frozen=True, kw_only=True)
class ChunkingConfig:
    """[chunking]: chunk size and overlap, in characters, and the most chunks one document
    may make (a document over it is recorded failed, not indexed)."""

    max_chars: int = 900
    overlap: int = 120
    max_chunks_per_document: int = 25_000


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    """[search]: query defaults and limits."""

    k: int = 10
    candidates: int = 50
    rrf_k: int = 60
    max_query_chars: int = 2000
    mode: SearchMode = "hybrid"
    fusion: SearchFusion = "convex"
    bm25_weight: float = 1.0
    vector_weight: float = 0.5
    # LanceDB's cache of vector index pages, shared by both stages' tables.
    index_cache_bytes: int = 256 << 20


@dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
    """[schedule]: intervals of the daemon's periodic jobs."""

    rescan_interval: timedelta = timedelta(hours=1)
    compact_interval: timedelta = timedelta(hours=6)
    cleanup_older_than: timedelta = timedelta(minutes=10)
    misfire_grace: timedelta = timedelta(hours=1)


@dataclass(frozen=True, kw_only=True)
class StorageConfig:
    """[storage]: where the search stores live. `uri` None keeps everything under data_dir;
    "s3://bucket/prefix" puts the LanceDB tables there and publishes generations for
    readers (`ragd serve --reader`), which look for a newer one every `refresh_interval`.
    Endpoint and credentials come from the standard AWS environment variables, never from
    the config text."""

    uri: str | None = None
    refresh_interval: timedelta = timedelta(seconds=5)


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    """[cluster]: the Ray cluster `ragd reembed --ray` runs on (None: a local Ray)."""

    ray_address: str | None = None


@dataclass(frozen=True, kw_only=True)
class Config:
    """The whole validated configuration. `path` is None when parsed from a string."""

    path: Path | None
    daemon: DaemonConfig
    http: HttpConfig = field(default_factory=HttpConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    sources: tuple[SourceConfig, ...] = ()
    # Names of the RAGD_* variables that overrode the file, for the start-up log.
    env_overrides: tuple[str, ...] = ()

    def source(self, name: str) -> SourceConfig:
        """The source called `name`; KeyError if there is none."""
        for src in self.sources:
            if src.name == name:
                return src
        raise KeyError(name)
