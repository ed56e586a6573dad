"""Configuration: the schema of config.toml, its defaults, validation and environment overrides.

Owns reading config.toml (or a string of TOML), turning it into frozen, typed dataclasses, and
every message about a bad setting; the [[sources]] tables are `ragd.config_sources`, whose
names this module re-exports. A ConfigError is one line naming the file (or environment
variable), the dotted key (`chunking.max_chars`, `sources[1].name`, `sources.docs.include`),
what is wrong and the offending value.

Does not own: secrets (only where they live is recorded; the webhook module reads them),
whether folder roots exist (reported at scan time), or loading the model. Imports nothing from
ragd except ragd.errors, ragd.durations, ragd.config_values (the value checkers) and
ragd.config_sources; the core never imports this module, shells pass the values it needs.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Final, Literal, cast

from ragd.config_sources import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    FolderSourceConfig,
    SignatureScheme,
    SourceConfig,
    WebhookSourceConfig,
    parse_sources,
)
from ragd.config_values import (  # package-internal helpers
    T,
    _choice,
    _Convert,
    _duration,
    _error,
    _int,
    _Invalid,
    _listen,
    _model,
    _path,
    _section,
    _show,
    _Table,
    _weight,
)
from ragd.durations import DurationError, duration_from, format_duration
from ragd.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DEFAULT_MODEL",
    "ChunkingConfig",
    "Config",
    "DaemonConfig",
    "EmbeddingConfig",
    "FolderSourceConfig",
    "HttpConfig",
    "LogFormat",
    "LogLevel",
    "ScheduleConfig",
    "SearchConfig",
    "SearchFusion",
    "SearchMode",
    "SignatureScheme",
    "SourceConfig",
    "WebhookSourceConfig",
    "format_duration",
    "load_config",
    "parse_config",
    "parse_duration",
    "resolve_config_path",
]

LogFormat = Literal["auto", "json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]
SearchMode = Literal["hybrid", "bm25", "vector"]
# How hybrid mode fuses its two lists (ragd.fusion): scores each divided by the list's best
# and summed with weights, or weighted reciprocal rank fusion.
SearchFusion = Literal["convex", "rrf"]
CONFIG_ENV: Final = "RAGD_CONFIG"
DEFAULT_MODEL: Final = "minishlab/potion-base-8M"
DEFAULT_DATA_DIR: Final = ".ragd-data"
_MISSING_FILE_HINT: Final = "pass --config PATH or set RAGD_CONFIG"


# --- the configuration objects --------------------------------------------------------------
# Defaults live on the dataclasses only; the parser passes just the keys the file sets.


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
    """[http]: the address `ragd serve` listens on (host without IPv6 brackets) and body limit."""

    host: str = "127.0.0.1"
    port: int = 8750
    max_body_bytes: int = 1_048_576

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
class ChunkingConfig:
    """[chunking]: chunk size and overlap, in characters."""

    max_chars: int = 900
    overlap: int = 120


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


@dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
    """[schedule]: intervals of the daemon's periodic jobs."""

    rescan_interval: timedelta = timedelta(hours=1)
    compact_interval: timedelta = timedelta(hours=6)
    cleanup_older_than: timedelta = timedelta(minutes=10)
    misfire_grace: timedelta = timedelta(hours=1)


@dataclass(frozen=True, kw_only=True)
class Config:
    """The whole validated configuration. `path` is None when parsed from a string."""

    path: Path | None
    daemon: DaemonConfig
    http: HttpConfig = field(default_factory=HttpConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    sources: tuple[SourceConfig, ...] = ()
    # Names of the RAGD_* variables that overrode the file, for the start-up log.
    env_overrides: tuple[str, ...] = ()

    def source(self, name: str) -> SourceConfig:
        """The source called `name`; KeyError if there is none."""
        for src in self.sources:
            if src.name == name:
                return src
        raise KeyError(name)


# --- public entry points --------------------------------------------------------------------


def resolve_config_path(cli_value: str | None, environ: Mapping[str, str]) -> Path:
    """The config file to use: --config, else $RAGD_CONFIG, else ./config.toml (absolute)."""
    # An empty value (RAGD_CONFIG= in a unit file) means "not set", as in most shells' habits.
    raw = cli_value or environ.get(CONFIG_ENV) or "config.toml"
    path = Path(raw)
    with contextlib.suppress(RuntimeError):  # no home to expand "~" against: keep it as given
        path = path.expanduser()
    return path.absolute()


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate a config file; relative paths in it resolve against its directory."""
    path = Path(path).absolute()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}", hint=_MISSING_FILE_HINT) from None
    except IsADirectoryError:
        raise ConfigError(f"config path is a directory: {path}", hint=_MISSING_FILE_HINT) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # tolerate a BOM from Windows editors
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte offset {exc.start})") from None
    return _parse(text, base_dir=path.parent, origin=str(path), environ=environ, path=path)


def parse_config(
    text: str,
    *,
    base_dir: Path,
    origin: str = "config.toml",
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Validate TOML text; relative paths resolve against base_dir, errors name `origin`."""
    return _parse(text, base_dir=base_dir, origin=origin, environ=environ, path=None)


def parse_duration(value: object, *, key: str) -> timedelta:
    """A positive duration from "90m", "1h30m", "7d" or a number of seconds; errors name key."""
    try:
        return duration_from(value)
    except DurationError as exc:
        raise ConfigError(f"{key}: {exc.problem}, got {_show(value)}", hint=exc.hint) from None


# --- the schema -----------------------------------------------------------------------------


def _schema(base_dir: Path) -> dict[str, dict[str, _Convert]]:
    """The keys of every plain section and how each value is checked."""
    return {
        "daemon": {
            "data_dir": _path(base_dir),
            "log_format": _choice(LogFormat),
            "log_level": _choice(LogLevel),
            "default_max_age": _duration,
            "max_file_bytes": _int(1024),
        },
        "http": {"listen": _listen, "max_body_bytes": _int(1024)},
        "embedding": {"model": _model(base_dir), "batch_size": _int(1, 65536)},
        "chunking": {"max_chars": _int(100), "overlap": _int(0)},
        "search": {
            "k": _int(1, 1000),
            # Not tied to k: a query may ask for more than the default k, so the query layer
            # takes max(k, candidates) anyway.
            "candidates": _int(1, 10_000),
            "rrf_k": _int(1),
            "max_query_chars": _int(1, 100_000),
            "mode": _choice(SearchMode),
            "fusion": _choice(SearchFusion),
            "bm25_weight": _weight,
            "vector_weight": _weight,
        },
        "schedule": {f.name: _duration for f in fields(ScheduleConfig)},
    }


def _parse(
    text: str,
    *,
    base_dir: Path,
    origin: str,
    environ: Mapping[str, str] | None,
    path: Path | None,
) -> Config:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # the message ends "(at line N, column M)"
        raise ConfigError(f"{origin}: invalid TOML: {exc}") from None
    base_dir = Path(base_dir).absolute()
    schema = _schema(base_dir)
    # A section key written above the first [section] header lands at the top level.
    misplaced = {k: f"{k!r} belongs in [{name}]" for name, keys in schema.items() for k in keys}
    _Table(origin, "", doc).check_keys((*schema, "sources"), misplaced)
    v = {name: _section(origin, doc, name).collect(keys) for name, keys in schema.items()}

    daemon = DaemonConfig(**{"data_dir": _path(base_dir)(DEFAULT_DATA_DIR)} | v["daemon"])
    if "listen" in v["http"]:
        v["http"]["host"], v["http"]["port"] = v["http"].pop("listen")
    if "model" in v["embedding"]:
        v["embedding"]["model"], v["embedding"]["model_is_local"] = v["embedding"].pop("model")
    chunking = ChunkingConfig(**v["chunking"])
    if chunking.overlap >= chunking.max_chars // 2:
        # A window must advance by more than half its size, or chunks mostly repeat each other.
        problem = f"must be less than half of chunking.max_chars ({chunking.max_chars // 2})"
        raise _error(f"{origin}: chunking.overlap", _Invalid(problem), chunking.overlap)

    config = Config(
        path=path,
        daemon=daemon,
        http=HttpConfig(**v["http"]),
        embedding=EmbeddingConfig(**v["embedding"]),
        chunking=chunking,
        search=SearchConfig(**v["search"]),
        schedule=ScheduleConfig(**v["schedule"]),
        sources=parse_sources(origin, doc.get("sources"), base_dir, daemon.default_max_age),
    )
    return _apply_environment(config, os.environ if environ is None else environ)


# --- environment overrides ------------------------------------------------------------------


def _apply_environment(config: Config, environ: Mapping[str, str]) -> Config:
    """Apply RAGD_* overrides on top of the file; relative values resolve against the cwd."""
    applied: list[str] = []

    def get(var: str, key: str, convert: Callable[[object], T]) -> T | None:
        value = environ.get(var)
        if not value:  # unset or empty (Environment=VAR= in a unit) leaves the file's value
            return None
        applied.append(var)
        try:
            return convert(value)
        except _Invalid as exc:
            raise _error(f"environment variable {var} (overrides {key})", exc, value) from None

    daemon, http, embedding = config.daemon, config.http, config.embedding
    if (data_dir := get("RAGD_DATA_DIR", "daemon.data_dir", _cwd_path)) is not None:
        daemon = replace(daemon, data_dir=data_dir)
    if (log_format := get("RAGD_LOG_FORMAT", "daemon.log_format", _choice(LogFormat))) is not None:
        daemon = replace(daemon, log_format=cast(LogFormat, log_format))
    if (listen := get("RAGD_HTTP_LISTEN", "http.listen", _listen)) is not None:
        http = replace(http, host=listen[0], port=listen[1])
    if (model := get("RAGD_EMBEDDING_MODEL", "embedding.model", _cwd_model)) is not None:
        embedding = replace(embedding, model=model[0], model_is_local=model[1])
    if not applied:
        return config
    return replace(
        config, daemon=daemon, http=http, embedding=embedding, env_overrides=tuple(applied)
    )


# Looked up only when the variable is set: Path.cwd() fails if the cwd was deleted.
def _cwd_path(value: object) -> Path:
    return _path(Path.cwd())(value)


def _cwd_model(value: object) -> tuple[str, bool]:
    return _model(Path.cwd())(value)
