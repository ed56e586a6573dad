"""The [[sources]] tables of config.toml: each kind of source, its keys, defaults and rules.

Kinds: a folder tree; documents a CMS pushes by webhook; a site polled through its sitemap
or WordPress's REST API. A webhook source's `format` says which CMS sends: each
authenticates its own way, so each admits its own keys and requires its own credentials
(Ghost and Sanity sign with a secret; Strapi and Directus send a static bearer token;
Contentful either or both; ragd's own format a signature scheme, or a token behind a
trusted proxy). Secrets are referenced (a variable name or a file), never written here.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Final, Literal, NamedTuple, get_args

from msgspec import Meta

from ragd.config import values as v
from ragd.config.tables import (
    InDir,
    Where,
    check_keys,
    fail,
    fields_of,
    missing,
    read_table,
    told,
    value_of,
    within,
)
from ragd.errors import ConfigError

SourceType = Literal["folder", "webhook", "sitemap", "wordpress"]
WebhookFormatName = Literal["ragd", "strapi", "ghost", "contentful", "sanity", "directus"]
DEFAULT_INCLUDE: Final = (
    "**/*.md", "**/*.markdown", "**/*.mdx", "**/*.html", "**/*.htm", "**/*.txt", "**/*.rst",
    "**/*.ipynb", "**/*.pdf",
)  # fmt: skip
DEFAULT_EXCLUDE: Final = (".git/", "node_modules/", ".*/")

SourceName = Annotated[str, told(
    "is not a valid source name",
    "use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit",
    pattern=r"^[a-z0-9][a-z0-9_-]{0,63}\Z", examples=["docs"],
)]  # fmt: skip
FieldName = Annotated[
    str,
    told("is not a field name", 'a name or a dotted path: "slug.current"', pattern=v.FIELD_PATTERN),
]
Duration = Annotated[timedelta, v.duration]
Interval = Annotated[timedelta, v.minute_or_more]


@dataclass(frozen=True, kw_only=True)
class _Source:
    name: SourceName
    max_age: Duration = timedelta(days=7)


@dataclass(frozen=True, kw_only=True)
class _FetchingSource(_Source):
    fetch_timeout: Annotated[timedelta, v.fetch_timeout] = timedelta(seconds=10)
    fetch_max_bytes: Annotated[int, Meta(ge=1)] = 5_000_000
    max_concurrency: Annotated[int, Meta(ge=1, le=32)] = 4


@dataclass(frozen=True, kw_only=True)
class FolderSourceConfig(_Source):
    """type = "folder": a directory tree of documents (a root that does not exist yet is a
    scan-time error, not a config error)."""

    path: Annotated[Path, InDir(v.path), Meta(examples=["docs"])]
    include: Annotated[
        tuple[v.Pattern, ...], v.patterns,
        told("must list at least one pattern", "an empty list matches nothing", min_length=1),
    ] = DEFAULT_INCLUDE  # fmt: skip
    exclude: Annotated[tuple[v.Pattern, ...], v.patterns] = DEFAULT_EXCLUDE
    type: Literal["folder"] = "folder"


@dataclass(frozen=True, kw_only=True)
class PollSourceConfig(_FetchingSource):
    """type = "sitemap" (`url` is the sitemap.xml) or "wordpress" (`url` is the site):
    pages fetched every `poll_interval`, the changed ones only. A WordPress site's
    `content_types` are "post" and/or "page" (default both)."""

    type: Literal["sitemap", "wordpress"]
    url: Annotated[
        str, v.http_url,
        Meta(examples=["https://docs.example.com/sitemap.xml", "https://blog.example.com"]),
    ]  # fmt: skip
    poll_interval: Interval = timedelta(hours=1)
    content_types: v.ContentTypes = None


@dataclass(frozen=True, kw_only=True)
class WebhookSourceConfig(_FetchingSource):
    """type = "webhook": documents pushed by a CMS (`format`, see ragd.sources.cms).
    `fetch_url` (format "ragd") contains "{id}"; `api_url` is the CMS's read API, used to
    complete thin deliveries and, every `reconcile_interval`, to reconcile."""

    format: WebhookFormatName = "ragd"
    signature: Literal["standard-webhooks", "github"] = "standard-webhooks"
    secret_env: v.EnvName | None = None
    secret_file: Annotated[Path | None, InDir(v.path)] = None
    insecure_no_signature: bool = False
    bearer_token_env: v.EnvName | None = None
    fetch_url: Annotated[str | None, v.fetch_url] = None
    fetch_headers_env: Mapping[v.HeaderName, v.EnvName] = field(default_factory=dict)
    title_field: FieldName = "title"
    body_field: FieldName = "content"
    body_format: Literal["markdown", "html", "text"] = "markdown"
    url_template: Annotated[str | None, v.url_template] = None
    locale: v.Name = "en-US"
    locales: Annotated[tuple[v.Name, ...], Meta(min_length=1)] = ()
    content_types: v.ContentTypes = None
    api_url: Annotated[str | None, v.http_url] = None
    api_token_env: v.EnvName | None = None
    reconcile_interval: Interval = timedelta(hours=1)
    type: Literal["webhook"] = "webhook"


SourceConfig = FolderSourceConfig | WebhookSourceConfig | PollSourceConfig
_CLASSES: Final[Mapping[str, type[SourceConfig]]] = {
    "folder": FolderSourceConfig, "webhook": WebhookSourceConfig,
    "sitemap": PollSourceConfig, "wordpress": PollSourceConfig,
}  # fmt: skip


def source_kinds(sources: Sequence[SourceConfig]) -> dict[str, str]:
    """Each source's name and what it is: "folder", "sitemap", "wordpress", or
    "webhook:<format>"."""
    return {
        s.name: f"webhook:{s.format}" if isinstance(s, WebhookSourceConfig) else s.type
        for s in sources
    }


class _Format(NamedTuple):
    keys: tuple[str, ...]  # besides those of every format (_FetchingSource's, type, format)
    needs: tuple[str, ...]  # credentials of which one is required (a missing one told at the first)
    problem: str
    hint: str
    api_token: str | None = None  # what api_token_env names (None: a read API may be public)
    types: str | None = None  # how to write content_types, when reconciling lists them


_SECRET: Final = ("secret_env", "secret_file")
_MAPPING: Final = ("title_field", "body_field", "body_format", "url_template", "content_types")
_API: Final = ("api_url", "api_token_env", "reconcile_interval")
_BEARER: Final = "add the header 'Authorization: Bearer <token>'"
_FORMATS: Final = {
    "ragd": _Format(
        (*_SECRET, "signature", "insecure_no_signature", "bearer_token_env", "fetch_url",
         "fetch_headers_env"), _SECRET, "a webhook source needs secret_env or secret_file",
        "or insecure_no_signature = true with bearer_token_env, behind a trusted proxy"),
    "ghost": _Format(
        (*_SECRET, "content_types", *_API), _SECRET, "a Ghost source needs the webhook's "
        "secret (secret_env or secret_file)", "Ghost sends no signature without one, and "
        "anyone could post",
        "the Content API key (Ghost admin: Integrations)"),
    "strapi": _Format(
        ("bearer_token_env", *_MAPPING, "locales", *_API), ("bearer_token_env",),
        "a Strapi source needs bearer_token_env", f"Strapi signs nothing: {_BEARER} to its "
        "webhook and put the token in that variable",
        "a read-only API token (Strapi admin: Settings > API Tokens)",
        'a table of model to REST plural: content_types = { article = "articles" }'),
    "directus": _Format(
        ("bearer_token_env", *_MAPPING, *_API), ("bearer_token_env",),
        "a Directus source needs bearer_token_env", f"Directus signs nothing: {_BEARER} to its "
        "webhook and put the token in that variable",
        "a static token of a user who may read the collections",
        'the collections: content_types = ["articles"]'),
    "contentful": _Format(
        (*_SECRET, "bearer_token_env", *_MAPPING, "locale", *_API), (*_SECRET, "bearer_token_env"),
        "a Contentful source needs the space's signing secret or bearer_token_env",
        f"set secret_env to the request verification secret, or {_BEARER} to the webhook",
        "a Content Delivery API token"),
    "sanity": _Format(
        (*_SECRET, *_MAPPING, *_API), _SECRET, "a Sanity source needs the webhook's secret "
        "(secret_env or secret_file)", "Sanity sends no signature without one, and anyone "
        "could post", None, 'the document types: content_types = ["post", "page"]'),
}  # fmt: skip
# What a Ghost or WordPress site holds, as their APIs name them (post.*, /posts/).
_POST_TYPES: Final = ("post", "page")
_EVERY_FORMAT: Final = ("type", "format", *fields_of(_FetchingSource))
_INLINE: Final = 'never put a secret in the config: set secret_env = "VAR" or secret_file = "path"'
assert set(_FORMATS) == set(get_args(WebhookFormatName))


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
        raise fail(f"{origin}: sources", "expected an array of tables ([[sources]])", raw)
    every_key = {key for cls in _CLASSES.values() for key in fields_of(cls)}
    seen: dict[str, int] = {}
    result: list[SourceConfig] = []
    for index, item in enumerate(raw):
        by_index = within(origin, f"sources[{index}]")
        if not isinstance(item, dict):
            raise fail(f"{origin}: sources[{index}]", "expected a table", item)
        # Typos first, against every source key, so "nmae" gets a suggestion, not "name missing".
        check_keys(item, every_key, by_index, dict.fromkeys(("secret", "token"), _INLINE))
        if "name" not in item:
            raise missing(by_index, "name", SourceName)
        name = value_of(SourceName, item["name"], by_index("name"), Path.cwd)
        if name in seen:
            problem = f"duplicate source name (also used by sources[{seen[name]}])"
            raise fail(by_index("name"), problem, name)
        seen[name] = index
        where = within(origin, f"sources.{name}")
        if "type" not in item:
            raise missing(where, "type", SourceType)
        kind = value_of(SourceType, item["type"], where("type"), Path.cwd)
        for key in [key for key in item if key not in fields_of(_CLASSES[kind])]:
            owners = " and ".join(
                f"{k} sources" for k, c in _CLASSES.items() if key in fields_of(c)
            )
            problem = f'{key!r} applies to {owners} only, and this source has type = "{kind}"'
            raise fail(where(key), problem)
        if kind == "webhook":
            form = value_of(
                WebhookFormatName, item.get("format", "ragd"), where("format"), Path.cwd
            )
            for key in [key for key in item if key not in (*_EVERY_FORMAT, *_FORMATS[form].keys)]:
                users = ", ".join(f for f, spec in _FORMATS.items() if key in spec.keys)
                raise fail(where(key), f'does not apply to format = "{form}" (it is for {users})')
        source = read_table(_CLASSES[kind], {"max_age": default_max_age} | item, where, base_dir)
        if isinstance(source, WebhookSourceConfig):
            _check_webhook(source, item, where)
        if isinstance(source, PollSourceConfig) and source.content_types is not None:
            if source.type == "sitemap":
                problem = '\'content_types\' applies to type = "wordpress" only, not "sitemap"'
                raise fail(where("content_types"), problem)
            _check_post_types(source.content_types, "WordPress", where)
        result.append(source)
    return tuple(result)


def _check_webhook(source: WebhookSourceConfig, item: Mapping[str, object], where: Where) -> None:
    spec, secrets = _FORMATS[source.format], [key for key in _SECRET if key in item]
    if len(secrets) == 2:
        raise fail(where("secret_file"), "set secret_env or secret_file, not both")
    if source.insecure_no_signature:  # of format "ragd" only
        if secrets:  # an unchecked secret would suggest deliveries are verified when they are not
            unchecked = "has no effect with insecure_no_signature = true"
            raise fail(where(secrets[0]), unchecked, hint="remove one of the two")
        if source.bearer_token_env is None:
            hint = "name the variable holding the token callers send as 'Authorization: Bearer'"
            required = "is required when insecure_no_signature = true"
            raise fail(where("bearer_token_env"), required, hint=hint)
    elif not any(key in item for key in spec.needs):
        raise fail(where(spec.needs[0]), spec.problem, hint=spec.hint)
    if source.format == "ghost" and source.content_types is not None:
        _check_post_types(source.content_types, "Ghost", where)
    if source.api_url is None:
        for key in [key for key in ("api_token_env", "reconcile_interval") if key in item]:
            raise fail(
                where(key), "has no effect without api_url", hint="set api_url, or remove it"
            )
    elif source.api_token_env is None and spec.api_token:  # None: a public Sanity dataset
        raise fail(where("api_token_env"), "is required with api_url", hint=spec.api_token)
    elif spec.types and source.content_types is None:
        problem = "is required with api_url: the reconcile lists these types"
        raise fail(where("content_types"), problem, hint=spec.types)


def _check_post_types(types: Mapping[str, str], cms: str, where: Where) -> None:
    for kind in [k for k in types if k not in _POST_TYPES]:
        hint = f'a {cms} site holds "post" and "page": content_types = ["post"]'
        raise fail(where("content_types"), f"is not a {cms} content type", kind, hint=hint)
