"""Ghost: its webhooks as Ghost sends them, and its Content API read back.

Ghost signs a delivery when its webhook has a secret (TryGhost/Ghost webhook-trigger.js):
`X-Ghost-Signature: sha256=<hex HMAC-SHA256(secret, body + t)>, t=<ms>`; without a
secret it sends no signature, so a Ghost source must have one. The body is
`{"post"|"page": {"current": {...}, "previous": {...}}}` (serialize.js); Ghost 6 adds
an `event` field, Ghost 5 names no event: one Ghost webhook exists per event, so the
event may travel in the URL (`?event=post.unpublished`), which wins. `*.deleted` and
`*.unpublished` delete; otherwise a current post that is published and public is
upserted from its `html`, and anything else (a draft, a members-only post, an empty
`current`) deletes. Ghost deletes a webhook that answers 410: nothing here answers 410.

An entry is keyed `post:<id>` or `page:<id>`; its version is `updated_at`. The Content
API (`/ghost/api/content/posts/?key=...`, 100 a page) lists only published posts, and
the reconcile asks for the public ones (`filter=visibility:public`), those it indexes.
A source holds posts, pages or both (`kinds`, from content_types): the reconcile lists
only those, and deliveries about the other kind are ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ragd.errors import SourceError
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import (
    Delivery,
    parse_time,
    sortable_time,
    validate_entry_id,
    web_title,
    web_url,
)
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import got, json_object
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected

KINDS = ("post", "page")
_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64}),\s*t=([0-9]{1,15})", re.ASCII)
PAGE_LIMIT = 100
MAX_PAGES = 10_000


def _upsert(kind: str, post: Mapping[str, Any], *, thin_ok: bool) -> Delivery:
    key = _key(kind, post.get("id"))
    updated_at = parse_time(post.get("updated_at"), f"{kind}.updated_at")
    title, url = web_title(post.get("title")), web_url(post.get("url"))
    html = post.get("html")
    if isinstance(html, str) and html.strip():
        return Delivery("upsert", key, title, url, updated_at, html, "text/html")
    # A webhook's post always holds `html` (null for an empty post): only a post that
    # left it out is fetched back.
    if thin_ok and "html" not in post:
        return Delivery("upsert", key, title, url, updated_at)
    raise WebhookRejected(400, f"{kind}.current.html is missing or empty")


def _key(kind: str, ident: object) -> str:
    if not isinstance(ident, str):
        raise WebhookRejected(400, f"{kind}.id must be a string" + got(ident))
    return validate_entry_id(f"{kind}:{ident}")


def _published(post: Mapping[str, Any]) -> bool:
    # Members-only and paid posts are not public text: the Content API gates them too.
    # The Content API serves published posts only, and leaves `status` out of them
    # (its output serializer, clean.js); a webhook's post carries it.
    return bool(
        post.get("status", "published") == "published"
        and post.get("visibility", "public") == "public"
    )


class GhostApi:
    """Ghost's Content API for one site: its published, public posts and pages."""

    confirms_deletes = True

    def __init__(
        self,
        name: str,
        site_url: str,
        key: str,
        client: HttpClient,
        *,
        kinds: Sequence[str] = KINDS,
    ) -> None:
        self.name = name
        self.base = site_url.rstrip("/") + "/ghost/api/content"
        self._key = key
        self.client = client
        self.kinds = tuple(kinds)  # what the source holds: posts, pages, or both

    def listing(self) -> list[Listed]:
        """Every published post's and page's key and updated_at; SourceError on failure."""
        listed: list[Listed] = []
        try:
            for kind in self.kinds:
                page: int | None = 1
                while page is not None and page <= MAX_PAGES:
                    answer = self._get(
                        f"/{kind}s/",
                        {"fields": "id,updated_at", "filter": "visibility:public"}
                        | {"limit": str(PAGE_LIMIT), "page": str(page)},
                    )
                    for post in answer.get(f"{kind}s") or []:
                        if isinstance(post, Mapping):
                            version = parse_time(post.get("updated_at"), "updated_at")
                            stamp = None if version is None else sortable_time(version)
                            listed.append(Listed(_key(kind, post.get("id")), stamp, ""))
                    meta = answer.get("meta")
                    pagination = meta.get("pagination") if isinstance(meta, Mapping) else None
                    if not isinstance(pagination, Mapping):
                        # Taking one page for all would delete every post on the others.
                        raise FetchError(f"GET /{kind}s/: the answer has no meta.pagination")
                    following = pagination.get("next")
                    page = following if isinstance(following, int) else None
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        return self.fetch_entry(item.key)

    def fetch_entry(self, key: str) -> Delivery | None:
        """The post or page `key` with its html; None when Ghost no longer publishes it."""
        kind, _, ident = key.partition(":")
        if kind not in KINDS:
            raise FetchError(f"'{key}' is not a Ghost post or page key")
        if kind not in self.kinds:
            return None  # indexed before content_types left its kind out: not held now
        try:
            answer = self._get(f"/{kind}s/{urllib.parse.quote(ident)}/", {"formats": "html"})
        except FetchError as exc:
            if exc.gone:
                return None
            raise
        posts = answer.get(f"{kind}s")
        post = posts[0] if isinstance(posts, list) and posts else None
        if not isinstance(post, Mapping) or not _published(post):
            return None
        return _upsert(kind, post, thin_ok=False)

    def _get(self, path: str, query: Mapping[str, str]) -> dict[str, Any]:
        url = f"{self.base}{path}?{urllib.parse.urlencode({'key': self._key} | dict(query))}"
        answer = self.client.get_json(url)
        if not isinstance(answer, dict):
            raise FetchError(f"GET {self.base}{path}: the answer is not a JSON object")
        return answer


class GhostFormat:
    """Ghost's webhooks for one source: the webhook's secret."""

    name = "ghost"

    def __init__(
        self,
        secret: bytes,
        *,
        api: GhostApi | None = None,
        tolerance: float = 300,
        kinds: Sequence[str] = KINDS,
    ) -> None:
        self._secret = secret
        self.api = api
        self.tolerance = tolerance
        self.kinds = tuple(kinds)

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        header = request.header("x-ghost-signature")
        if not header:
            raise WebhookRejected(
                401, "missing X-Ghost-Signature header (give the Ghost webhook a secret)"
            )
        match = _SIGNATURE.fullmatch(header.strip())
        if match is None:
            raise WebhookRejected(401, "X-Ghost-Signature is not 'sha256=<hex>, t=<ms>'")
        given, stamp = match.groups()
        skew = now - int(stamp) / 1000
        if abs(skew) > self.tolerance:
            raise WebhookRejected(401, f"the X-Ghost-Signature time is {skew:.0f} s off")
        expected = hmac.new(self._secret, request.body + stamp.encode(), hashlib.sha256)
        if not hmac.compare_digest(bytes.fromhex(given), expected.digest()):
            raise WebhookRejected(401, "X-Ghost-Signature does not match this body and secret")
        return body_delivery_id("ghost", request.body, stamp.encode())

    def parse(self, request: WebhookRequest) -> Parsed:
        payload = json_object(request.body)
        kinds = [k for k in KINDS if k in payload]
        if len(kinds) != 1:
            if any(k in payload for k in ("tag", "member", "site")):
                return Parsed.ignore("not a post or a page")
            raise WebhookRejected(400, "the body must hold one of 'post' or 'page'")
        kind = kinds[0]
        if kind not in self.kinds:
            return Parsed.ignore(f"a {kind} is not in the source's content_types")
        wrapper = payload[kind]
        if not isinstance(wrapper, dict):
            raise WebhookRejected(400, f"{kind} must be an object" + got(wrapper))
        current, previous = wrapper.get("current") or {}, wrapper.get("previous") or {}
        if not isinstance(current, dict) or not isinstance(previous, dict):
            raise WebhookRejected(400, f"{kind}.current and {kind}.previous must be objects")
        event = request.query.get("event") or payload.get("event") or ""
        if not isinstance(event, str):
            raise WebhookRejected(400, "event must be a string" + got(event))
        gone = event.endswith((".deleted", ".unpublished")) or not _published(current)
        if gone:
            ident = current.get("id", previous.get("id"))
            updated = parse_time(current.get("updated_at"), f"{kind}.updated_at")
            return Parsed((Delivery("delete", _key(kind, ident), updated_at=updated),))
        return Parsed((_upsert(kind, current, thin_ok=self.fetches_thin_entries),))
