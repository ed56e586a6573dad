"""Reading config.toml: its schema, validation and environment overrides.

Owns reading config.toml (or a string of TOML) into the frozen dataclasses of
`ragd.config.settings`, and every message about a bad setting. A ConfigError is one line
naming the file (or environment variable), the dotted key (`chunking.max_chars`,
`sources[1].name`, `sources.docs.include`), what is wrong and the offending value.

A model given as a path must be a directory that exists (a missing one is a mistake in
the setting, exit 2, not a download to retry); what is in it is checked when the model
loads. Does not own: secrets (only where they live is recorded; the webhook intake reads
them), whether folder roots exist (reported at scan time), or loading the model. The core
never imports this package; shells pass the values it needs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Final, cast

from ragd.config.bounded_files import UnfitFile, read_bounded_file
from ragd.config.durations import DurationError, duration_from
from ragd.config.settings import (
    DEFAULT_DATA_DIR,
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
from ragd.config.sources import parse_sources
from ragd.config.toml_document import read_toml
from ragd.config.values import (  # package-internal helpers
    T,
    _bool,
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
    _storage_uri,
    _string,
    _Table,
    _weight,
)
from ragd.errors import ConfigError

__all__ = ["CONFIG_ENV", "load_config", "parse_config", "parse_duration", "resolve_config_path"]

CONFIG_ENV: Final = "RAGD_CONFIG"
_MISSING_FILE_HINT: Final = "pass --config PATH or set RAGD_CONFIG"
# The commented example is ~10 KiB; a config of a thousand sources stays well under this.
MAX_CONFIG_BYTES: Final = 1024 * 1024


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
        data = read_bounded_file(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}", hint=_MISSING_FILE_HINT) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnfitFile as exc:
        raise ConfigError(f"config file {path} {exc}", hint=_MISSING_FILE_HINT) from None
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
        "http": {
            "listen": _listen,
            "max_body_bytes": _int(1024),
            "header_timeout": _duration,
            "body_timeout": _duration,
            "max_connections": _int(1),
        },
        "embedding": {"model": _model(base_dir), "batch_size": _int(1, 65536)},
        "rerank": {
            "enabled": _bool,
            "model": _model(base_dir),
            "candidates": _int(1, 1000),
            "weight": _weight,
        },
        "chunking": {
            "max_chars": _int(100),
            "overlap": _int(0),
            "max_chunks_per_document": _int(1),
        },
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
            "index_cache_bytes": _int(1 << 20),
        },
        "schedule": {f.name: _duration for f in fields(ScheduleConfig)},
        "storage": {"uri": _storage_uri, "refresh_interval": _duration},
        "cluster": {"ray_address": _string},
    }


def _parse(
    text: str,
    *,
    base_dir: Path,
    origin: str,
    environ: Mapping[str, str] | None,
    path: Path | None,
) -> Config:
    doc = read_toml(text, origin)
    base_dir = Path(base_dir).absolute()
    schema = _schema(base_dir)
    # A section key written above the first [section] header lands at the top level.
    misplaced = {k: f"{k!r} belongs in [{name}]" for name, keys in schema.items() for k in keys}
    _Table(origin, "", doc).check_keys((*schema, "sources"), misplaced)
    v = {name: _section(origin, doc, name).collect(keys) for name, keys in schema.items()}

    daemon = DaemonConfig(**{"data_dir": _path(base_dir)(DEFAULT_DATA_DIR)} | v["daemon"])
    if "listen" in v["http"]:
        v["http"]["host"], v["http"]["port"] = v["http"].pop("listen")
    for section in ("embedding", "rerank"):
        if "model" in v[section]:
            v[section]["model"], v[section]["model_is_local"] = v[section].pop("model")
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
        rerank=RerankConfig(**v["rerank"]),
        chunking=chunking,
        search=SearchConfig(**v["search"]),
        schedule=ScheduleConfig(**v["schedule"]),
        storage=StorageConfig(**v["storage"]),
        cluster=ClusterConfig(**v["cluster"]),
        sources=parse_sources(origin, doc.get("sources"), base_dir, daemon.default_max_age),
    )
    config = _apply_environment(config, os.environ if environ is None else environ)
    _check_model_directories(config, origin)
    return config


# What to do about a model path that is not a directory, per section.
_MODEL_DIR_HINTS: Final = {
    "embedding": "copy a model2vec model directory there, or give a Hugging Face id such as "
    f'"{DEFAULT_MODEL}", written without a leading "/", "./", "../" or "~"',
    "rerank": "copy a directory holding model.onnx and tokenizer.json there, give a Hugging "
    f'Face id such as "{DEFAULT_RERANK_MODEL}", or set [rerank] enabled = false',
}


def _check_model_directories(config: Config, origin: str) -> None:
    """Refuse a model path (a value that names a directory, from the file or the
    environment) that is not a directory: the model could never load from it. The second
    stage's only while it is on."""
    models = [("embedding", config.embedding.model, config.embedding.model_is_local)]
    if config.rerank.enabled:
        models.append(("rerank", config.rerank.model, config.rerank.model_is_local))
    for section, model, is_local in models:
        if not is_local or Path(model).is_dir():
            continue
        variable = f"RAGD_{section.upper()}_MODEL"
        where = (
            f"environment variable {variable} (overrides {section}.model)"
            if variable in config.env_overrides
            else f"{origin}: {section}.model"
        )
        problem = "is not a directory" if Path(model).exists() else "no such directory"
        # The whole path, not a value cut to fit: its end is the part that is wrong.
        raise ConfigError(f"{where}: {problem}: {model}", hint=_MODEL_DIR_HINTS[section])


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

    daemon, http, embedding, rerank = config.daemon, config.http, config.embedding, config.rerank
    if (data_dir := get("RAGD_DATA_DIR", "daemon.data_dir", _cwd_path)) is not None:
        daemon = replace(daemon, data_dir=data_dir)
    if (log_format := get("RAGD_LOG_FORMAT", "daemon.log_format", _choice(LogFormat))) is not None:
        daemon = replace(daemon, log_format=cast(LogFormat, log_format))
    if (listen := get("RAGD_HTTP_LISTEN", "http.listen", _listen)) is not None:
        http = replace(http, host=listen[0], port=listen[1])
    if (model := get("RAGD_EMBEDDING_MODEL", "embedding.model", _cwd_model)) is not None:
        embedding = replace(embedding, model=model[0], model_is_local=model[1])
    if (model := get("RAGD_RERANK_MODEL", "rerank.model", _cwd_model)) is not None:
        rerank = replace(rerank, model=model[0], model_is_local=model[1])
    if not applied:
        return config
    return replace(
        config,
        daemon=daemon,
        http=http,
        embedding=embedding,
        rerank=rerank,
        env_overrides=tuple(applied),
    )


# Looked up only when the variable is set: Path.cwd() fails if the cwd was deleted.
def _cwd_path(value: object) -> Path:
    return _path(Path.cwd())(value)


def _cwd_model(value: object) -> tuple[str, bool]:
    return _model(Path.cwd())(value)
