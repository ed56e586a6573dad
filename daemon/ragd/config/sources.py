"""The [[sources]] tables of config.toml: folder and webhook sources, their defaults and checks.

Owns what a source is (FolderSourceConfig, WebhookSourceConfig) and every message about a
bad source table. `ragd.config` reads the rest of the file and calls `parse_sources` for
the array; importers take these names from `ragd.config`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal

from ragd.config.values import (  # package-internal helpers
    _bool,
    _choice,
    _duration,
    _env_name,
    _error,
    _fetch_url,
    _headers_env,
    _int,
    _Invalid,
    _path,
    _patterns,
    _show,
    _source_name,
    _Table,
    _type_name,
)
from ragd.errors import ConfigError

SignatureScheme = Literal["standard-webhooks", "github"]
_SourceType = Literal["folder", "webhook"]
DEFAULT_INCLUDE: Final = ("**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.txt")
DEFAULT_EXCLUDE: Final = (".git/", "node_modules/", ".*/")


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


def parse_sources(
    origin: str, raw: object, base_dir: Path, default_max_age: timedelta
) -> tuple[SourceConfig, ...]:
    """The validated [[sources]] array; errors name `origin` and the source's key."""
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
