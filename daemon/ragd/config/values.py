"""The converters of config values whose syntax is ragd's own, which msgspec cannot declare.

The schema (`settings`, `sources`) names them in its annotations; each takes the raw TOML
value and returns the typed one, or raises `Invalid` saying what is wrong.
"""

import ipaddress
import re
import urllib.parse
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final

from ragd.adapters.pathspec import check_pattern
from ragd.config.durations import DurationError, duration_from
from ragd.config.tables import Invalid

HUB_MODEL_EXAMPLE: Final = "minishlab/potion-base-8M"
# A fetch holds the writer (an entry read back) or a poll thread: the service's watchdog
# (WatchdogSec=60) must hear from the writer between two.
MAX_FETCH_TIMEOUT: Final = timedelta(seconds=30)
# Anchored with \Z: msgspec searches, and "$" also matches before a final newline.
FIELD_PATTERN: Final = r"^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*\Z"
NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z"
_HUB_ID_RE: Final = re.compile(r"(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}", re.ASCII)
_HOSTNAME_RE: Final = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", re.ASCII)
_BUCKET_RE: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)
_ENV_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_HEADER_RE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", re.ASCII)  # RFC 9110 token
_PLACEHOLDER_RE: Final = re.compile(r"\{([^{}]*)\}")


def string(value: object) -> str:
    if not isinstance(value, str):
        raise Invalid("expected a string", show_type=True)
    if not value:
        raise Invalid("must not be empty")
    if "\x00" in value:
        raise Invalid("must not contain a NUL character")
    return value


def duration(value: object) -> timedelta:
    if isinstance(value, timedelta):  # a default already checked
        return value
    try:
        return duration_from(value)
    except DurationError as exc:
        raise Invalid(exc.problem, hint=exc.hint, show_type=exc.wrong_type) from None


Duration = Annotated[timedelta, duration]


def fetch_timeout(value: object) -> timedelta:
    if (timeout := duration(value)) > MAX_FETCH_TIMEOUT:
        hint = "a slower site needs fewer concurrent requests, not a longer wait"
        raise Invalid("must be at most 30 s", hint=hint)
    return timeout


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
    if text.startswith("["):
        if not (bracketed := re.fullmatch(r"\[([^\]]*)\]:(.*)", text)):
            raise Invalid("expected [IPv6 address]:port", hint=example)
        host, port_text = bracketed.groups()
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise Invalid("has an invalid IPv6 address in brackets") from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise Invalid("expected host:port", hint=example)
        if ":" in host:
            raise Invalid("has an IPv6 address without brackets", hint='write "[::1]:8750"')
        if not host:
            raise Invalid("has no host", hint='use "0.0.0.0:PORT" to listen on all interfaces')
        if not _HOSTNAME_RE.fullmatch(host):
            raise Invalid("has an invalid host name")
    # The length first: int() refuses text of more than 4,300 digits with a ValueError.
    digits = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5
    if not digits or not 1 <= int(port_text) <= 65535:
        raise Invalid("needs a port between 1 and 65535")
    return f"[{host}]:{int(port_text)}" if ":" in host else f"{host}:{int(port_text)}"


def storage_uri(value: object) -> str:
    """An "s3://bucket[/prefix]" URI, without a trailing slash."""
    text = string(value)
    if not text.startswith("s3://"):
        hint = "leave [storage] uri out to keep the index under data_dir"
        raise Invalid('must be an "s3://bucket/prefix" URI', hint=hint)
    bucket, _, prefix = text.removeprefix("s3://").partition("/")
    if not _BUCKET_RE.fullmatch(bucket):
        raise Invalid(f"{bucket!r} is not an S3 bucket name")
    parts = [part for part in prefix.split("/") if part]
    if any(part in (".", "..") or any(ord(c) < 32 for c in part) for part in parts):
        raise Invalid("the prefix must not contain '.', '..' or control characters")
    return "/".join(["s3:/", bucket, *parts])


def env_name(value: object) -> str:
    # "whsec_..." is a valid variable name but is the Standard Webhooks secret format: someone
    # pasted the secret itself. The value is never echoed, in case it is a secret.
    if not isinstance(value, str) or not _ENV_NAME_RE.fullmatch(value) or value[:6] == "whsec_":
        raise Invalid(
            "expected the NAME of an environment variable (letters, digits, '_')",
            hint='e.g. "RAGD_CMS_SECRET"; the secret goes in that variable, never in the config',
            conceal=True,
        )
    return value


def patterns(value: object) -> tuple[str, ...]:
    """Gitignore-style patterns, compiled here so a bad one fails at load, not mid-scan."""
    if not isinstance(value, list):
        raise Invalid("expected an array of strings", show_type=True)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or "\n" in item or "\r" in item:
            raise Invalid("expected a non-empty one-line string", subkey=f"[{i}]", inner=item)
        try:
            check_pattern(item)
        except ValueError as exc:
            raise Invalid(f"is not a valid pattern ({exc})", subkey=f"[{i}]", inner=item) from None
    return tuple(value)


def some_patterns(value: object) -> tuple[str, ...]:
    if not (found := patterns(value)):
        raise Invalid("must list at least one pattern", hint="an empty list matches nothing")
    return found


def _absolute_url(text: str) -> None:
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:
        raise Invalid("is not a URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise Invalid("must be an absolute http:// or https:// URL")
    if parts.username or parts.password:
        hint = "a read API's token goes in an environment variable named by api_token_env"
        raise Invalid("must not carry credentials", hint=hint, conceal=True)
    if any(c.isspace() or not c.isprintable() for c in text):
        raise Invalid("must not contain spaces or control characters")


def http_url(value: object) -> str:
    _absolute_url(url := string(value))
    if "{" in url or "}" in url:
        raise Invalid("takes no placeholders")
    return url


def fetch_url(value: object) -> str:
    if not (url := string(value)).startswith(("http://", "https://")):
        raise Invalid("must start with http:// or https://")
    if "{id}" not in url:
        raise Invalid('must contain the placeholder "{id}" for the entry id')
    if "{" in url.replace("{id}", "") or "}" in url.replace("{id}", ""):
        raise Invalid('may contain no placeholder other than "{id}"')
    return url


def url_template(value: object) -> str:
    _absolute_url(_PLACEHOLDER_RE.sub("x", template := string(value)))
    for name in _PLACEHOLDER_RE.findall(template):
        if not re.fullmatch(FIELD_PATTERN, name):
            raise Invalid(f"placeholder {{{name}}} is not a field name", hint='e.g. "{slug}"')
    return template


def headers_env(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise Invalid("expected a table of header name = environment variable name")
    for header, env in value.items():
        if not _HEADER_RE.fullmatch(header):
            raise Invalid("is not a valid HTTP header name", subkey=f".{header}", inner=header)
        try:
            env_name(env)
        except Invalid as exc:
            exc.subkey, exc.inner = f".{header}", env
            raise
    return dict(value)


def names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise Invalid("expected a non-empty array of names", show_type=True)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not re.match(NAME_PATTERN, item):
            raise Invalid("is not a name", subkey=f"[{i}]", inner=item)
    return tuple(value)


def content_types(value: object) -> dict[str, str]:
    """A list of type names (each its own collection), or a table of type name to the
    REST collection that lists it (Strapi's plural names: { article = "articles" })."""
    if not isinstance(value, dict):
        return {name: name for name in names(value)}
    if not value:
        raise Invalid("must name at least one content type")
    for name, collection in value.items():
        if not re.match(NAME_PATTERN, name):
            raise Invalid("is not a content type name", subkey=f".{name}", inner=name)
        if not isinstance(collection, str) or not re.match(NAME_PATTERN, collection):
            raise Invalid("is not a collection name", subkey=f".{name}", inner=collection)
    return dict(value)
