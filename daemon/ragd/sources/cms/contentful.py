"""Contentful: its webhooks as Contentful sends them, and its Content Delivery API read
back.

A Contentful webhook is authenticated by request verification when the space has a
signing secret (contentful/node-apps-toolkit sign-request.ts: `x-contentful-signature`
is the hex HMAC-SHA256 of `METHOD\\nPATH\\nheaders\\nBODY`, the headers those named in
`x-contentful-signed-headers`, lower-cased, sorted, `name:value` joined by `;`;
`x-contentful-timestamp` in ms), and/or by a static `Authorization: Bearer` header set
on the webhook. `X-Contentful-Topic` names the event: `Entry.publish` upserts the entry
in the body (`sys` plus locale-keyed `fields`); `Entry.unpublish`, `Entry.delete` and
`Entry.archive` delete (their body is `sys` only); saves of drafts are ignored.
`X-Contentful-Idempotency-Key` is the delivery id.

An entry is keyed by `sys.id`; its version is `sys.updatedAt`. The fields of one locale
are indexed (`locale`, default "en-US"). The Content Delivery API lists published
entries of the configured content types, 1,000 at a time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ragd.errors import SourceError
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery, parse_time, sortable_time, validate_entry_id
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import got, json_object
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected, check_bearer

UPSERTS = frozenset({"publish"})
DELETES = frozenset({"unpublish", "delete", "archive"})
PAGE = 1000
MAX_PAGES = 10_000
_HEX64 = re.compile(r"[0-9a-f]{64}", re.ASCII)
_ALWAYS_SIGNED = ("x-contentful-signed-headers", "x-contentful-timestamp")


def canonical_request(request: WebhookRequest, signed: list[str]) -> bytes:
    """What Contentful signs for a request: the method, the path, the signed headers
    (sorted `name:value` pairs joined by ';') and the body, one per line."""
    names = sorted({name.strip().lower() for name in signed} | set(_ALWAYS_SIGNED))
    values = {
        name: ",".join(names)
        if name == "x-contentful-signed-headers"
        else (request.header(name) or "").strip()
        for name in names
    }
    headers = ";".join(f"{name}:{values[name]}" for name in names)
    head = f"{request.method.upper()}\n{request.path}\n{headers}\n"
    return head.encode() + request.body


def sign(secret: bytes, request: WebhookRequest, signed: list[str]) -> str:
    """The `x-contentful-signature` of a request whose `signed` headers are signed."""
    return hmac.new(secret, canonical_request(request, signed), hashlib.sha256).hexdigest()


def _check_topic(action: str, sys: Mapping[str, Any]) -> None:
    """The topic header must agree with the body, which is what the signature surely
    covers: an unpublish or a delete carries a DeletedEntry, an archive an archived
    Entry, a publish an Entry that is not archived. A replayed body cannot be turned
    into another action."""
    kind = sys.get("type")
    if action in ("unpublish", "delete"):
        agrees = kind == "DeletedEntry"
    elif action == "archive":
        archived = kind == "Entry" and sys.get("archivedVersion") is not None
        agrees = archived or kind == "DeletedEntry"
    else:
        agrees = kind == "Entry" and sys.get("archivedVersion") is None
    if not agrees:
        shown = str(kind)[:32]
        raise WebhookRejected(400, f"topic '{action}' does not match the body's sys.type '{shown}'")


def localized(fields: object, locale: str) -> dict[str, Any]:
    """A webhook's `{"field": {"en-US": value}}` as `{"field": value}` for one locale."""
    if not isinstance(fields, Mapping):
        return {}
    return {
        name: value[locale] if isinstance(value, Mapping) and locale in value else value
        for name, value in fields.items()
    }


def _sys(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    sys = payload.get("sys")
    if not isinstance(sys, Mapping):
        raise WebhookRejected(400, "sys must be an object" + got(sys))
    return sys


def _content_type(sys: Mapping[str, Any]) -> object:
    link = sys.get("contentType")
    inner = link.get("sys") if isinstance(link, Mapping) else None
    return inner.get("id") if isinstance(inner, Mapping) else None


def _key(sys: Mapping[str, Any]) -> str:
    ident = sys.get("id")
    if not isinstance(ident, str):
        raise WebhookRejected(400, "sys.id must be a string" + got(ident))
    return validate_entry_id(ident)


class ContentfulApi:
    """The Content Delivery API of one space environment: its published entries."""

    confirms_deletes = True

    def __init__(
        self,
        name: str,
        environment_url: str,
        client: HttpClient,
        fields: FieldMap,
        *,
        locale: str,
        types: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.base = environment_url.rstrip("/")
        self.client = client
        self.fields = fields
        self.locale = locale
        self.types = types

    def listing(self) -> list[Listed]:
        """Every published entry's id and updatedAt; SourceError on failure."""
        listed: list[Listed] = []
        try:
            for kind in self.types or (None,):
                for page in range(MAX_PAGES):
                    query = {"select": "sys.id,sys.updatedAt", "order": "sys.id"}
                    query |= {"limit": str(PAGE), "skip": str(page * PAGE)}
                    if kind is not None:
                        query["content_type"] = kind
                    answer = self._get("/entries", query)
                    items = answer.get("items")
                    if not isinstance(items, list):
                        raise FetchError("GET /entries: the answer has no items")
                    for item in items:
                        sys = _sys(item) if isinstance(item, Mapping) else {}
                        updated = parse_time(sys.get("updatedAt"), "sys.updatedAt")
                        stamp = None if updated is None else sortable_time(updated)
                        listed.append(Listed(_key(sys), stamp, ""))
                    total = answer.get("total")
                    if isinstance(total, bool) or not isinstance(total, int):
                        # Taking one page for all would delete every entry on the others.
                        raise FetchError("GET /entries: the answer has no total")
                    if (page + 1) * PAGE >= total:
                        break
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        return self.fetch_entry(item.key)

    def fetch_entry(self, key: str) -> Delivery | None:
        """The published entry `key` in the source's locale; None on a 404."""
        try:
            entry = self._get(f"/entries/{urllib.parse.quote(key)}", {"locale": self.locale})
        except FetchError as exc:
            if exc.gone:
                return None
            raise
        sys = _sys(entry)
        fields = entry.get("fields") if isinstance(entry.get("fields"), Mapping) else {}
        updated = parse_time(sys.get("updatedAt"), "sys.updatedAt")
        return self.fields.upsert(key, dict(fields or {}), updated_at=updated, thin_ok=False)

    def _get(self, path: str, query: Mapping[str, str]) -> dict[str, Any]:
        answer = self.client.get_json(f"{self.base}{path}?{urllib.parse.urlencode(query)}")
        if not isinstance(answer, dict):
            raise FetchError(f"GET {path}: the answer is not a JSON object")
        return answer


class ContentfulFormat:
    """Contentful's webhooks for one source: its signing secret and/or a bearer token,
    the field mapping and the locale."""

    name = "contentful"

    def __init__(
        self,
        fields: FieldMap,
        *,
        secret: bytes | None = None,
        token: str | None = None,
        locale: str = "en-US",
        content_types: frozenset[str] | None = None,
        api: ContentfulApi | None = None,
        tolerance: float = 300,
    ) -> None:
        if secret is None and token is None:
            raise ValueError("a Contentful source needs a signing secret or a bearer token")
        self.fields = fields
        self._secret = secret
        self._token = token
        self.locale = locale
        self.content_types = content_types
        self.api = api
        self.tolerance = tolerance

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        if self._token is not None:
            check_bearer(self._token, request.header("authorization"))
        if self._secret is not None:
            self._verify(request, now)
        key = request.header("x-contentful-idempotency-key")
        if key and _HEX64.fullmatch(key):
            return f"contentful:{key}"
        topic = (request.header("x-contentful-topic") or "").encode()
        return body_delivery_id("contentful", topic, request.body)

    def _verify(self, request: WebhookRequest, now: float) -> None:
        assert self._secret is not None
        given = request.header("x-contentful-signature")
        signed = request.header("x-contentful-signed-headers")
        stamp = request.header("x-contentful-timestamp")
        if not given or not signed or not stamp:
            raise WebhookRejected(
                401, "missing x-contentful-signature, -signed-headers or -timestamp header"
            )
        if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 15:
            raise WebhookRejected(401, "x-contentful-timestamp is not milliseconds")
        skew = now - int(stamp) / 1000
        if abs(skew) > self.tolerance:
            raise WebhookRejected(401, f"x-contentful-timestamp is {skew:.0f} s off")
        expected = sign(self._secret, request, signed.split(","))
        if not hmac.compare_digest(given.strip().encode(), expected.encode()):
            raise WebhookRejected(401, "x-contentful-signature does not match this request")

    def parse(self, request: WebhookRequest) -> Parsed:
        topic = request.header("x-contentful-topic") or ""
        entity, _, action = topic.removeprefix("ContentManagement.").partition(".")
        if entity != "Entry":
            return Parsed.ignore(f"topic '{topic[:80]}' is not about an entry")
        if action not in UPSERTS | DELETES:
            return Parsed.ignore(f"'{action[:32]}' changes a draft, not published content")
        payload = json_object(request.body)
        sys = _sys(payload)
        _check_topic(action, sys)
        key = _key(sys)
        kind = _content_type(sys)
        if self.content_types is not None and kind is not None and kind not in self.content_types:
            return Parsed.ignore(f"content type '{str(kind)[:64]}' is not in content_types")
        updated = parse_time(sys.get("updatedAt"), "sys.updatedAt")
        if action in DELETES:
            return Parsed((Delivery("delete", key, updated_at=updated),))
        fields = localized(payload.get("fields"), self.locale)
        delivery = self.fields.upsert(
            key, fields, updated_at=updated, thin_ok=self.fetches_thin_entries
        )
        return Parsed((delivery,))
