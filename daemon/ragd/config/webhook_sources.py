"""[[sources]] tables with type = "webhook": which CMS sends, how it proves it, what to read.

Owns `WebhookSourceConfig` and its checks per `format`: each CMS authenticates its own
way, so each format admits its own keys and requires its own credentials (Ghost and
Sanity sign with a secret; Strapi and Directus send a static bearer token; Contentful
either or both; ragd's own format a signature scheme, or a token behind a trusted proxy),
and a key another format needs is refused saying which. Secrets are referenced (an
environment variable name or a file), never written in the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, get_args

from ragd.config.remote_values import (
    _content_types,
    _fetch_timeout,
    _field,
    _http_url,
    _name,
    _names,
    _url_template,
)
from ragd.config.values import (
    _bool,
    _choice,
    _duration,
    _env_name,
    _fetch_url,
    _headers_env,
    _int,
    _path,
    _Table,
)

SignatureScheme = Literal["standard-webhooks", "github"]
WebhookFormatName = Literal["ragd", "strapi", "ghost", "contentful", "sanity", "directus"]
BodyFormatName = Literal["markdown", "html", "text"]


def _empty_mapping() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class WebhookSourceConfig:
    """A [[sources]] table with type = "webhook": documents pushed by a CMS.

    `format` says which CMS sends (ragd.sources.cms). Secrets are referenced, never
    stored: `secret_env` / `bearer_token_env` / `api_token_env` and the values of
    `fetch_headers_env` are environment variable names, `secret_file` is a path.
    `fetch_url` (format "ragd") contains "{id}"; `api_url` is the CMS's read API, used to
    complete thin deliveries and, every `reconcile_interval`, to reconcile.
    """

    name: str
    max_age: timedelta = timedelta(days=7)
    format: WebhookFormatName = "ragd"
    signature: SignatureScheme = "standard-webhooks"
    secret_env: str | None = None
    secret_file: Path | None = None
    insecure_no_signature: bool = False
    bearer_token_env: str | None = None
    fetch_url: str | None = None
    fetch_headers_env: Mapping[str, str] = field(default_factory=_empty_mapping)
    fetch_timeout: timedelta = timedelta(seconds=10)
    fetch_max_bytes: int = 5_000_000
    max_concurrency: int = 4
    title_field: str = "title"
    body_field: str = "content"
    body_format: BodyFormatName = "markdown"
    url_template: str | None = None
    locale: str = "en-US"
    locales: tuple[str, ...] = ()
    content_types: Mapping[str, str] | None = None
    api_url: str | None = None
    api_token_env: str | None = None
    reconcile_interval: timedelta = timedelta(hours=1)
    type: Literal["webhook"] = "webhook"


_COMMON: Final = (
    "format", "fetch_timeout", "fetch_max_bytes", "max_concurrency",
)  # fmt: skip
_SECRET: Final = ("secret_env", "secret_file")
_MAPPING: Final = ("title_field", "body_field", "body_format", "url_template", "content_types")
_API: Final = ("api_url", "api_token_env", "reconcile_interval")
# The keys each format admits, besides name, type, max_age and _COMMON.
FORMAT_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "ragd": (
        "signature", *_SECRET, "insecure_no_signature", "bearer_token_env", "fetch_url",
        "fetch_headers_env",
    ),
    "ghost": (*_SECRET, *_API),
    "strapi": ("bearer_token_env", *_MAPPING, "locales", *_API),
    "directus": ("bearer_token_env", *_MAPPING, *_API),
    "contentful": (*_SECRET, "bearer_token_env", *_MAPPING, "locale", *_API),
    "sanity": (*_SECRET, *_MAPPING, *_API),
}  # fmt: skip
WEBHOOK_KEYS: Final = tuple(dict.fromkeys(_COMMON + sum(FORMAT_KEYS.values(), ())))
_CONVERTERS: Final = {
    "max_age": _duration,
    "format": _choice(WebhookFormatName),
    "signature": _choice(SignatureScheme),
    "secret_env": _env_name,
    "insecure_no_signature": _bool,
    "bearer_token_env": _env_name,
    "fetch_url": _fetch_url,
    "fetch_headers_env": _headers_env,
    "fetch_timeout": _fetch_timeout,
    "fetch_max_bytes": _int(1),
    "max_concurrency": _int(1, 32),
    "title_field": _field,
    "body_field": _field,
    "body_format": _choice(BodyFormatName),
    "url_template": _url_template,
    "locale": _name,
    "locales": _names,
    "content_types": _content_types,
    "api_url": _http_url,
    "api_token_env": _env_name,
    "reconcile_interval": _duration,
}
_SIGNS: Final = {"ghost": "Ghost", "sanity": "Sanity"}
_TOKEN_ONLY: Final = {"strapi": "Strapi", "directus": "Directus"}


def webhook_source(
    table: _Table, name: str, base_dir: Path, default_max_age: timedelta
) -> WebhookSourceConfig:
    """The validated webhook source; errors name the key and say what the format needs."""
    kind = table.take("format", _choice(WebhookFormatName)) or "ragd"
    allowed = ("name", "type", "max_age", *_COMMON, *FORMAT_KEYS[kind])
    for key in table.data:
        if key not in allowed and key in WEBHOOK_KEYS:
            users = [f for f, keys in FORMAT_KEYS.items() if key in keys]
            problem = f'does not apply to format = "{kind}" (it is for {", ".join(users)})'
            raise table.fail(key, problem)
    converters = {k: c for k, c in _CONVERTERS.items() if k in allowed}
    converters["secret_file"] = _path(base_dir)
    values = table.collect(converters, check=False)
    source = WebhookSourceConfig(**{"max_age": default_max_age} | values, name=name)
    _check_credentials(table, source, values)
    _check_api(table, source)
    return source


def _check_credentials(
    table: _Table, source: WebhookSourceConfig, values: dict[str, object]
) -> None:
    secrets = [k for k in _SECRET if k in values]
    if len(secrets) == 2:
        raise table.fail("secret_file", "set secret_env or secret_file, not both")
    kind = source.format
    if kind == "ragd":
        _check_native(table, source, secrets)
    elif kind in _SIGNS and not secrets:
        raise table.fail(
            "secret_env",
            f"a {_SIGNS[kind]} source needs the webhook's secret (secret_env or secret_file)",
            hint=f"{_SIGNS[kind]} sends no signature without one, and anyone could post",
        )
    elif kind in _TOKEN_ONLY and source.bearer_token_env is None:
        raise table.fail(
            "bearer_token_env",
            f"a {_TOKEN_ONLY[kind]} source needs bearer_token_env",
            hint=f"{_TOKEN_ONLY[kind]} signs nothing: add the header 'Authorization: Bearer "
            "<token>' to its webhook and put the token in that variable",
        )
    elif kind == "contentful" and not secrets and source.bearer_token_env is None:
        raise table.fail(
            "secret_env",
            "a Contentful source needs the space's signing secret or bearer_token_env",
            hint="set secret_env to the request verification secret, or add an "
            "'Authorization: Bearer <token>' header to the webhook",
        )


def _check_native(table: _Table, source: WebhookSourceConfig, secrets: list[str]) -> None:
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
    elif not secrets:
        raise table.fail(
            "secret_env",
            "a webhook source needs secret_env or secret_file",
            hint="or insecure_no_signature = true with bearer_token_env, behind a trusted proxy",
        )


def _check_api(table: _Table, source: WebhookSourceConfig) -> None:
    if source.api_url is None:
        for key in ("api_token_env", "reconcile_interval"):
            if key in table.data:
                raise table.fail(key, "has no effect without api_url")
        return
    if source.api_token_env is None and source.format != "sanity":
        raise table.fail(
            "api_token_env", "is required with api_url", hint=_API_HINTS[source.format]
        )
    if source.format in ("strapi", "sanity", "directus") and source.content_types is None:
        raise table.fail(
            "content_types",
            "is required with api_url: the reconcile lists these types",
            hint=_TYPES_HINTS[source.format],
        )
    if source.reconcile_interval < timedelta(minutes=1):
        raise table.fail("reconcile_interval", "must be at least 1 minute")


_API_HINTS: Final = {
    "ghost": "the Content API key (Ghost admin: Integrations)",
    "strapi": "a read-only API token (Strapi admin: Settings > API Tokens)",
    "directus": "a static token of a user who may read the collections",
    "contentful": "a Content Delivery API token",
    "sanity": "a read token, or none for a public dataset",
    "ragd": "",
}
_TYPES_HINTS: Final = {
    "strapi": 'a table of model to REST plural: content_types = { article = "articles" }',
    "sanity": 'the document types: content_types = ["post", "page"]',
    "directus": 'the collections: content_types = ["articles"]',
}
assert set(FORMAT_KEYS) == set(get_args(WebhookFormatName))
