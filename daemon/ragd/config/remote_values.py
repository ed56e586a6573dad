"""Checking the values of remote sources: URLs, URL templates, field names, type lists.

Owns the converters the webhook and polled sources need beyond `ragd.config.values`: an
absolute http(s) URL (no credentials in it, no placeholders), a URL template whose
`{field}` placeholders an entry fills, a (dotted) field name, and `content_types`, a list
of type names or a table of type name to REST collection.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Final

from ragd.config.values import _duration, _Invalid, _string

# A fetch holds the writer (an entry read back) or a poll thread: the service's watchdog
# (WatchdogSec=60) must hear from the writer between two.
MAX_FETCH_TIMEOUT: Final = timedelta(seconds=30)

_FIELD_RE: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*", re.ASCII)
_NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}", re.ASCII)
_PLACEHOLDER_RE: Final = re.compile(r"\{([^{}]*)\}")


def _absolute_url(text: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:
        raise _Invalid("is not a URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise _Invalid("must be an absolute http:// or https:// URL")
    if parts.username or parts.password:
        raise _Invalid(
            "must not carry credentials",
            hint="a read API's token goes in an environment variable named by api_token_env",
            conceal=True,
        )
    if any(c.isspace() or not c.isprintable() for c in text):
        raise _Invalid("must not contain spaces or control characters")
    return parts


def _fetch_timeout(value: object) -> timedelta:
    timeout = _duration(value)  # more than zero, as every duration
    if timeout > MAX_FETCH_TIMEOUT:
        raise _Invalid(
            "must be at most 30 s",
            hint="a slower site needs fewer concurrent requests, not a longer wait",
        )
    return timeout


def _http_url(value: object) -> str:
    url = _string(value)
    _absolute_url(url)
    if "{" in url or "}" in url:
        raise _Invalid("takes no placeholders")
    return url


def _url_template(value: object) -> str:
    template = _string(value)
    _absolute_url(_PLACEHOLDER_RE.sub("x", template))
    for name in _PLACEHOLDER_RE.findall(template):
        if not _FIELD_RE.fullmatch(name):
            raise _Invalid(f"placeholder {{{name}}} is not a field name", hint='e.g. "{slug}"')
    return template


def _field(value: object) -> str:
    name = _string(value)
    if not _FIELD_RE.fullmatch(name) or len(name) > 200:
        raise _Invalid(
            "is not a field name", hint='a name, or a dotted path such as "slug.current"'
        )
    return name


def _name(value: object) -> str:
    name = _string(value)
    if not _NAME_RE.fullmatch(name):
        raise _Invalid("is not a name", hint="letters, digits, '_', '.', ':' or '-'")
    return name


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _Invalid("expected a non-empty array of names", show_type=True)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not _NAME_RE.fullmatch(item):
            raise _Invalid("is not a name", subkey=f"[{i}]", value=item)
    return tuple(value)


def _content_types(value: object) -> Mapping[str, str]:
    """A list of type names (each its own collection), or a table of type name to the
    REST collection that lists it (Strapi's plural names: { article = "articles" })."""
    if isinstance(value, dict):
        if not value:
            raise _Invalid("must name at least one content type")
        for name, collection in value.items():
            if not _NAME_RE.fullmatch(name):
                raise _Invalid("is not a content type name", subkey=name, value=name)
            if not isinstance(collection, str) or not _NAME_RE.fullmatch(collection):
                raise _Invalid("is not a collection name", subkey=name, value=collection)
        return MappingProxyType(dict(value))
    return MappingProxyType({name: name for name in _names(value)})
