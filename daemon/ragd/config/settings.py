"""config.toml's schema, a frozen dataclass per section: each field is a key, declared once
with its type, bounds (`Meta`), default and converter (`values`). The [[sources]] are
`sources`'."""

from dataclasses import dataclass, field, fields, is_dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final, Literal

from msgspec import Meta

from ragd.config import values as v
from ragd.config.access import AccessConfig
from ragd.config.sources import SourceConfig
from ragd.config.tables import InDir

LogFormat = Literal["auto", "json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]
SearchMode = Literal["hybrid", "bm25", "vector"]
# How hybrid mode fuses its two lists (ragd.search.fusion): scores each divided by the list's best
# and summed with weights, or weighted reciprocal rank fusion.
SearchFusion = Literal["convex", "rrf"]
DEFAULT_MODEL: Final = "minishlab/potion-base-8M"
DEFAULT_RERANK_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DATA_DIR: Final = ".ragd-data"

Duration = Annotated[timedelta, v.duration]
Weight = Annotated[float, Meta(ge=0, le=100)]  # a TOML integer or float
Model = Annotated[str, InDir(v.model)]  # a hub id, or a local directory made absolute
Count = Annotated[int, Meta(ge=1)]


@dataclass(frozen=True, kw_only=True)
class DaemonConfig:
    """[daemon]: where state lives, how ragd logs, and limits on what it reads."""

    data_dir: Annotated[Path, InDir(v.path)]
    log_format: LogFormat = "auto"
    log_level: LogLevel = "info"
    default_max_age: Duration = timedelta(days=7)
    max_file_bytes: Annotated[int, Meta(ge=1024)] = 20_000_000


@dataclass(frozen=True, kw_only=True)
class HttpConfig:
    """[http]: the address `ragd serve` listens on, the body limit, and what a connection
    may hold open: time to send a request's headers, then its body; connections at once."""

    listen: Annotated[str, v.listen] = "127.0.0.1:8750"  # "host:port", IPv6 hosts in brackets
    max_body_bytes: Annotated[int, Meta(ge=1024)] = 1_048_576
    header_timeout: Duration = timedelta(seconds=10)
    body_timeout: Duration = timedelta(seconds=30)
    max_connections: Count = 512

    @property
    def host(self) -> str:
        """The host, without an IPv6 address's brackets."""
        return self.listen.rpartition(":")[0].removeprefix("[").removesuffix("]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])


@dataclass(frozen=True, kw_only=True)
class EmbeddingConfig:
    """[embedding]: the first stage's model2vec model."""

    model: Model = DEFAULT_MODEL
    batch_size: Annotated[int, Meta(ge=1, le=65536)] = 1024

    @property
    def model_is_local(self) -> bool:
        return Path(self.model).is_absolute()  # a hub id never is


@dataclass(frozen=True, kw_only=True)
class RerankConfig:
    """[rerank]: the second stage, a transformer model (its hub repository carries an ONNX
    export) that re-scores the first stage's best `candidates`, its share scaled by `weight`."""

    enabled: bool = True
    model: Model = DEFAULT_RERANK_MODEL
    candidates: Annotated[int, Meta(ge=1, le=1000)] = 30
    weight: Weight = 1.0

    @property
    def model_is_local(self) -> bool:
        return Path(self.model).is_absolute()  # a hub id never is


@dataclass(frozen=True, kw_only=True)
class ChunkingConfig:
    """[chunking]: chunk size and overlap, in characters, and the most chunks one document
    may make (a document over it is recorded failed, not indexed)."""

    max_chars: Annotated[int, Meta(ge=100)] = 900
    overlap: Annotated[int, Meta(ge=0)] = 120
    max_chunks_per_document: Count = 25_000


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    """[search]: query defaults and limits."""

    k: Annotated[int, Meta(ge=1, le=1000)] = 10
    # Not tied to k: a query may ask for more than the default k, so the query layer
    # takes max(k, candidates) anyway.
    candidates: Annotated[int, Meta(ge=1, le=10_000)] = 50
    rrf_k: Count = 60
    max_query_chars: Annotated[int, Meta(ge=1, le=100_000)] = 2000
    mode: SearchMode = "hybrid"
    fusion: SearchFusion = "convex"
    bm25_weight: Weight = 1.0
    vector_weight: Weight = 0.5
    # LanceDB's cache of vector index pages, shared by both stages' tables.
    index_cache_bytes: Annotated[int, Meta(ge=1 << 20)] = 256 << 20


@dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
    """[schedule]: intervals of the daemon's periodic jobs."""

    rescan_interval: Duration = timedelta(hours=1)
    compact_interval: Duration = timedelta(hours=6)
    cleanup_older_than: Duration = timedelta(minutes=10)
    misfire_grace: Duration = timedelta(hours=1)


@dataclass(frozen=True, kw_only=True)
class StorageConfig:
    """[storage]: `uri` None keeps the stores under data_dir; "s3://bucket/prefix" puts the
    LanceDB tables there and publishes generations for readers (`ragd serve --reader`), which
    look for a newer one every `refresh_interval`. Endpoint and credentials come from the
    standard AWS environment variables, never from the config text."""

    uri: Annotated[str | None, v.storage_uri] = None
    refresh_interval: Duration = timedelta(seconds=5)


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    """[cluster]: the Ray cluster `ragd reembed --ray` runs on (None: a local Ray)."""

    ray_address: Annotated[str | None, v.string] = None


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
    access: AccessConfig = field(default_factory=AccessConfig)
    # Names of the RAGD_* variables that overrode the file, for the start-up log.
    env_overrides: tuple[str, ...] = ()

    def source(self, name: str) -> SourceConfig:
        """The source called `name`; KeyError if there is none."""
        for src in self.sources:
            if src.name == name:
                return src
        raise KeyError(name)


# The sections of config.toml read as one table each, in the order they are read; [access]
# and [[sources]] hold arrays of tables and are read by their own modules.
SECTIONS: Final = {
    f.name: f.type
    for f in fields(Config)
    if isinstance(f.type, type) and is_dataclass(f.type) and f.name != "access"
}
