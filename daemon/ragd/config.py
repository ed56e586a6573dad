"""Configuration: the schema of config.toml, its defaults, validation and environment overrides.

Owns reading config.toml (or a string of TOML), turning it into frozen, typed dataclasses, and
every message about a bad setting. A ConfigError is one line naming the file (or environment
variable), the dotted key (`chunking.max_chars`, `sources[1].name`, `sources.docs.include`),
what is wrong and the offending value.

Does not own: secrets (only where they live is recorded; the webhook module reads them),
whether folder roots exist (reported at scan time), or loading the model. Imports nothing from
ragd except ragd.errors, ragd.durations and ragd.config_values (the value checkers); the core
never imports this module, shells pass
the values it needs.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, cast

from ragd.config_values import (  # package-internal helpers
    T,
    _bool,
    _choice,
    _Convert,
    _duration,
    _env_name,
    _error,
    _fetch_url,
    _headers_env,
    _int,
    _Invalid,
    _listen,
    _model,
    _path,
    _patterns,
    _section,
    _show,
    _source_name,
    _Table,
    _type_name,
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
SignatureScheme = Literal["standard-webhooks", "github"]
_SourceType = Literal["folder", "webhook"]

CONFIG_ENV: Final = "RAGD_CONFIG"
DEFAULT_MODEL: Final = "minishlab/potion-base-8M"
DEFAULT_DATA_DIR: Final = ".ragd-data"
DEFAULT_INCLUDE: Final = ("**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.txt")
DEFAULT_EXCLUDE: Final = (".git/", "node_modules/", ".*/")
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
class FolderSourceConfig:
    """A [[sources]] table with type = "folder": a directory tree of documents."""

    name: str
    path: Path
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    max_age: timedelta = timedelta(days=7)
    type: Literal["folder"] = "folder"


def _empty_mapping() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class WebhookSourceConfig:
    """A [[sources]] table with type = "webhook": documents pushed by a CMS.

    Secrets are referenced, never stored: `secret_env` / `bearer_token_env` and the values of
    `fetch_headers_env` are environment variable names, `secret_file` is a path. `fetch_url`
    contains "{id}", to be replaced by the (URL-quoted) entry id. When `bearer_token_env` is set
    the webhook endpoint requires that bearer token, with or without a signature.
    """

    name: str
    max_age: timedelta = timedelta(days=7)
    signature: SignatureScheme = "standard-webhooks"
    secret_env: str | None = None
    secret_file: Path | None = None
    insecure_no_signature: bool = False
    bearer_token_env: str | None = None
    fetch_url: str | None = None
    fetch_headers_env: Mapping[str, str] = field(default_factory=_empty_mapping)
    fetch_timeout: timedelta = timedelta(seconds=10)
    fetch_max_bytes: int = 5_000_000
    type: Literal["webhook"] = "webhook"


SourceConfig = FolderSourceConfig | WebhookSourceConfig


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

_SOURCE_COMMON: Final = ("name", "type", "max_age")
_FOLDER_KEYS: Final = ("path", "include", "exclude")
_WEBHOOK_KEYS: Final = (
    "signature",
    "secret_env",
    "secret_file",
    "insecure_no_signature",
    "bearer_token_env",
    "fetch_url",
    "fetch_headers_env",
    "fetch_timeout",
    "fetch_max_bytes",
)
_INLINE_CREDENTIAL_HINT: Final = (
    'never put a secret in the config: set secret_env = "VAR" or secret_file = "path"'
)
_SOURCE_KEY_HINTS: Final = {k: _INLINE_CREDENTIAL_HINT for k in ("secret", "token", "bearer_token")}


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
        sources=_sources(origin, doc.get("sources"), base_dir, daemon.default_max_age),
    )
    return _apply_environment(config, os.environ if environ is None else environ)


def _sources(
    origin: str, raw: object, base_dir: Path, default_max_age: timedelta
) -> tuple[SourceConfig, ...]:
    hint = 'add a [[sources]] table with name, type = "folder" and path'
    if raw is None or raw == []:
        raise ConfigError(
            f"{origin}: sources: at least one [[sources]] table is required", hint=hint
        )
    if not isinstance(raw, list):
        got = f"{_type_name(raw)} {_show(raw)}"
        raise ConfigError(
            f"{origin}: sources: expected an array of tables ([[sources]]), got {got}"
        )
    seen: dict[str, int] = {}
    result: list[SourceConfig] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise _error(f"{origin}: sources[{index}]", _Invalid("expected a table"), item)
        # Typos first, against every source key, so "nmae" gets a suggestion, not "name missing".
        by_index = _Table(origin, f"sources[{index}]", item)
        by_index.check_keys(_SOURCE_COMMON + _FOLDER_KEYS + _WEBHOOK_KEYS, _SOURCE_KEY_HINTS)
        name = by_index.require("name", _source_name, hint='e.g. name = "docs"')
        if name in seen:
            problem = f"duplicate source name (also used by sources[{seen[name]}])"
            raise _error(by_index.where("name"), _Invalid(problem), name)
        seen[name] = index
        # From here on the key names the source, which is what an operator searches the file for.
        table = _Table(origin, f"sources.{name}", item)
        kind = table.require("type", _choice(_SourceType), hint='type = "folder" or "webhook"')
        if kind == "folder":
            result.append(_folder_source(table, name, base_dir, default_max_age))
        else:
            result.append(_webhook_source(table, name, base_dir, default_max_age))
    return tuple(result)


def _reject_other_kind(table: _Table, kind: str, other: str, other_keys: tuple[str, ...]) -> None:
    for key in other_keys:
        if key in table.data:
            problem = (
                f'{key!r} applies to {other} sources only, and this source has type = "{kind}"'
            )
            raise table.fail(key, problem)


def _folder_source(
    table: _Table, name: str, base_dir: Path, default_max_age: timedelta
) -> FolderSourceConfig:
    _reject_other_kind(table, "folder", "webhook", _WEBHOOK_KEYS)
    # The root need not exist yet: a missing root is a scan-time error, not a config error.
    path = table.require("path", _path(base_dir), hint='e.g. path = "docs"')
    values = table.collect(
        {
            "include": _patterns(non_empty=True),
            "exclude": _patterns(non_empty=False),
            "max_age": _duration,
        },
        check=False,
    )
    return FolderSourceConfig(**{"max_age": default_max_age} | values, name=name, path=path)


def _webhook_source(
    table: _Table, name: str, base_dir: Path, default_max_age: timedelta
) -> WebhookSourceConfig:
    _reject_other_kind(table, "webhook", "folder", _FOLDER_KEYS)
    values = table.collect(
        {
            "max_age": _duration,
            "signature": _choice(SignatureScheme),
            "secret_env": _env_name,
            "secret_file": _path(base_dir),
            "insecure_no_signature": _bool,
            "bearer_token_env": _env_name,
            "fetch_url": _fetch_url,
            "fetch_headers_env": _headers_env,
            "fetch_timeout": _duration,
            "fetch_max_bytes": _int(1),
        },
        check=False,
    )
    source = WebhookSourceConfig(**{"max_age": default_max_age} | values, name=name)
    secrets = [k for k in ("secret_env", "secret_file") if k in values]
    if source.insecure_no_signature:
        if secrets:
            # An unchecked secret would suggest deliveries are verified when they are not.
            problem = "has no effect with insecure_no_signature = true"
            raise table.fail(secrets[0], problem, hint="remove one of the two")
        if source.bearer_token_env is None:
            raise table.fail(
                "bearer_token_env",
                "is required when insecure_no_signature = true",
                hint="name the variable holding the token callers send as 'Authorization: Bearer'",
            )
    elif len(secrets) == 2:
        raise table.fail("secret_file", "set secret_env or secret_file, not both")
    elif not secrets:
        raise table.fail(
            "secret_env",
            "a webhook source needs secret_env or secret_file",
            hint="or insecure_no_signature = true with bearer_token_env, behind a trusted proxy",
        )
    return source


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
