"""Configuration: config.toml's schema (`settings`, `sources`), how it is read and checked
(`loading`, `tables`, `values`, `bounded_files`), and environment overrides. Shells import
from here; the core never does. msgspec, which checks the schema, is used here only."""

from ragd.config.loading import load_config, parse_config, parse_duration, resolve_config_path
from ragd.config.settings import DEFAULT_MODEL, Config, HttpConfig, ScheduleConfig, SearchMode
from ragd.config.sources import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    FolderSourceConfig,
    PollSourceConfig,
    SourceConfig,
    WebhookSourceConfig,
)
from ragd.config.values import format_duration

__all__ = [
    "DEFAULT_EXCLUDE", "DEFAULT_INCLUDE", "DEFAULT_MODEL", "Config", "FolderSourceConfig",
    "HttpConfig", "PollSourceConfig", "ScheduleConfig", "SearchMode", "SourceConfig",
    "WebhookSourceConfig", "format_duration", "load_config", "parse_config", "parse_duration",
    "resolve_config_path",
]  # fmt: skip
