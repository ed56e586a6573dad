"""Reading config.toml (or a string of TOML) into a `Config`, and environment overrides.

A ConfigError is one line: the file (or environment variable), the dotted key
(`chunking.max_chars`, `sources[1].name`, `sources.docs.include`), what is wrong, the
value, and a hint where one helps. A model given as a path must be a directory that exists
(a missing one is a mistake in the setting, not a download to retry). Secrets are not read
here (only where they live), nor whether folder roots exist (a scan-time error).

TOML: tomllib recurses once per level of arrays and inline tables (RecursionError some
hundreds of levels down), while dotted keys nest tables without limit for the checks and
messages to recurse through later; ragd's settings nest at most 3 levels, so a value deeper
than MAX_DEPTH is refused. TOML's integers are 64-bit; tomllib returns any size, and raises
ValueError for a decimal one of over 4,300 digits (a hexadecimal one that long converts but
cannot be shown in a message).
"""

import contextlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from ragd.config import settings as s
from ragd.config.access import parse_access
from ragd.config.bounded_files import UnfitFile, read_bounded_file
from ragd.config.sources import parse_sources
from ragd.config.tables import check_keys, fail, fields_of, read_table, value_of, within
from ragd.errors import ConfigError

__all__ = ["CONFIG_ENV", "load_config", "parse_config", "parse_duration", "resolve_config_path"]

MAX_DEPTH: Final = 16
CONFIG_ENV: Final = "RAGD_CONFIG"
_MISSING_FILE_HINT: Final = "pass --config PATH or set RAGD_CONFIG"
# The commented example is ~10 KiB; a config of a thousand sources stays well under this.
MAX_CONFIG_BYTES: Final = 1024 * 1024
# Settings an operator changes per host (a systemd unit's Environment=), over the file's.
_ENVIRONMENT: Final = {
    "RAGD_DATA_DIR": ("daemon", "data_dir"), "RAGD_LOG_FORMAT": ("daemon", "log_format"),
    "RAGD_HTTP_LISTEN": ("http", "listen"), "RAGD_EMBEDDING_MODEL": ("embedding", "model"),
    "RAGD_RERANK_MODEL": ("rerank", "model"),
}  # fmt: skip


def resolve_config_path(cli_value: str | None, environ: Mapping[str, str]) -> Path:
    """The config file to use: --config, else $RAGD_CONFIG, else ./config.toml (absolute)."""
    # An empty value (RAGD_CONFIG= in a unit file) means "not set", as in most shells' habits.
    path = Path(cli_value or environ.get(CONFIG_ENV) or "config.toml")
    with contextlib.suppress(RuntimeError):  # no home to expand "~" against: keep it as given
        path = path.expanduser()
    return path.absolute()


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> s.Config:
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
    config = parse_config(text, base_dir=path.parent, origin=str(path), environ=environ)
    return replace(config, path=path)


def parse_config(
    text: str,
    *,
    base_dir: Path,
    origin: str = "config.toml",
    environ: Mapping[str, str] | None = None,
) -> s.Config:
    """Validate TOML text; relative paths resolve against base_dir, errors name `origin`."""
    doc = read_toml(text, origin)
    base_dir = Path(base_dir).absolute()
    # A section key written above the first [section] header lands at the top level.
    misplaced = {k: f"{k!r} belongs in [{n}]" for n, c in s.SECTIONS.items() for k in fields_of(c)}
    check_keys(doc, (*s.SECTIONS, "sources", "access"), within(origin, ""), misplaced)
    sections: dict[str, Any] = {}
    for name, cls in s.SECTIONS.items():
        if not isinstance(table := doc.get(name, {}), dict):
            raise fail(f"{origin}: {name}", f"expected a table ([{name}])", table)
        defaults = {"data_dir": s.DEFAULT_DATA_DIR} if name == "daemon" else {}
        sections[name] = read_table(cls, defaults | table, within(origin, name), base_dir)
    chunking = sections["chunking"]
    if chunking.overlap >= chunking.max_chars // 2:
        # A window must advance by more than half its size, or chunks mostly repeat each other.
        problem = f"must be less than half of chunking.max_chars ({chunking.max_chars // 2})"
        raise fail(f"{origin}: chunking.overlap", problem, chunking.overlap)
    max_age = sections["daemon"].default_max_age
    sources = parse_sources(origin, doc.get("sources"), base_dir, max_age)
    access = parse_access(origin, doc.get("access"), sources, base_dir)
    overrides = _apply_environment(sections, os.environ if environ is None else environ)
    config = s.Config(
        path=None, sources=sources, access=access, env_overrides=overrides, **sections
    )
    _check_model_directories(config, origin)
    return config


def parse_duration(value: object, *, key: str) -> timedelta:
    """A positive duration from "90m", "1h30m", "7d" or a number of seconds; errors name key."""
    return value_of(s.Duration, value, key, Path.cwd)  # type: ignore[no-any-return]


def _apply_environment(sections: dict[str, Any], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Apply RAGD_* overrides on top of the file; relative values resolve against the cwd."""
    applied: list[str] = []
    for variable, (name, key) in _ENVIRONMENT.items():
        if not (value := environ.get(variable)):  # unset, or empty (Environment=VAR= in a unit)
            continue
        where = f"environment variable {variable} (overrides {name}.{key})"
        # Path.cwd only when asked: it fails if the cwd was deleted.
        checked = value_of(fields_of(s.SECTIONS[name])[key], value, where, Path.cwd)
        sections[name] = replace(sections[name], **{key: checked})
        applied.append(variable)
    return tuple(applied)


# What to do about a model path that is not a directory, per section.
_MODEL_DIR_HINTS: Final = {
    "embedding": "copy a model2vec model directory there, or give a Hugging Face id such as "
    f'"{s.DEFAULT_MODEL}", written without a leading "/", "./", "../" or "~"',
    "rerank": "copy a directory holding model.onnx and tokenizer.json there, give a Hugging "
    f'Face id such as "{s.DEFAULT_RERANK_MODEL}", or set [rerank] enabled = false',
}


def _check_model_directories(config: s.Config, origin: str) -> None:
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


INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
_SHOWN_KEY_CHARS: Final = 40
_RANGE: Final = f"TOML integers are 64-bit, from {INT_MIN} to {INT_MAX}"


def read_toml(text: str, origin: str) -> dict[str, Any]:
    """The TOML document in `text`; ConfigError naming `origin` when it is not TOML, nests
    deeper than MAX_DEPTH, or holds an integer outside 64 bits."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # the message ends "(at line N, column M)"
        raise ConfigError(f"{origin}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"{origin}: invalid TOML: arrays or inline tables nested too deeply "
            f"(ragd reads at most {MAX_DEPTH} levels)"
        ) from None
    except ValueError:  # only int(): a decimal integer over sys.get_int_max_str_digits()
        raise ConfigError(f"{origin}: invalid TOML: an integer is too large ({_RANGE})") from None
    _check_values(doc, origin)
    return doc


def _check_values(doc: dict[str, Any], origin: str) -> None:
    # Iterative, so that checking a deep document cannot itself run out of stack.
    pending: list[tuple[tuple[str, ...], object]] = [((), doc)]
    while pending:
        path, value = pending.pop()
        if len(path) > MAX_DEPTH:
            raise ConfigError(
                f"{origin}: {_dotted(path)}: nested more than {MAX_DEPTH} levels deep "
                "(ragd's settings nest at most 3)"
            )
        if isinstance(value, dict):
            pending.extend(((*path, _key(k)), v) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend(((*path, f"[{i}]"), v) for i, v in enumerate(value))
        elif isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            raise ConfigError(f"{origin}: {_dotted(path)}: integer out of range ({_RANGE})")


def _key(key: str) -> str:
    shown = key if len(key) <= _SHOWN_KEY_CHARS else key[: _SHOWN_KEY_CHARS - 3] + "..."
    return f".{shown}" if shown.isprintable() else f".{shown!r}"  # the message stays one line


def _dotted(path: tuple[str, ...]) -> str:
    return "".join(path).removeprefix(".")
