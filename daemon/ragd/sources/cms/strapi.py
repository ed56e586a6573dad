"""Strapi (v4 and v5): its webhooks as Strapi sends them, and its REST API read back.

Strapi signs nothing: a webhook carries the static headers configured for it, so ragd
requires `Authorization: Bearer <token>` (strapi/strapi webhook-runner.ts). The body is
`{"event", "createdAt", "model", "uid"?, "entry"}`. Published content is what ragd
indexes:

- `entry.publish` upserts; `entry.create` / `entry.update` upsert only a published row
  (`publishedAt` set: an edit of a type without draft & publish, or of live v4 content;
  or absent: v4 gives a type without draft & publish no `publishedAt`), and a draft save
  (`publishedAt` null) is ignored;
- `entry.unpublish` and `entry.delete` delete (their entry is the raw row, ids only);
- anything else (`entry.draft-discard`, `media.*`, ...) is ignored.

An entry is keyed `<model>:<documentId>` (v5; `id` in v4, whose ids are per table),
with `:<locale>` when the source lists its `locales` and the entry has one (an entry in
a locale not listed is ignored): the webhook and the reconcile must agree on keys, and
the REST API names an entry's locale only when asked for one; its version is
`updatedAt`. Strapi does not retry a failed
delivery, so the read API's reconcile (`GET /api/<plural>`, paged) is what repairs a
missed one; it lists each configured content type, in each configured locale.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ragd.errors import SourceError
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery, parse_time, sortable_time, validate_entry_id
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import got, json_object
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected, check_bearer

UPSERTS = frozenset({"entry.publish", "entry.create", "entry.update"})
DELETES = frozenset({"entry.unpublish", "entry.delete"})
PAGE_SIZE = 100
MAX_PAGES = 10_000


def entry_key(model: str, entry: Mapping[str, Any], *, localized: bool = False) -> str:
    """`<model>:<documentId or id>`, and `:<locale>` when `localized` and the entry has
    one; WebhookRejected(400) when unusable."""
    ident = entry.get("documentId") or entry.get("id")
    if ident is None:
        raise WebhookRejected(400, "entry has neither documentId nor id")
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        raise WebhookRejected(400, "entry.documentId must be a string" + got(ident))
    locale = entry.get("locale") if localized else None
    parts = [model, str(ident)] + ([locale] if isinstance(locale, str) and locale else [])
    return validate_entry_id(":".join(parts))


def flat(item: Mapping[str, Any]) -> dict[str, Any]:
    """A v4 REST item (`{"id", "attributes": {...}}`) as v5's flat shape."""
    attributes = item.get("attributes")
    if isinstance(attributes, Mapping):
        return {**attributes, "id": item.get("id")}
    return dict(item)


class StrapiApi:
    """Strapi's REST API: the published entries of the configured content types."""

    confirms_deletes = True

    def __init__(
        self,
        name: str,
        base_url: str,
        client: HttpClient,
        fields: FieldMap,
        collections: Mapping[str, str],
        locales: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.base = base_url.rstrip("/")
        self.client = client
        self.fields = fields
        self.collections = dict(collections)  # model -> the REST path's plural name
        self.locales = tuple(locales)

    def listing(self) -> list[Listed]:
        """Every published entry's key and updatedAt; SourceError if any page fails."""
        listed: list[Listed] = []
        try:
            for model, plural in self.collections.items():
                for locale in self.locales or (None,):
                    listed.extend(self._list(model, plural, locale))
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def _list(self, model: str, plural: str, locale: str | None) -> list[Listed]:
        listed: list[Listed] = []
        page, pages = 1, 1
        while page <= min(pages, MAX_PAGES):
            query = {
                "fields[0]": "updatedAt",
                "pagination[page]": str(page),
                "pagination[pageSize]": str(PAGE_SIZE),
            }
            if locale is not None:
                query |= {"fields[1]": "locale", "locale": locale}
            answer = self._get(f"/{urllib.parse.quote(plural)}", query)
            data, meta = answer.get("data"), answer.get("meta")
            pagination = meta.get("pagination") if isinstance(meta, dict) else None
            if not isinstance(data, list) or not isinstance(pagination, dict):
                raise FetchError(f"GET /{plural}: the answer is not a page of entries")
            for raw in data:
                item = flat(raw) if isinstance(raw, Mapping) else {}
                version = parse_time(item.get("updatedAt"), "updatedAt")
                stamp = None if version is None else sortable_time(version)
                key = entry_key(model, item, localized=locale is not None)
                listed.append(Listed(key, stamp, ""))
            count = pagination.get("pageCount")
            if isinstance(count, bool) or not isinstance(count, int):
                # Taking one page for all would delete every entry on the others.
                raise FetchError(f"GET /{plural}: meta.pagination.pageCount is missing")
            pages = count
            page += 1
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        return self.fetch_entry(item.key)

    def fetch_entry(self, key: str) -> Delivery | None:
        """The published entry `key` from `GET /api/<plural>/<id>`; None when Strapi
        answers 404 (deleted or unpublished)."""
        model, _, rest = key.partition(":")
        ident, _, locale = rest.partition(":")
        plural = self.collections.get(model)
        if plural is None or not ident:
            raise FetchError(f"no REST collection is configured for model '{model}'")
        query = {"populate": "*"} | ({"locale": locale} if locale else {})
        try:
            answer = self._get(f"/{urllib.parse.quote(plural)}/{urllib.parse.quote(ident)}", query)
        except FetchError as exc:
            if exc.gone:
                return None
            raise
        data = answer.get("data")
        if not isinstance(data, Mapping):
            return None
        entry = flat(data)
        updated = parse_time(entry.get("updatedAt"), "updatedAt")
        return self.fields.upsert(key, entry, updated_at=updated, thin_ok=False)

    def _get(self, path: str, query: Mapping[str, str]) -> dict[str, Any]:
        url = f"{self.base}{path}?{urllib.parse.urlencode(query)}"
        answer = self.client.get_json(url)
        if not isinstance(answer, dict):
            raise FetchError(f"GET {path}: the answer is not a JSON object")
        return answer


class StrapiFormat:
    """Strapi's webhooks for one source: a bearer token, and the field mapping."""

    name = "strapi"

    def __init__(
        self,
        token: str,
        fields: FieldMap,
        *,
        content_types: frozenset[str] | None = None,
        locales: Sequence[str] = (),
        api: StrapiApi | None = None,
    ) -> None:
        self._token = token
        self.fields = fields
        self.content_types = content_types
        self.locales = tuple(locales)
        self.api = api

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        check_bearer(self._token, request.header("authorization"))
        # The body holds the event's createdAt (ms): a repeat of the same body is a replay.
        return body_delivery_id("strapi", request.body)

    def parse(self, request: WebhookRequest) -> Parsed:
        payload = json_object(request.body)
        event = payload.get("event", request.header("x-strapi-event"))
        if not isinstance(event, str):
            raise WebhookRejected(400, "event must be a string" + got(event))
        if event not in UPSERTS | DELETES:
            return Parsed.ignore(f"event '{event[:64]}' is not about published entries")
        model, entry = payload.get("model"), payload.get("entry")
        if not isinstance(model, str) or not model:
            raise WebhookRejected(400, "model must be a non-empty string" + got(model))
        if not isinstance(entry, dict):
            raise WebhookRejected(400, "entry must be an object" + got(entry))
        if self.content_types is not None and model not in self.content_types:
            return Parsed.ignore(f"model '{model[:64]}' is not in content_types")
        locale = entry.get("locale")
        if self.locales and isinstance(locale, str) and locale not in self.locales:
            return Parsed.ignore(f"locale '{locale[:16]}' is not in the source's locales")
        key = entry_key(model, entry, localized=bool(self.locales))
        updated_at = parse_time(entry.get("updatedAt"), "entry.updatedAt")
        if event in DELETES:
            return Parsed((Delivery("delete", key, updated_at=updated_at),))
        # A draft row has publishedAt null; a v4 type without draft & publish has no
        # publishedAt at all, and every row of it is live.
        if event != "entry.publish" and "publishedAt" in entry and entry["publishedAt"] is None:
            return Parsed.ignore("a draft (publishedAt is null) is not published content")
        delivery = self.fields.upsert(
            key, entry, updated_at=updated_at, thin_ok=self.fetches_thin_entries
        )
        return Parsed((delivery,))
