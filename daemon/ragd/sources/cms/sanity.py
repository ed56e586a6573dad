"""Sanity: its GROQ-powered webhooks as Sanity sends them, and its Query API read back.

Sanity signs a delivery when its webhook has a secret (sanity-io/webhook-toolkit
signature.ts): `sanity-webhook-signature: t=<ms>,v1=<base64url HMAC-SHA256(secret,
"<t>.<body>")>`; a Sanity source must have one. `sanity-operation` says create, update
or delete, `sanity-document-id` which document, and `idempotency-key` is the delivery id.
Sanity retries for up to 30 minutes, so a signature's time may be that old.

The body is the webhook's GROQ projection; ragd expects at least
`{_id, _type, _updatedAt, <title_field>, <body_field>, "operation": delta::operation()}`
(deploy/cms-webhooks.md has the projection to paste), where the body field is a string
or Portable Text. The signature covers the body only, so the document and the operation
are read from it, not from the headers. Drafts (`drafts.*`) and release versions are
ignored. An entry is keyed by its `_id`; its
version is `_updatedAt`. The Query API lists published documents of the configured
types, 1,000 at a time in `_id` order.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import urllib.parse
from collections.abc import Mapping

from ragd.errors import SourceError
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery, parse_time, sortable_time, validate_entry_id
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import got, json_object
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected

_SIGNATURE = re.compile(r"t=([0-9]{1,15})[, ]+v1=([A-Za-z0-9_-]{1,100})", re.ASCII)
_ID_OK = re.compile(r"[A-Za-z0-9._-]{1,128}", re.ASCII)
OPERATIONS = ("create", "update", "delete")
PAGE = 1000
MAX_PAGES = 10_000
# Drafts and content-release versions are not published documents.
UNPUBLISHED_PREFIXES = ("drafts.", "versions.")
_LIST_QUERY = (
    '*[_type in $types && !(_id in path("drafts.**")) && !(_id in path("versions.**"))'
    f" && _id > $after] | order(_id) [0...{PAGE}] {{_id, _updatedAt}}"
)


def sign(secret: bytes, stamp: int, body: bytes) -> str:
    """The `v1` value Sanity sends for a body signed at `stamp` (ms)."""
    mac = hmac.new(secret, str(stamp).encode() + b"." + body, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def _key(ident: object) -> str:
    if not isinstance(ident, str):
        raise WebhookRejected(400, "_id must be a string" + got(ident))
    return validate_entry_id(ident)


class SanityApi:
    """Sanity's Query API for one dataset: published documents of the configured types."""

    confirms_deletes = True

    def __init__(
        self,
        name: str,
        query_url: str,
        client: HttpClient,
        fields: FieldMap,
        types: tuple[str, ...],
    ) -> None:
        self.name = name
        self.query_url = query_url.rstrip("/")
        self.client = client
        self.fields = fields
        self.types = types

    def listing(self) -> list[Listed]:
        """Every published document's id and _updatedAt; SourceError on failure."""
        listed: list[Listed] = []
        after = ""
        try:
            for _ in range(MAX_PAGES):
                result = self._query(_LIST_QUERY, {"types": list(self.types), "after": after})
                if not isinstance(result, list):
                    raise FetchError("the query's result is not a list")
                docs = [d for d in result if isinstance(d, Mapping)]
                for doc in docs:
                    updated = parse_time(doc.get("_updatedAt"), "_updatedAt")
                    stamp = None if updated is None else sortable_time(updated)
                    listed.append(Listed(_key(doc.get("_id")), stamp, ""))
                if len(result) < PAGE or not docs:
                    break
                after = str(docs[-1].get("_id"))
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        return self.fetch_entry(item.key)

    def fetch_entry(self, key: str) -> Delivery | None:
        """The published document `key`; None when there is none."""
        doc = self._query("*[_id == $id][0]", {"id": key})
        if not isinstance(doc, Mapping) or doc.get("_type") not in self.types:
            return None
        updated = parse_time(doc.get("_updatedAt"), "_updatedAt")
        return self.fields.upsert(key, doc, updated_at=updated, thin_ok=False)

    def _query(self, query: str, params: Mapping[str, object]) -> object:
        arguments = {"query": query, "perspective": "published"}
        arguments |= {f"${name}": json.dumps(value) for name, value in params.items()}
        answer = self.client.get_json(f"{self.query_url}?{urllib.parse.urlencode(arguments)}")
        if not isinstance(answer, dict) or "result" not in answer:
            raise FetchError("GET the Query API: the answer has no 'result'")
        return answer["result"]


class SanityFormat:
    """Sanity's webhooks for one source: the webhook's secret, and the field mapping."""

    name = "sanity"

    def __init__(
        self,
        secret: bytes,
        fields: FieldMap,
        *,
        content_types: frozenset[str] | None = None,
        api: SanityApi | None = None,
        tolerance: float = 35 * 60,
    ) -> None:
        self._secret = secret
        self.fields = fields
        self.content_types = content_types
        self.api = api
        self.tolerance = tolerance

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        header = request.header("sanity-webhook-signature")
        if not header:
            raise WebhookRejected(
                401, "missing sanity-webhook-signature header (give the webhook a secret)"
            )
        match = _SIGNATURE.fullmatch(header.strip())
        if match is None:
            raise WebhookRejected(401, "sanity-webhook-signature is not 't=<ms>,v1=<signature>'")
        stamp, given = int(match.group(1)), match.group(2)
        skew = now - stamp / 1000
        if abs(skew) > self.tolerance:
            raise WebhookRejected(401, f"the sanity-webhook-signature time is {skew:.0f} s off")
        if not hmac.compare_digest(sign(self._secret, stamp, request.body), given):
            raise WebhookRejected(401, "sanity-webhook-signature does not match this body")
        key = request.header("idempotency-key")
        if key and _ID_OK.fullmatch(key):
            return f"sanity:{key}"
        return body_delivery_id("sanity", request.body, str(stamp).encode())

    def parse(self, request: WebhookRequest) -> Parsed:
        # The signature covers the body, not the headers: what is done to which document
        # is read from the body, so a replayed body cannot be aimed elsewhere.
        payload = json_object(request.body)
        header = request.header("sanity-operation")
        operation = payload.get("operation") or header
        if header and header != operation:
            raise WebhookRejected(400, "sanity-operation does not match the body's operation")
        if operation not in OPERATIONS:
            raise WebhookRejected(400, "sanity-operation must be create, update or delete")
        key = _key(payload.get("_id"))
        named = request.header("sanity-document-id")
        if named and named != key:
            raise WebhookRejected(400, "sanity-document-id does not match the body's _id")
        if key.startswith(UNPUBLISHED_PREFIXES):
            return Parsed.ignore("a draft or a release version is not published content")
        kind = payload.get("_type")
        if self.content_types is not None and kind is not None and kind not in self.content_types:
            return Parsed.ignore(f"type '{str(kind)[:64]}' is not in content_types")
        updated = parse_time(payload.get("_updatedAt"), "_updatedAt")
        if operation == "delete":
            return Parsed((Delivery("delete", key, updated_at=updated),))
        return Parsed(
            (
                self.fields.upsert(
                    key, payload, updated_at=updated, thin_ok=self.fetches_thin_entries
                ),
            )
        )
