"""The [[sources]] tables of config.toml: each kind of source, its keys, defaults and rules.

Owns the source kinds (a folder tree; documents a CMS pushes by webhook; a site polled
through its sitemap or WordPress's REST API) and every message about a bad source table.
A webhook source's `format` says which CMS sends: each authenticates its own way, so each
admits its own keys and requires its own credentials (Ghost and Sanity sign with a
secret; Strapi and Directus send a static bearer token; Contentful either or both;
ragd's own format a signature scheme, or a token behind a trusted proxy). Secrets are
referenced (an environment variable name or a file), never written in the config.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final, Literal, get_args

from msgspec import Meta

from ragd.config import values as v
from ragd.config.tables import (
    InDir,
    Invalid,
    Where,
    check_keys,
    fail,
    fields_of,
    missing,
    named,
    read_table,
    value_of,
    within,
)
from ragd.errors import ConfigError

SourceType = Literal["folder", "webhook", "sitemap", "wordpress"]
PollType = Literal["sitemap", "wordpress"]
SignatureScheme = Literal["standard-webhooks", "github"]
WebhookFormatName = Literal["ragd", "strapi", "ghost", "contentful", "sanity", "directus"]
BodyFormatName = Literal["markdown", "html", "text"]
DEFAULT_INCLUDE: Final = ("**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.txt")
DEFAULT_EXCLUDE: Final = (".git/", "node_modules/", ".*/")

_NAME_RULE: Final = (
    "use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
)
_FIELD_RULE: Final = 'a name, or a dotted path such as "slug.current"'
SourceName = Annotated[
    str, named(r"^[a-z0-9][a-z0-9_-]{0,63}\Z", "is not a valid source name", _NAME_RULE, "docs")
]
FieldName = Annotated[str, named(v.FIELD_PATTERN, "is not a field name", _FIELD_RULE)]
Name = Annotated[
    str, named(v.NAME_PATTERN, "is not a name", "letters, digits, '_', '.', ':' or '-'")
]
EnvName = Annotated[str | None, v.env_name]
FetchTimeout = Annotated[timedelta, v.fetch_timeout]
Bytes = Annotated[int, Meta(ge=1)]
Concurrency = Annotated[int, Meta(ge=1, le=32)]


@dataclass(frozen=True, kw_only=True)
class FolderSourceConfig:
    """A [[sources]] table with type = "folder": a directory tree of documents (the root
    need not exist yet: a missing root is a scan-time error, not a config error)."""

    name: SourceName
    path: Annotated[Path, InDir(v.path), Meta(examples=["docs"])]
    include: Annotated[tuple[str, ...], v.some_patterns] = DEFAULT_INCLUDE
    exclude: Annotated[tuple[str, ...], v.patterns] = DEFAULT_EXCLUDE
    max_age: v.Duration = timedelta(days=7)
    type: Literal["folder"] = "folder"


@dataclass(frozen=True, kw_only=True)
class PollSourceConfig:
    """A [[sources]] table with type = "sitemap" (`url` is the sitemap.xml) or
    "wordpress" (`url` is the site): pages fetched every `poll_interval`, the changed
    ones only."""

    name: SourceName
    type: PollType
    url: Annotated[
        str,
        v.http_url,
        Meta(examples=["https://docs.example.com/sitemap.xml", "https://blog.example.com"]),
    ]
    poll_interval: v.Duration = timedelta(hours=1)
    max_age: v.Duration = timedelta(days=7)
    fetch_timeout: FetchTimeout = timedelta(seconds=10)
    fetch_max_bytes: Bytes = 5_000_000
    max_concurrency: Concurrency = 4


@dataclass(frozen=True, kw_only=True)
class WebhookSourceConfig:
    """A [[sources]] table with type = "webhook": documents pushed by a CMS.

    `format` says which CMS sends (ragd.sources.cms). `secret_env` / `bearer_token_env` /
    `api_token_env` and the values of `fetch_headers_env` are environment variable names,
    `secret_file` is a path. `fetch_url` (format "ragd") contains "{id}"; `api_url` is the
    CMS's read API, used to complete thin deliveries and, every `reconcile_interval`, to
    reconcile.
    """

    name: SourceName
    max_age: v.Duration = timedelta(days=7)
    format: WebhookFormatName = "ragd"
    signature: SignatureScheme = "standard-webhooks"
    secret_env: EnvName = None
    secret_file: Annotated[Path | None, InDir(v.path)] = None
    insecure_no_signature: bool = False
    bearer_token_env: EnvName = None
    fetch_url: Annotated[str | None, v.fetch_url] = None
    fetch_headers_env: Annotated[Mapping[str, str], v.headers_env] = field(default_factory=dict)
    fetch_timeout: FetchTimeout = timedelta(seconds=10)
    fetch_max_bytes: Bytes = 5_000_000
    max_concurrency: Concurrency = 4
    title_field: FieldName = "title"
    body_field: FieldName = "content"
    body_format: BodyFormatName = "markdown"
    url_template: Annotated[str | None, v.url_template] = None
    locale: Name = "en-US"
    locales: Annotated[tuple[str, ...], v.names] = ()
    content_types: Annotated[Mapping[str, str] | None, v.content_types] = None
    api_url: Annotated[str | None, v.http_url] = None
    api_token_env: EnvName = None
    reconcile_interval: v.Duration = timedelta(hours=1)
    type: Literal["webhook"] = "webhook"


SourceConfig = FolderSourceConfig | WebhookSourceConfig | PollSourceConfig
_CLASSES: Final[Mapping[str, type[SourceConfig]]] = {
    "folder": FolderSourceConfig, "webhook": WebhookSourceConfig,
    "sitemap": PollSourceConfig, "wordpress": PollSourceConfig,
}  # fmt: skip
_SECRET: Final = ("secret_env", "secret_file")
_MAPPING: Final = ("title_field", "body_field", "body_format", "url_template", "content_types")
_API: Final = ("api_url", "api_token_env", "reconcile_interval")
# The keys each webhook format admits, besides those of every source and every format.
_EVERY_FORMAT: Final = (
    "name", "type", "max_age", "format", "fetch_timeout", "fetch_max_bytes", "max_concurrency",
)  # fmt: skip
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
_BEARER: Final = "'Authorization: Bearer <token>'"
_SIGNS: Final = "{0} sends no signature without one, and anyone could post"
_UNSIGNED: Final = (
    "{0} signs nothing: add the header {1} to its webhook and put the token in that variable"
)
# Per format: the credentials of which it needs one (a missing one is told at the first),
# what is missing, and the hint.
_CREDENTIALS: Final = {
    "ragd": (_SECRET, "a webhook source needs secret_env or secret_file",
             "or insecure_no_signature = true with bearer_token_env, behind a trusted proxy"),
    "contentful": (
        (*_SECRET, "bearer_token_env"),
        "a Contentful source needs the space's signing secret or bearer_token_env",
        f"set secret_env to the request verification secret, or add an {_BEARER} header "
        "to the webhook",
    ),
    **{cms.lower(): (_SECRET, f"a {cms} source needs the webhook's secret (secret_env or "
                     "secret_file)", _SIGNS.format(cms)) for cms in ("Ghost", "Sanity")},
    **{cms.lower(): (("bearer_token_env",), f"a {cms} source needs bearer_token_env",
                     _UNSIGNED.format(cms, _BEARER)) for cms in ("Strapi", "Directus")},
}  # fmt: skip
_API_HINTS: Final = {
    "ghost": "the Content API key (Ghost admin: Integrations)",
    "strapi": "a read-only API token (Strapi admin: Settings > API Tokens)",
    "directus": "a static token of a user who may read the collections",
    "contentful": "a Content Delivery API token",
}
_TYPES_HINTS: Final = {
    "strapi": 'a table of model to REST plural: content_types = { article = "articles" }',
    "sanity": 'the document types: content_types = ["post", "page"]',
    "directus": 'the collections: content_types = ["articles"]',
}
_INLINE_CREDENTIAL: Final = (
    'never put a secret in the config: set secret_env = "VAR" or secret_file = "path"'
)


def parse_sources(
    origin: str, raw: object, base_dir: Path, default_max_age: timedelta
) -> tuple[SourceConfig, ...]:
    """The validated [[sources]] array. A key is named by the source's index until its
    name is known, then by name, which is what an operator searches the file for."""
    if raw is None or raw == []:
        hint = 'add a [[sources]] table with name, type = "folder" and path'
        raise ConfigError(
            f"{origin}: sources: at least one [[sources]] table is required", hint=hint
        )
    if not isinstance(raw, list):
        not_array = Invalid("expected an array of tables ([[sources]])", show_type=True)
        raise fail(f"{origin}: sources", not_array, raw)
    every_key = {key for cls in _CLASSES.values() for key in fields_of(cls)}
    seen: dict[str, int] = {}
    result: list[SourceConfig] = []
    for index, item in enumerate(raw):
        by_index = within(origin, f"sources[{index}]")
        if not isinstance(item, dict):
            raise fail(f"{origin}: sources[{index}]", "expected a table", item)
        # Typos first, against every source key, so "nmae" gets a suggestion, not "name missing".
        inline = dict.fromkeys(("secret", "token", "bearer_token"), _INLINE_CREDENTIAL)
        check_keys(item, every_key, by_index, inline)
        if "name" not in item:
            raise missing(by_index, "name", SourceName)
        name = value_of(SourceName, item["name"], by_index("name"), lambda: base_dir)
        if name in seen:
            problem = f"duplicate source name (also used by sources[{seen[name]}])"
            raise fail(by_index("name"), problem, name)
        seen[name] = index
        where = within(origin, f"sources.{name}")
        if "type" not in item:
            raise missing(where, "type", SourceType)
        kind = value_of(SourceType, item["type"], where("type"), lambda: base_dir)
        for key in [key for key in item if key not in fields_of(_CLASSES[kind])]:
            owners = " and ".join(
                f"{k} sources" for k, c in _CLASSES.items() if key in fields_of(c)
            )
            problem = f'{key!r} applies to {owners} only, and this source has type = "{kind}"'
            raise fail(where(key), problem)
        if kind == "webhook":
            form = value_of(
                WebhookFormatName, item.get("format", "ragd"), where("format"), lambda: base_dir
            )
            for key in [key for key in item if key not in (*_EVERY_FORMAT, *FORMAT_KEYS[form])]:
                users = ", ".join(f for f, keys in FORMAT_KEYS.items() if key in keys)
                raise fail(where(key), f'does not apply to format = "{form}" (it is for {users})')
        source = read_table(_CLASSES[kind], {"max_age": default_max_age} | item, where, base_dir)
        if isinstance(source, PollSourceConfig) and source.poll_interval < timedelta(minutes=1):
            raise fail(where("poll_interval"), "must be at least 1 minute")
        if isinstance(source, WebhookSourceConfig):
            _check_credentials(source, item, where)
            _check_api(source, item, where)
        result.append(source)
    return tuple(result)


def _check_credentials(
    source: WebhookSourceConfig, item: Mapping[str, object], where: Where
) -> None:
    secrets = [key for key in _SECRET if key in item]
    if len(secrets) == 2:
        raise fail(where("secret_file"), "set secret_env or secret_file, not both")
    if source.format == "ragd" and source.insecure_no_signature:
        if secrets:  # an unchecked secret would suggest deliveries are verified when they are not
            unchecked = "has no effect with insecure_no_signature = true"
            raise fail(where(secrets[0]), unchecked, hint="remove one of the two")
        if source.bearer_token_env is None:
            hint = "name the variable holding the token callers send as 'Authorization: Bearer'"
            required = "is required when insecure_no_signature = true"
            raise fail(where("bearer_token_env"), required, hint=hint)
        return
    needed, problem, hint = _CREDENTIALS[source.format]
    if not any(key in item for key in needed):
        raise fail(where(needed[0]), problem, hint=hint)


def _check_api(source: WebhookSourceConfig, item: Mapping[str, object], where: Where) -> None:
    if source.api_url is None:
        for key in [key for key in ("api_token_env", "reconcile_interval") if key in item]:
            raise fail(where(key), "has no effect without api_url")
    elif source.api_token_env is None and source.format != "sanity":  # a public dataset
        hint = _API_HINTS[source.format]
        raise fail(where("api_token_env"), "is required with api_url", hint=hint)
    elif source.format in _TYPES_HINTS and source.content_types is None:
        problem = "is required with api_url: the reconcile lists these types"
        raise fail(where("content_types"), problem, hint=_TYPES_HINTS[source.format])
    elif source.reconcile_interval < timedelta(minutes=1):
        raise fail(where("reconcile_interval"), "must be at least 1 minute")


assert set(FORMAT_KEYS) == set(_CREDENTIALS) == set(get_args(WebhookFormatName))
