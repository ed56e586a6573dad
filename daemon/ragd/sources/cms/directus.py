"""Directus: its item events as a webhook (a Flow's Request URL, or a legacy webhook),
and its REST API read back.

Directus signs nothing: the request carries the static headers configured for it, so
ragd requires `Authorization: Bearer <token>`. The body is the event's data
(directus/directus webhooks.ts; a Flow's `{{$trigger}}`): `{"event", "collection",
"payload", "key"}` for a create, `"keys"` for an update or a delete. Flows name the event
`<collection>.items.update`, legacy webhooks `items.update`: both are read. A create
upserts its payload; an update's payload holds only the fields that changed, so without
the body field it is refused naming the field, and with the REST API configured it is
always read back whole; a delete deletes every key.

An entry is keyed `<collection>:<key>`; its version is `date_updated` when the payload
has it. Directus sends no delivery id and no time, so the id is a hash of the body and a
repeat of it counts as a duplicate only for a short while (ragd.stores.jobs).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ragd.errors import SourceError
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery, parse_time, sortable_time, validate_entry_id
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import got, json_object
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected, check_bearer

ACTIONS = ("create", "update", "delete")
PAGE_LIMIT = 100
MAX_PAGES = 10_000


def _action(event: str) -> str | None:
    """create/update/delete from `items.update` or `<collection>.items.update`."""
    head, _, action = event.rpartition(".")
    return action if action in ACTIONS and (head == "items" or head.endswith(".items")) else None


def _key(collection: str, item_key: object) -> str:
    if isinstance(item_key, bool) or not isinstance(item_key, str | int):
        raise WebhookRejected(400, "key must be a string or an integer" + got(item_key))
    return validate_entry_id(f"{collection}:{item_key}")


def _version(item: Mapping[str, Any]) -> str | None:
    updated = parse_time(item.get("date_updated") or item.get("date_created"), "date_updated")
    return None if updated is None else sortable_time(updated)


class DirectusApi:
    """Directus's REST API: the items of the configured collections, keyed by `id`."""

    confirms_deletes = True

    def __init__(
        self,
        name: str,
        base_url: str,
        client: HttpClient,
        fields: FieldMap,
        collections: tuple[str, ...],
    ) -> None:
        self.name = name
        self.base = base_url.rstrip("/")
        self.client = client
        self.fields = fields
        self.collections = collections

    def listing(self) -> list[Listed]:
        """Every item's key and date_updated; SourceError if any page fails."""
        listed: list[Listed] = []
        try:
            for collection in self.collections:
                for page in range(1, MAX_PAGES + 1):
                    query = {"limit": str(PAGE_LIMIT), "page": str(page)}
                    data = self._get(f"/items/{urllib.parse.quote(collection)}", query)
                    if not isinstance(data, list):
                        raise FetchError(f"GET /items/{collection}: the answer is not a list")
                    items = [i for i in data if isinstance(i, Mapping)]
                    listed.extend(
                        Listed(_key(collection, i.get("id")), _version(i), "") for i in items
                    )
                    if len(data) < PAGE_LIMIT:
                        break
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        return self.fetch_entry(item.key)

    def fetch_entry(self, key: str) -> Delivery | None:
        """The item `key` whole; None when Directus has no such item. It answers 403 for
        an item that does not exist (so as not to reveal which do) and for a token that
        may not read it: a filtered listing tells the two apart, since a token that lost
        its permission must not delete what it can no longer see."""
        collection, _, ident = key.partition(":")
        path = f"/items/{urllib.parse.quote(collection)}/{urllib.parse.quote(ident)}"
        try:
            item = self._get(path, {})
        except FetchError as exc:
            if exc.gone or (exc.status == 403 and not self._exists(collection, ident)):
                return None
            raise
        if not isinstance(item, Mapping):
            return None
        updated = parse_time(item.get("date_updated") or item.get("date_created"), "date_updated")
        return self.fields.upsert(key, item, updated_at=updated, thin_ok=False)

    def _exists(self, collection: str, ident: str) -> bool:
        """Whether the collection lists item `ident`; FetchError when it cannot say."""
        query = {"filter[id][_eq]": ident, "fields": "id", "limit": "1"}
        found = self._get(f"/items/{urllib.parse.quote(collection)}", query)
        if not isinstance(found, list):
            raise FetchError(f"GET /items/{collection}: the answer is not a list")
        return bool(found)

    def _get(self, path: str, query: Mapping[str, str]) -> object:
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        answer = self.client.get_json(f"{self.base}{path}{suffix}")
        if not isinstance(answer, dict) or "data" not in answer:
            raise FetchError(f"GET {path}: the answer has no 'data'")
        return answer["data"]


class DirectusFormat:
    """Directus's item events for one source: a bearer token, and the field mapping."""

    name = "directus"

    def __init__(
        self,
        token: str,
        fields: FieldMap,
        *,
        content_types: frozenset[str] | None = None,
        api: DirectusApi | None = None,
    ) -> None:
        self._token = token
        self.fields = fields
        self.content_types = content_types
        self.api = api

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        check_bearer(self._token, request.header("authorization"))
        return body_delivery_id("directus", request.body)

    def parse(self, request: WebhookRequest) -> Parsed:
        payload = json_object(request.body)
        event, collection = payload.get("event"), payload.get("collection")
        if not isinstance(event, str):
            raise WebhookRejected(400, "event must be a string" + got(event))
        action = _action(event)
        if action is None:
            return Parsed.ignore(f"event '{event[:64]}' is not an item create, update or delete")
        if not isinstance(collection, str) or not collection:
            raise WebhookRejected(400, "collection must be a non-empty string" + got(collection))
        if self.content_types is not None and collection not in self.content_types:
            return Parsed.ignore(f"collection '{collection[:64]}' is not in content_types")
        raw_keys = [payload.get("key")] if action == "create" else payload.get("keys")
        if not isinstance(raw_keys, list) or not raw_keys:
            field = "key" if action == "create" else "keys"
            raise WebhookRejected(400, f"{field} is missing" + got(raw_keys))
        keys = [_key(collection, k) for k in raw_keys]
        if action == "delete":
            return Parsed(tuple(Delivery("delete", key) for key in keys))
        item = payload.get("payload")
        if not isinstance(item, dict):
            raise WebhookRejected(400, "payload must be an object" + got(item))
        updated = parse_time(item.get("date_updated"), "payload.date_updated")
        if action == "update" and self.fetches_thin_entries:
            # An update's payload is the fields that changed: read the whole item back,
            # unless the change empties the body (fetching it would only find it empty).
            if self.fields.has_body(item):
                self.fields.body(item)
            return Parsed(tuple(Delivery("upsert", k, updated_at=updated) for k in keys))
        # Every key gets the same payload: read it once, not once per key (a bulk update
        # may name thousands, and a rich-text body is converted as it is read).
        first = self.fields.upsert(
            keys[0], item, updated_at=updated, thin_ok=self.fetches_thin_entries
        )
        return Parsed(tuple(replace(first, entry_id=key) for key in keys))
