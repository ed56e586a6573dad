"""Configuration: config.toml's schema (`settings`, `sources`), how it is read and checked
(`loading`, `bounded_files`, `toml_document`, `values`, `durations`), and environment
overrides. Shells import from here; the core never does."""

from ragd.config.durations import format_duration
from ragd.config.loading import (
    CONFIG_ENV,
    load_config,
    parse_config,
    parse_duration,
    resolve_config_path,
)
from ragd.config.settings import (
    DEFAULT_MODEL,
    DEFAULT_RERANK_MODEL,
    ChunkingConfig,
    ClusterConfig,
    Config,
    DaemonConfig,
    EmbeddingConfig,
    HttpConfig,
    LogFormat,
    LogLevel,
    RerankConfig,
    ScheduleConfig,
    SearchConfig,
    SearchFusion,
    SearchMode,
    StorageConfig,
)
from ragd.config.sources import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    FolderSourceConfig,
    PollSourceConfig,
    SignatureScheme,
    SourceConfig,
    WebhookSourceConfig,
)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DEFAULT_MODEL",
    "DEFAULT_RERANK_MODEL",
    "ChunkingConfig",
    "ClusterConfig",
    "Config",
    "DaemonConfig",
    "EmbeddingConfig",
    "FolderSourceConfig",
    "HttpConfig",
    "LogFormat",
    "LogLevel",
    "PollSourceConfig",
    "RerankConfig",
    "ScheduleConfig",
    "SearchConfig",
    "SearchFusion",
    "SearchMode",
    "SignatureScheme",
    "SourceConfig",
    "StorageConfig",
    "WebhookSourceConfig",
    "format_duration",
    "load_config",
    "parse_config",
    "parse_duration",
    "resolve_config_path",
]
