"""Assembly of the sources ragd reaches over HTTP: webhook formats, read APIs, polled sites.

Owns turning the config of webhook, sitemap and WordPress sources into the core's
objects (ragd.sources.cms, ragd.sources.sitemap, ragd.sources.wordpress), reading their
secrets and tokens from the environment (or a secret from its file, within the bounds of
ragd.service.secret_files) once, at start, and never logging them. A variable that is
named but unset is a configuration error naming the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ragd import __version__
from ragd.config import Config, PollSourceConfig, SourceConfig, WebhookSourceConfig
from ragd.errors import ConfigError
from ragd.service.secret_files import read_secret_file
from ragd.sources.cms.contentful import ContentfulApi, ContentfulFormat
from ragd.sources.cms.directus import DirectusApi, DirectusFormat
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import EntryReader, WebhookFormat
from ragd.sources.cms.ghost import KINDS, GhostApi, GhostFormat
from ragd.sources.cms.native import NativeFormat
from ragd.sources.cms.sanity import SanityApi, SanityFormat
from ragd.sources.cms.strapi import StrapiApi, StrapiFormat
from ragd.sources.fetch import EntryFetcher
from ragd.sources.http_client import HttpClient, Limits
from ragd.sources.remote import RemoteSource
from ragd.sources.sitemap import SitemapSource
from ragd.sources.webhooks import WebhookAuth
from ragd.sources.wordpress import WordPressSource


@dataclass(frozen=True)
class RemoteSources:
    """Every source of a config that ragd reaches over HTTP, built."""

    formats: Mapping[str, WebhookFormat]  # webhook sources, by name
    readers: Mapping[str, EntryReader]  # those that can fetch an entry back
    polled: Mapping[str, tuple[RemoteSource, float]]  # name -> (source, seconds between polls)


def remote_sources(config: Config, environ: Mapping[str, str] | None = None) -> RemoteSources:
    """Build them all for `ragd serve`, reading secrets from `environ` (the process's
    by default); ConfigError naming the key for a variable that is not set."""
    env = os.environ if environ is None else environ
    formats: dict[str, WebhookFormat] = {}
    readers: dict[str, EntryReader] = {}
    for source in config.sources:
        if isinstance(source, WebhookSourceConfig):
            reader: EntryReader | None = None
            if source.api_url is not None:
                reader = read_api(source, env)
            elif source.fetch_url is not None:
                reader = _fetcher(source, env)
            formats[source.name] = _format(source, reader, env)
            if reader is not None:
                readers[source.name] = reader
    return RemoteSources(formats, readers, polled_sources(config, env, readers))


def polled_sources(
    config: Config,
    environ: Mapping[str, str] | None = None,
    apis: Mapping[str, EntryReader] | None = None,
) -> dict[str, tuple[RemoteSource, float]]:
    """The sources polled on a schedule, with their intervals: sitemaps, WordPress
    sites, and the read APIs of CMS sources (their reconcile). `apis` are read APIs
    already built; others are built here, reading only their API tokens."""
    env = os.environ if environ is None else environ
    polled: dict[str, tuple[RemoteSource, float]] = {}
    for source in config.sources:
        built = (apis or {}).get(source.name)
        if isinstance(built, _APIS):
            assert isinstance(source, WebhookSourceConfig)
            polled[source.name] = (built, source.reconcile_interval.total_seconds())
        elif (polled_source := polled_source_of(source, env)) is not None:
            polled[source.name] = polled_source
    return polled


def polled_source_of(
    source: SourceConfig, environ: Mapping[str, str] | None = None
) -> tuple[RemoteSource, float] | None:
    """One source as a polled source with its interval; None for a source ragd does
    not poll (a folder, a webhook source without a read API)."""
    env = os.environ if environ is None else environ
    if isinstance(source, PollSourceConfig):
        return _polled(source), source.poll_interval.total_seconds()
    if isinstance(source, WebhookSourceConfig) and source.api_url is not None:
        return read_api(source, env), source.reconcile_interval.total_seconds()
    return None


def _client(
    source: WebhookSourceConfig | PollSourceConfig, headers: Mapping[str, str] | None = None
) -> HttpClient:
    limits = Limits(
        timeout=source.fetch_timeout.total_seconds(),
        max_bytes=source.fetch_max_bytes,
        per_host=source.max_concurrency,
    )
    return HttpClient(limits, {"User-Agent": f"ragd/{__version__}", **(headers or {})})


def _polled(source: PollSourceConfig) -> RemoteSource:
    client = _client(source)
    if source.type == "sitemap":
        return SitemapSource(source.name, source.url, client)
    return WordPressSource(source.name, source.url, client, kinds=tuple(source.content_types or ()))


def _env(
    source: WebhookSourceConfig, key: str, var: str | None, env: Mapping[str, str]
) -> str | None:
    if var is None:
        return None
    value = env.get(var, "").strip()
    if not value:
        raise ConfigError(
            f"sources.{source.name}.{key}: environment variable {var} is not set or empty"
        )
    return value


def _secret(source: WebhookSourceConfig, env: Mapping[str, str]) -> str | None:
    if source.secret_env is not None:
        return _env(source, "secret_env", source.secret_env, env)
    if source.secret_file is None:
        return None
    text = read_secret_file(source.secret_file, f"sources.{source.name}.secret_file").strip()
    if not text:
        raise ConfigError(f"sources.{source.name}.secret_file: {source.secret_file} is empty")
    return text


_Api = GhostApi | StrapiApi | DirectusApi | ContentfulApi | SanityApi
_APIS = (GhostApi, StrapiApi, DirectusApi, ContentfulApi, SanityApi)


def read_api(source: WebhookSourceConfig, env: Mapping[str, str]) -> _Api:
    """The CMS's read API of a source with an api_url (its token read from `env`)."""
    assert source.api_url is not None
    token = _env(source, "api_token_env", source.api_token_env, env)
    bearer = {"Authorization": f"Bearer {token}"} if token else None
    name, url, fields = source.name, source.api_url, _fields(source)
    types = tuple(source.content_types or ())
    if source.format == "ghost":
        assert token is not None  # the config requires it
        # Ghost's key is a query parameter.
        return GhostApi(name, url, token, _client(source), kinds=types or KINDS)
    if source.format == "strapi":
        collections = source.content_types or {}
        return StrapiApi(name, url, _client(source, bearer), fields, collections, source.locales)
    if source.format == "directus":
        return DirectusApi(name, url, _client(source, bearer), fields, types)
    if source.format == "contentful":
        client = _client(source, bearer)
        return ContentfulApi(name, url, client, fields, locale=source.locale, types=types)
    if source.format == "sanity":
        return SanityApi(name, url, _client(source, bearer), fields, types)
    raise ConfigError(f'sources.{name}.api_url: format "{source.format}" has no read API')


def _fields(source: WebhookSourceConfig) -> FieldMap:
    return FieldMap(source.title_field, source.body_field, source.body_format, source.url_template)


def _format(
    source: WebhookSourceConfig, reader: EntryReader | None, env: Mapping[str, str]
) -> WebhookFormat:
    """The source's webhook format, its secret and token read from `env`."""
    secret = _secret(source, env)
    token = _env(source, "bearer_token_env", source.bearer_token_env, env)
    key = None if secret is None else secret.encode()
    fields, api = _fields(source), reader
    types = None if source.content_types is None else frozenset(source.content_types)
    if source.format == "ghost":
        assert key is not None  # the config requires it
        ghost = api if isinstance(api, GhostApi) else None
        return GhostFormat(key, api=ghost, kinds=tuple(source.content_types or KINDS))
    if source.format == "strapi":
        assert token is not None
        strapi = api if isinstance(api, StrapiApi) else None
        return StrapiFormat(token, fields, content_types=types, locales=source.locales, api=strapi)
    if source.format == "directus":
        assert token is not None
        directus = api if isinstance(api, DirectusApi) else None
        return DirectusFormat(token, fields, content_types=types, api=directus)
    if source.format == "contentful":
        contentful = api if isinstance(api, ContentfulApi) else None
        return ContentfulFormat(
            fields, secret=key, token=token, locale=source.locale, content_types=types,
            api=contentful,
        )  # fmt: skip
    if source.format == "sanity":
        assert key is not None
        sanity = api if isinstance(api, SanityApi) else None
        return SanityFormat(key, fields, content_types=types, api=sanity)
    try:
        if source.insecure_no_signature:
            auth = WebhookAuth.from_secret_text("none", None, token)
        else:
            auth = WebhookAuth.from_secret_text(source.signature, secret, token)
    except ValueError as exc:  # the message never contains the secret
        raise ConfigError(f"sources.{source.name}: {exc}") from None
    return NativeFormat(auth, fetcher=reader if isinstance(reader, EntryFetcher) else None)


def _fetcher(source: WebhookSourceConfig, env: Mapping[str, str]) -> EntryFetcher:
    assert source.fetch_url is not None
    headers = {
        name: str(_env(source, f"fetch_headers_env.{name}", var, env))
        for name, var in source.fetch_headers_env.items()
    }
    return EntryFetcher(source.fetch_url, _client(source, headers))
