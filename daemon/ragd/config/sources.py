"""The [[sources]] tables of config.toml: what a source is, its defaults and checks.

Owns the source kinds (a folder tree; a CMS's webhooks, ragd.config.webhook_sources; a
site polled through its sitemap or WordPress's REST API) and every message about a bad
source table. `ragd.config` reads the rest of the file and calls `parse_sources` for
the array; importers take these names from `ragd.config`, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final, Literal

from ragd.config.remote_values import _fetch_timeout, _http_url
from ragd.config.values import (  # package-internal helpers
    _choice,
    _duration,
    _error,
    _int,
    _Invalid,
    _path,
    _patterns,
    _show,
    _source_name,
    _Table,
    _type_name,
)
from ragd.config.webhook_sources import (
    WEBHOOK_KEYS,
    SignatureScheme,
    WebhookSourceConfig,
    webhook_source,
)
from ragd.errors import ConfigError

_SourceType = Literal["folder", "webhook", "sitemap", "wordpress"]
PollType = Literal["sitemap", "wordpress"]
DEFAULT_INCLUDE: Final = ("**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.txt")
DEFAULT_EXCLUDE: Final = (".git/", "node_modules/", ".*/")

__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "FolderSourceConfig",
    "PollSourceConfig",
    "SignatureScheme",
    "SourceConfig",
    "WebhookSourceConfig",
    "parse_sources",
]


@dataclass(frozen=True, kw_only=True)
class FolderSourceConfig:
    """A [[sources]] table with type = "folder": a directory tree of documents."""

    name: str
    path: Path
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    max_age: timedelta = timedelta(days=7)
    type: Literal["folder"] = "folder"


@dataclass(frozen=True, kw_only=True)
class PollSourceConfig:
    """A [[sources]] table with type = "sitemap" (`url` is the sitemap.xml) or
    "wordpress" (`url` is the site): pages fetched every `poll_interval`, the changed
    ones only."""

    name: str
    type: PollType
    url: str
    poll_interval: timedelta = timedelta(hours=1)
    max_age: timedelta = timedelta(days=7)
    fetch_timeout: timedelta = timedelta(seconds=10)
    fetch_max_bytes: int = 5_000_000
    max_concurrency: int = 4


SourceConfig = FolderSourceConfig | WebhookSourceConfig | PollSourceConfig

_SOURCE_COMMON: Final = ("name", "type", "max_age")
_FOLDER_KEYS: Final = ("path", "include", "exclude")
_POLL_KEYS: Final = ("url", "poll_interval", "fetch_timeout", "fetch_max_bytes", "max_concurrency")
_KEYS_OF: Final = {
    "folder": _FOLDER_KEYS,
    "webhook": WEBHOOK_KEYS,
    "sitemap": _POLL_KEYS,
    "wordpress": _POLL_KEYS,
}
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
    every_key = tuple(dict.fromkeys(_SOURCE_COMMON + sum(_KEYS_OF.values(), ())))
    seen: dict[str, int] = {}
    result: list[SourceConfig] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise _error(f"{origin}: sources[{index}]", _Invalid("expected a table"), item)
        # Typos first, against every source key, so "nmae" gets a suggestion, not "name missing".
        by_index = _Table(origin, f"sources[{index}]", item)
        by_index.check_keys(every_key, _SOURCE_KEY_HINTS)
        name = by_index.require("name", _source_name, hint='e.g. name = "docs"')
        if name in seen:
            problem = f"duplicate source name (also used by sources[{seen[name]}])"
            raise _error(by_index.where("name"), _Invalid(problem), name)
        seen[name] = index
        # From here on the key names the source, which is what an operator searches the file for.
        table = _Table(origin, f"sources.{name}", item)
        kind = table.require(
            "type",
            _choice(_SourceType),
            hint='type = "folder", "webhook", "sitemap" or "wordpress"',
        )
        _reject_other_kinds(table, kind)
        if kind == "folder":
            result.append(_folder_source(table, name, base_dir, default_max_age))
        elif kind == "webhook":
            result.append(webhook_source(table, name, base_dir, default_max_age))
        else:
            polled: PollType = "sitemap" if kind == "sitemap" else "wordpress"
            result.append(_poll_source(table, name, polled, default_max_age))
    return tuple(result)


def _reject_other_kinds(table: _Table, kind: str) -> None:
    mine = set(_SOURCE_COMMON + _KEYS_OF[kind])
    for key in table.data:
        if key in mine:
            continue
        others = [other for other, keys in _KEYS_OF.items() if key in keys]
        owners = " and ".join(f"{o} sources" for o in others)
        problem = f'{key!r} applies to {owners} only, and this source has type = "{kind}"'
        raise table.fail(key, problem)


def _folder_source(
    table: _Table, name: str, base_dir: Path, default_max_age: timedelta
) -> FolderSourceConfig:
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


def _poll_source(
    table: _Table, name: str, kind: PollType, default_max_age: timedelta
) -> PollSourceConfig:
    example = (
        "https://docs.example.com/sitemap.xml" if kind == "sitemap" else "https://blog.example.com"
    )
    url = table.require("url", _http_url, hint=f'e.g. url = "{example}"')
    values = table.collect(
        {
            "poll_interval": _duration,
            "max_age": _duration,
            "fetch_timeout": _fetch_timeout,
            "fetch_max_bytes": _int(1),
            "max_concurrency": _int(1, 32),
        },
        check=False,
    )
    source = PollSourceConfig(
        **{"max_age": default_max_age} | values, name=name, type=kind, url=url
    )
    if source.poll_interval < timedelta(minutes=1):
        raise table.fail("poll_interval", "must be at least 1 minute")
    return source
