"""Checking config values: raw TOML values to typed ones, with errors that name the key.

Owns the converters (integers in range, choices, durations, paths, listen addresses,
model locations, glob patterns, environment variable names) and `_Table`, which reads
one TOML table, rejects unknown keys with a "did you mean" hint, and prefixes every
complaint with the file and dotted key. `ragd.config` holds the schema built from these.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeVar, get_args

from ragd.adapters.pathspec import check_pattern
from ragd.config.durations import DurationError, duration_from
from ragd.errors import ConfigError

HUB_MODEL_EXAMPLE: Final = "minishlab/potion-base-8M"

# --- error plumbing -------------------------------------------------------------------------

_ABSENT: Final = object()


class _Invalid(Exception):
    """A converter's complaint about one value; the caller adds where the value came from."""

    def __init__(
        self,
        problem: str,
        *,
        hint: str | None = None,
        show_type: bool = False,
        conceal: bool = False,
        subkey: str | None = None,
        value: object = _ABSENT,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint
        self.show_type = show_type
        self.conceal = conceal  # the value might be a secret pasted in the wrong place
        self.subkey = subkey  # a key inside a table value, appended to the dotted key
        self.value = value  # the offending inner value, when not the whole value


_TOML_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (bool, "a boolean"),  # before int: bool is a subclass of int
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
)


def _type_name(value: object) -> str:
    for cls, name in _TOML_TYPES:
        if isinstance(value, cls):
            return name
    return "a date/time"


def _show(value: object) -> str:
    # JSON spelling is also TOML spelling for strings, numbers, booleans and arrays.
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _error(where: str, exc: _Invalid, value: object) -> ConfigError:
    if exc.subkey is not None:
        where += exc.subkey if exc.subkey.startswith("[") else f".{exc.subkey}"
    if exc.value is not _ABSENT:
        value = exc.value
    if exc.conceal:
        got = f", got {_type_name(value)} (not shown, as it may be a secret)"
    elif value is _ABSENT:
        got = ""
    elif exc.show_type:
        got = f", got {_type_name(value)} {_show(value)}"
    else:
        got = f", got {_show(value)}"
    return ConfigError(f"{where}: {exc.problem}{got}", hint=exc.hint)


def _suggest(word: str, options: Collection[str]) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


# --- converters: raw TOML value -> typed value, or _Invalid ---------------------------------

T = TypeVar("T")
_Convert = Callable[[object], Any]


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise _Invalid("expected a string", show_type=True)
    if not value:
        raise _Invalid("must not be empty")
    if "\x00" in value:
        raise _Invalid("must not contain a NUL character")
    return value


def _int(low: int, high: int | None = None) -> Callable[[object], int]:
    def convert(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid("expected an integer", show_type=True)
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise _Invalid(f"must be {bound}")
        return value

    return convert


def _weight(value: object) -> float:
    """A non-negative number (TOML integer or float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Invalid("expected a number", show_type=True)
    if not 0 <= value <= 100:
        raise _Invalid("must be between 0 and 100")
    return float(value)


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("expected true or false", show_type=True)
    return value


def _choice(alias: object) -> Callable[[object], str]:
    options: tuple[str, ...] = get_args(alias)

    def convert(value: object) -> str:
        text = _string(value)
        if text not in options:
            listed = ", ".join(json.dumps(o) for o in options)
            raise _Invalid(f"must be one of {listed}", hint=_suggest(text, options))
        return text

    return convert


def _duration(value: object) -> timedelta:
    try:
        return duration_from(value)
    except DurationError as exc:
        raise _Invalid(exc.problem, hint=exc.hint, show_type=exc.wrong_type) from None


def _path(base: Path) -> Callable[[object], Path]:
    """Paths are absolute: "~" expands, relative paths join `base`, then normalise."""

    def convert(value: object) -> Path:
        try:
            path = Path(_string(value)).expanduser()
            return (base / path).resolve()  # base / absolute path == absolute path
        except (RuntimeError, OSError) as exc:
            raise _Invalid(f"is not a usable path ({exc})") from None

    return convert


_BUCKET_RE: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)


def _storage_uri(value: object) -> str:
    """An "s3://bucket[/prefix]" URI, without a trailing slash."""
    text = _string(value)
    if not text.startswith("s3://"):
        raise _Invalid(
            'must be an "s3://bucket/prefix" URI',
            hint="leave [storage] uri out to keep the index under data_dir",
        )
    bucket, _, prefix = text.removeprefix("s3://").partition("/")
    if not _BUCKET_RE.fullmatch(bucket):
        raise _Invalid(f"{bucket!r} is not an S3 bucket name")
    parts = [part for part in prefix.split("/") if part]
    if any(part in (".", "..") or any(ord(c) < 32 for c in part) for part in parts):
        raise _Invalid("the prefix must not contain '.', '..' or control characters")
    return "/".join(["s3:/", bucket, *parts])


_ENV_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _env_name(value: object) -> str:
    # "whsec_..." is a valid variable name but is the Standard Webhooks secret format: someone
    # pasted the secret itself. The value is never echoed, in case it is a secret.
    if (
        not isinstance(value, str)
        or not _ENV_NAME_RE.fullmatch(value)
        or value.startswith("whsec_")
    ):
        raise _Invalid(
            "expected the NAME of an environment variable (letters, digits, '_')",
            hint='e.g. "RAGD_CMS_SECRET"; the secret goes in that variable, never in the config',
            conceal=True,
        )
    return value


_SOURCE_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.ASCII)


def _source_name(value: object) -> str:
    if not _SOURCE_NAME_RE.fullmatch(_string(value)):
        raise _Invalid(
            "is not a valid source name",
            hint="use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit",
        )
    return str(value)


def _patterns(*, non_empty: bool) -> Callable[[object], tuple[str, ...]]:
    """Gitignore-style patterns, compiled here so a bad one fails at load, not mid-scan."""

    def convert(value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise _Invalid("expected an array of strings", show_type=True)
        if non_empty and not value:
            raise _Invalid("must list at least one pattern", hint="an empty list matches nothing")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip() or "\n" in item or "\r" in item:
                raise _Invalid("expected a non-empty one-line string", subkey=f"[{i}]", value=item)
            try:
                check_pattern(item)
            except ValueError as exc:
                raise _Invalid(
                    f"is not a valid pattern ({exc})", subkey=f"[{i}]", value=item
                ) from None
        return tuple(value)

    return convert


def _fetch_url(value: object) -> str:
    url = _string(value)
    if not url.startswith(("http://", "https://")):
        raise _Invalid("must start with http:// or https://")
    if "{id}" not in url:
        raise _Invalid('must contain the placeholder "{id}" for the entry id')
    if "{" in url.replace("{id}", "") or "}" in url.replace("{id}", ""):
        raise _Invalid('may contain no placeholder other than "{id}"')
    return url


_HEADER_RE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", re.ASCII)  # RFC 9110 token


def _headers_env(value: object) -> Mapping[str, str]:
    if not isinstance(value, dict):
        raise _Invalid("expected a table of header name = environment variable name")
    headers: dict[str, str] = {}
    for header, env in value.items():
        if not _HEADER_RE.fullmatch(header):
            raise _Invalid("is not a valid HTTP header name", subkey=header, value=header)
        try:
            headers[header] = _env_name(env)
        except _Invalid as exc:
            exc.subkey, exc.value = header, env
            raise
    return MappingProxyType(headers)


_HOSTNAME_RE: Final = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", re.ASCII)


def _listen(value: object) -> tuple[str, int]:
    text = _string(value)
    example = 'e.g. "127.0.0.1:8750" or "[::1]:8750"'
    if text.startswith("["):
        bracketed = re.fullmatch(r"\[([^\]]*)\]:(.*)", text)
        if not bracketed:
            raise _Invalid("expected [IPv6 address]:port", hint=example)
        host, port_text = bracketed.groups()
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _Invalid("has an invalid IPv6 address in brackets") from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise _Invalid("expected host:port", hint=example)
        if ":" in host:
            raise _Invalid("has an IPv6 address without brackets", hint='write "[::1]:8750"')
        if not host:
            raise _Invalid("has no host", hint='use "0.0.0.0:PORT" to listen on all interfaces')
        if not _HOSTNAME_RE.fullmatch(host):
            raise _Invalid("has an invalid host name")
    # The length first: int() refuses text of more than 4,300 digits with a ValueError.
    digits = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5
    if not digits or not 1 <= int(port_text) <= 65535:
        raise _Invalid("needs a port between 1 and 65535")
    return host, int(port_text)


_HUB_ID_RE: Final = re.compile(r"(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}", re.ASCII)


def _model(base: Path) -> Callable[[object], tuple[str, bool]]:
    """A local directory (explicit path, or one that exists under `base`) or a hub id."""

    def convert(value: object) -> tuple[str, bool]:
        text = _string(value)
        if text.startswith(("/", "./", "../", "~")) or _exists(base / text):
            return str(_path(base)(text)), True
        if not _HUB_ID_RE.fullmatch(text):
            raise _Invalid(
                f"is neither a directory under {base} nor a Hugging Face model id",
                hint=f'e.g. "{HUB_MODEL_EXAMPLE}", or a path starting with "./", "../" or "/"',
            )
        return text, False

    return convert


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


# --- reading tables -------------------------------------------------------------------------


class _Table:
    """One TOML table: checks its keys and converts its values, naming the key on failure."""

    def __init__(self, origin: str, prefix: str, data: Mapping[str, object]) -> None:
        self.origin = origin
        self.prefix = prefix
        self.data = data

    def where(self, key: str) -> str:
        return f"{self.origin}: {self.prefix}.{key}" if self.prefix else f"{self.origin}: {key}"

    def fail(self, key: str, problem: str, *, hint: str | None = None) -> ConfigError:
        return _error(self.where(key), _Invalid(problem, hint=hint), _ABSENT)

    def check_keys(
        self, allowed: Collection[str], extra_hints: Mapping[str, str] | None = None
    ) -> None:
        for key in self.data:
            if key not in allowed:
                hint = (extra_hints or {}).get(key) or _suggest(key, allowed)
                hint = hint or "valid keys: " + ", ".join(sorted(allowed))
                raise self.fail(key, "unknown key", hint=hint)

    def take(self, key: str, convert: Callable[[object], T]) -> T | None:
        """The converted value, or None when absent (TOML has no null, so None is unambiguous)."""
        if key not in self.data:
            return None
        value = self.data[key]
        try:
            return convert(value)
        except _Invalid as exc:
            raise _error(self.where(key), exc, value) from None

    def require(self, key: str, convert: Callable[[object], T], *, hint: str) -> T:
        result = self.take(key, convert)
        if result is None:
            raise self.fail(key, "is required", hint=hint)
        return result

    def collect(self, converters: Mapping[str, _Convert], *, check: bool = True) -> dict[str, Any]:
        """Converted values of the keys present, ready to pass to a dataclass as **kwargs."""
        if check:
            self.check_keys(converters)
        return {k: self.take(k, c) for k, c in converters.items() if k in self.data}


def _section(origin: str, doc: Mapping[str, object], name: str) -> _Table:
    data = doc.get(name, {})
    if not isinstance(data, dict):
        got = f", got {_type_name(data)} {_show(data)}"
        raise ConfigError(f"{origin}: {name}: expected a table ([{name}]){got}")
    return _Table(origin, name, data)
