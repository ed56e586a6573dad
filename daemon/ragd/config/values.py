"""Config values whose syntax is ragd's own: string rules msgspec checks (`told`), and
converters for what a pattern cannot say (durations: "500ms", "90m", "1h30m", "7d", "2w").
The schema (`settings`, `sources`) names them in its annotations; a converter takes the raw
TOML value and returns the typed one, or raises `Invalid` saying what is wrong."""

import ipaddress
import math
import re
import urllib.parse
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final

from msgspec import Meta

from ragd.adapters.pathspec import check_pattern
from ragd.config.tables import Invalid, told

HUB_MODEL_EXAMPLE: Final = "minishlab/potion-base-8M"
# A fetch holds the writer (an entry read back) or a poll thread: the service's watchdog
# (WatchdogSec=60) must hear from the writer between two.
MAX_FETCH_TIMEOUT: Final = timedelta(seconds=30)
# Anchored with \Z: msgspec searches, and "$" also matches before a final newline.
FIELD_PATTERN: Final = r"^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*\Z"
_HUB_ID_RE: Final = re.compile(r"(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}", re.ASCII)
_HOSTNAME_RE: Final = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", re.ASCII)
_BUCKET_RE: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)
_PLACEHOLDER_RE: Final = re.compile(r"\{([^{}]*)\}")
_DURATION_HINT: Final = (
    'a number and a unit (us, ms, s, m, h, d, w), e.g. "30s", "10m", "1h30m" or "7d"'
)
_UNITS: Final = {
    "w": timedelta(weeks=1), "d": timedelta(days=1), "h": timedelta(hours=1),
    "m": timedelta(minutes=1), "s": timedelta(seconds=1), "ms": timedelta(milliseconds=1),
    "us": timedelta(microseconds=1),
}  # fmt: skip
# Longer unit names first in the alternation so "5ms" is not read as "5m" followed by junk.
_PART = r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d|w)"
_WHOLE_RE = re.compile(rf"(?:{_PART}\s*)+", re.ASCII)


Name = Annotated[
    str,
    told(
        "is not a name",
        "up to 128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z",
    ),
]
# "whsec_..." is a valid variable name but is the Standard Webhooks secret format: someone
# pasted the secret itself. The value is never echoed, in case it is a secret.
EnvName = Annotated[str, told(
    "expected the NAME of an environment variable (letters, digits, '_')",
    'e.g. "RAGD_CMS_SECRET"; the secret goes in that variable, never in the config',
    conceal=True, pattern=r"^(?!whsec_)[A-Za-z_][A-Za-z0-9_]*\Z",
)]  # fmt: skip
HeaderName = Annotated[  # an RFC 9110 token
    str, told("is not a valid HTTP header name", pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
]
Pattern = Annotated[
    str, told("must be a non-empty one-line pattern", pattern=r"^[^\r\n]*\S[^\r\n]*\Z")
]


def string(value: object) -> str:
    if not isinstance(value, str):
        raise Invalid("expected a string")
    if not value or "\x00" in value:
        raise Invalid("must not be empty" if not value else "must not contain a NUL character")
    return value


def duration(value: object) -> timedelta:
    """A positive timedelta from a duration string ("1h30m"; units are case-sensitive: "m" is
    minutes, there is no month) or a number of seconds."""
    if isinstance(value, timedelta):  # a default already checked
        return value
    # bool is a subclass of int; `true` is never a duration.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Invalid("expected a duration string or a number of seconds", _DURATION_HINT)
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid("must be a finite number of seconds", _DURATION_HINT)
    text = value.strip() if isinstance(value, str) else str(value)
    try:
        if text.startswith("-"):
            result = timedelta(0)
        elif re.fullmatch(r"\d+(?:\.\d+)?", text, re.ASCII) or not isinstance(value, str):
            result = timedelta(seconds=float(value))
        elif _WHOLE_RE.fullmatch(text):
            parts = re.findall(_PART, text, re.ASCII)
            result = sum((_UNITS[unit] * float(n) for n, unit in parts), timedelta(0))
        else:
            raise Invalid("is not a duration", _DURATION_HINT)
    except OverflowError:
        raise Invalid("is too large") from None
    if result <= timedelta(0):
        raise Invalid("must be greater than zero")
    return result


def format_duration(td: timedelta) -> str:
    """A timedelta written compactly ("7d", "1h30m", "500ms", zero as "0s"), as
    duration_from reads it back. Weeks are left out: a week reads as "7d", as the example
    configuration writes max_age."""
    parts, rest = ["-" if td < timedelta(0) else ""], abs(td)
    for unit, size in list(_UNITS.items())[1:]:
        count, rest = divmod(rest, size)
        parts.append(f"{count}{unit}" if count else "")
    return "".join(parts) or "0s"


def fetch_timeout(value: object) -> timedelta:
    if (timeout := duration(value)) > MAX_FETCH_TIMEOUT:
        hint = "a slower site needs fewer concurrent requests, not a longer wait"
        raise Invalid("must be at most 30 s", hint=hint)
    return timeout


def minute_or_more(value: object) -> timedelta:
    if (interval := duration(value)) < timedelta(minutes=1):  # polling sooner is hammering
        raise Invalid("must be at least 1 minute")
    return interval


def path(value: object, base: Path) -> Path:
    """Absolute: "~" expands, a relative path joins `base`, then it is normalised."""
    try:
        return (base / Path(string(value)).expanduser()).resolve()
    except (RuntimeError, OSError) as exc:
        raise Invalid(f"is not a usable path ({exc})") from None


def model(value: object, base: Path) -> str:
    """A local directory (an explicit path, or one that exists under `base`), made
    absolute, or a Hugging Face id kept verbatim (never absolute: `model_is_local`)."""
    text = string(value)
    try:
        exists = (base / text).exists()
    except (OSError, ValueError):
        exists = False
    if text.startswith(("/", "./", "../", "~")) or exists:
        return str(path(text, base))
    if not _HUB_ID_RE.fullmatch(text):
        raise Invalid(
            f"is neither a directory under {base} nor a Hugging Face model id",
            hint=f'e.g. "{HUB_MODEL_EXAMPLE}", or a path starting with "./", "../" or "/"',
        )
    return text


def listen(value: object) -> str:
    """ "host:port" or "[IPv6]:port", written back canonically (the port without zeros)."""
    text, example = string(value), 'e.g. "127.0.0.1:8750" or "[::1]:8750"'
    host, sep, port_text = text.rpartition(":")
    if text.startswith("["):
        if not (bracketed := re.fullmatch(r"\[([^\]]*)\]:(.*)", text)):
            raise Invalid("must be [IPv6 address]:port", hint=example)
        host, port_text = bracketed.groups()
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise Invalid("has an invalid IPv6 address in brackets") from None
    elif not sep:
        raise Invalid("must be host:port", hint=example)
    elif ":" in host:
        raise Invalid("has an IPv6 address without brackets", hint='write "[::1]:8750"')
    elif not host:
        raise Invalid("has no host", hint='use "0.0.0.0:PORT" to listen on all interfaces')
    elif not _HOSTNAME_RE.fullmatch(host):
        raise Invalid("has an invalid host name")
    # The length first: int() refuses text of more than 4,300 digits with a ValueError.
    digits = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5
    if not digits or not 1 <= int(port_text) <= 65535:
        raise Invalid("needs a port between 1 and 65535")
    return f"[{host}]:{int(port_text)}" if ":" in host else f"{host}:{int(port_text)}"


def storage_uri(value: object) -> str:
    """An "s3://bucket[/prefix]" URI, without a trailing slash."""
    if not (text := string(value)).startswith("s3://"):
        hint = "leave [storage] uri out to keep the index under data_dir"
        raise Invalid('must be an "s3://bucket/prefix" URI', hint=hint)
    bucket, _, prefix = text.removeprefix("s3://").partition("/")
    if not _BUCKET_RE.fullmatch(bucket):
        raise Invalid(f"{bucket!r} is not an S3 bucket name")
    parts = [part for part in prefix.split("/") if part]
    if any(part in (".", "..") or any(ord(c) < 32 for c in part) for part in parts):
        raise Invalid("the prefix must not contain '.', '..' or control characters")
    return "/".join(["s3:/", bucket, *parts])


def patterns(value: object) -> object:
    """Gitignore-style patterns are compiled here, so that a bad one fails at load, not mid-scan."""
    for i, item in enumerate(value if isinstance(value, list) else ()):
        try:
            if isinstance(item, str):
                check_pattern(item)
        except ValueError as exc:
            raise Invalid(f"is not a valid pattern ({exc})", subkey=f"[{i}]", inner=item) from None
    return value


def http_url(value: object, template: bool = False) -> str:
    text = string(value)
    checked = _PLACEHOLDER_RE.sub("x", text) if template else text
    try:
        parts = urllib.parse.urlsplit(checked)
        host = parts.hostname
    except ValueError:
        raise Invalid("is not a URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise Invalid("must be an absolute http:// or https:// URL")
    if parts.username or parts.password:
        hint = "a read API's token goes in an environment variable named by api_token_env"
        raise Invalid("must not carry credentials", hint=hint, conceal=True)
    if any(c.isspace() or not c.isprintable() for c in checked):
        raise Invalid("must not contain spaces or control characters")
    if not template and ("{" in text or "}" in text):
        raise Invalid("takes no placeholders")
    for name in _PLACEHOLDER_RE.findall(text):
        if not re.fullmatch(FIELD_PATTERN, name):
            raise Invalid(f"placeholder {{{name}}} is not a field name", hint='e.g. "{slug}"')
    return text


def url_template(value: object) -> str:
    return http_url(value, template=True)


def fetch_url(value: object) -> str:
    if not (url := string(value)).startswith(("http://", "https://")):
        raise Invalid("must start with http:// or https://")
    if "{id}" not in url:
        raise Invalid('must contain the placeholder "{id}" for the entry id')
    if "{" in url.replace("{id}", "") or "}" in url.replace("{id}", ""):
        raise Invalid('may contain no placeholder other than "{id}"')
    return url


def content_types(value: object) -> object:
    """An array of type names (each its own collection) is read as the table of type name to
    the REST collection that lists it (Strapi's plural names: { article = "articles" })."""
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return dict(zip(value, value, strict=True))
    return value


ContentTypes = Annotated[Annotated[Mapping[Name, Name], Meta(min_length=1)] | None, content_types]
