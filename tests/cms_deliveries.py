"""Deliveries shaped and signed exactly as each CMS sends them, for unit and integration tests.

Each sender below builds the body and headers its CMS's own code builds, and signs the
way that code signs; the comment on each names the file the shape was read from. None
of them uses ragd's code to sign: a signature ragd computed would only show that ragd
agrees with itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def compact(payload: object) -> bytes:
    """JSON as JavaScript's JSON.stringify writes it (no spaces): what every one of
    these CMSes (all Node.js) puts on the wire. Like it, a lone surrogate is written as
    its escape (`\\ud800`), every other character as itself."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()


def iso(moment: float) -> str:
    """A time as JavaScript's Date.toISOString writes it."""
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment))
        + f".{int(moment * 1000) % 1000:03d}Z"
    )


@dataclass
class Sent:
    """A delivery as it goes over the wire: the body, the headers, and a query string
    the CMS's webhook URL carries (Ghost's per-event URLs)."""

    body: bytes
    headers: dict[str, str]
    query: str = ""


@dataclass
class Entry:
    """What the tests publish: an id, a title, a paragraph of text, and when."""

    ident: str
    title: str
    text: str
    updated: float = field(default_factory=time.time)


class Sender(Protocol):
    name: str

    def publish(self, entry: Entry) -> Sent: ...
    def remove(self, entry: Entry) -> Sent: ...
    def key(self, entry: Entry) -> str: ...
    def forged(self, sent: Sent) -> Sent: ...
    def source_toml(self) -> str: ...
    def environ(self) -> dict[str, str]: ...


# -- Ghost: TryGhost/Ghost ghost/core/core/server/services/webhooks/webhook-trigger.js
# (headers, X-Ghost-Signature) and serialize.js ({post: {current, previous}}).


@dataclass
class Ghost:
    name: str = "ghost"
    secret: str = "ghost-webhook-secret"

    def _send(
        self,
        payload: dict[str, Any],
        *,
        event: str,
        secret: str | None = None,
        event_in_body: bool = False,
    ) -> Sent:
        if event_in_body:  # Ghost 6: the body names its event (measured against 6.65)
            payload = {**payload, "event": event}
        body = compact(payload)
        ts = str(int(time.time() * 1000))  # Date.now()
        key = (secret or self.secret).encode()
        digest = hmac.new(key, body + ts.encode(), hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "Content-Version": "v5.96",
            "User-Agent": "Ghost/5.96.0 (https://github.com/TryGhost/Ghost)",
            "X-Ghost-Signature": f"sha256={digest}, t={ts}",
        }
        return Sent(body, headers, query="" if event_in_body else f"event={event}")

    def post(self, entry: Entry) -> dict[str, Any]:
        return {
            "id": entry.ident,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, entry.ident)),
            "title": entry.title,
            "slug": entry.ident,
            "html": f"<h2>{entry.title}</h2><p>{entry.text}</p>",
            "status": "published",
            "visibility": "public",
            "url": f"https://blog.example.com/{entry.ident}/",
            "created_at": iso(entry.updated - 60),
            "updated_at": iso(entry.updated),
            "published_at": iso(entry.updated),
            "tags": [],
            "authors": [{"id": "1", "name": "Joe Bloggs", "slug": "joe"}],
        }

    def publish(self, entry: Entry) -> Sent:
        payload = {"post": {"current": self.post(entry), "previous": {"status": "draft"}}}
        return self._send(payload, event="post.published")

    def remove(self, entry: Entry) -> Sent:
        # post.deleted: current is {}, previous holds the post's last attributes.
        return self._send(
            {"post": {"current": {}, "previous": self.post(entry)}}, event="post.deleted"
        )

    def deleted_in_ghost6(self, entry: Entry) -> list[Sent]:
        """Deleting a published post in Ghost 6.65 (measured; see
        ../shared/research/integrations.md): `post.unpublished`, the post now a
        draft, then `post.deleted`; each body names its event, the URL does not."""
        draft = self.post(entry) | {"status": "draft"}
        unpublished = {"post": {"current": draft, "previous": {"status": "published"}}}
        deleted = {"post": {"current": {}, "previous": draft}}
        return [
            self._send(unpublished, event="post.unpublished", event_in_body=True),
            self._send(deleted, event="post.deleted", event_in_body=True),
        ]

    def key(self, entry: Entry) -> str:
        return f"post:{entry.ident}"

    def forged(self, sent: Sent) -> Sent:
        payload = json.loads(sent.body)
        return self._send(payload, event=sent.query.split("=", 1)[1], secret="not-the-secret")

    def source_toml(self) -> str:
        return 'format = "ghost"\nsecret_env = "RAGD_TEST_GHOST_SECRET"\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_GHOST_SECRET": self.secret}


# -- Strapi v5: packages/core/core/src/services/webhook-runner.ts (headers: defaultHeaders,
# then X-Strapi-Event and Content-Type; no signature) and document-service/events.ts
# ({event, createdAt, model, uid, entry}); blocks from the blocks validator.


@dataclass
class Strapi:
    name: str = "strapi"
    token: str = "strapi-static-token"

    def _send(self, event: str, entry: dict[str, Any], *, token: str | None = None) -> Sent:
        payload = {
            "event": event,
            "createdAt": iso(time.time()),
            "model": "article",
            "uid": "api::article.article",
            "entry": entry,
        }
        headers = {
            "Authorization": f"Bearer {token or self.token}",
            "X-Strapi-Event": event,
            "Content-Type": "application/json",
        }
        return Sent(compact(payload), headers)

    def row(self, entry: Entry, *, published: bool = True) -> dict[str, Any]:
        return {
            "id": 48,
            "documentId": entry.ident,
            "title": entry.title,
            "slug": entry.ident,
            "content": [
                {
                    "type": "heading",
                    "level": 2,
                    "children": [{"type": "text", "text": entry.title}],
                },
                {"type": "paragraph", "children": [{"type": "text", "text": entry.text}]},
            ],
            "createdAt": iso(entry.updated - 60),
            "updatedAt": iso(entry.updated),
            "publishedAt": iso(entry.updated) if published else None,
            "locale": "en",
        }

    def publish(self, entry: Entry) -> Sent:
        return self._send("entry.publish", self.row(entry))

    def draft(self, entry: Entry) -> Sent:
        return self._send("entry.update", self.row(entry, published=False))

    def remove(self, entry: Entry) -> Sent:
        return self._send("entry.unpublish", self.row(entry))

    # Strapi 5.54, measured (see ../shared/research/integrations.md): a publish sends
    # two events and a delete two, each body carrying the full entry.
    def published_in_strapi5(self, entry: Entry) -> list[Sent]:
        """`entry.update` then `entry.publish`, both of the published entry."""
        return [self._send("entry.update", self.row(entry)), self.publish(entry)]

    def deleted_in_strapi5(self, entry: Entry) -> list[Sent]:
        """`entry.unpublish` then `entry.delete`, both of the full entry."""
        return [self.remove(entry), self._send("entry.delete", self.row(entry))]

    def key(self, entry: Entry) -> str:
        return f"article:{entry.ident}:en"

    def forged(self, sent: Sent) -> Sent:
        return Sent(sent.body, {**sent.headers, "Authorization": "Bearer guessed"})

    def source_toml(self) -> str:
        return 'format = "strapi"\nbearer_token_env = "RAGD_TEST_STRAPI_TOKEN"\nlocales = ["en"]\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_STRAPI_TOKEN": self.token}


# -- Contentful: contentful/node-apps-toolkit src/requests/sign-request.ts (the canonical
# request and its HMAC), typings/event-payloads.ts (publish: sys + locale-keyed fields;
# unpublish: a DeletedEntry, sys only); headers from Contentful's webhook docs.


def contentful_signature(
    secret: str, method: str, path: str, headers: dict[str, str], body: bytes
) -> str:
    """node-apps-toolkit's `signRequest`: lower-cased, trimmed headers, sorted by name."""
    normalized = {k.lower().strip(): v.strip() for k, v in headers.items()}
    names = sorted(normalized)
    normalized["x-contentful-signed-headers"] = ",".join(names)
    pairs = ";".join(f"{name}:{normalized[name]}" for name in names)
    message = "\n".join([method, path, pairs, body.decode()])
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


@dataclass
class Contentful:
    name: str = "contentful"
    secret: str = "c" * 64  # Contentful's signing secrets are 64 characters
    path: str = "/v1/webhooks/contentful"

    def _send(self, topic: str, payload: dict[str, Any], *, secret: str | None = None) -> Sent:
        body = compact(payload)
        signed = {
            "X-Contentful-Topic": topic,
            "X-Contentful-Webhook-Name": "ragd",
            "Content-Type": "application/vnd.contentful.management.v1+json",
            "X-Contentful-Idempotency-Key": hashlib.sha256(body + topic.encode()).hexdigest(),
            "x-contentful-timestamp": str(int(time.time() * 1000)),
        }
        names = [*(k.lower() for k in signed), "x-contentful-signed-headers"]
        signed["x-contentful-signed-headers"] = ",".join(sorted(names))
        signature = contentful_signature(secret or self.secret, "POST", self.path, signed, body)
        return Sent(body, {**signed, "x-contentful-signature": signature})

    def sys(self, entry: Entry, kind: str) -> dict[str, Any]:
        link = {"sys": {"type": "Link", "linkType": "ContentType", "id": "article"}}
        return {
            "type": kind,
            "id": entry.ident,
            "space": {"sys": {"type": "Link", "linkType": "Space", "id": "yadj1kx9rmg0"}},
            "environment": {"sys": {"id": "master", "type": "Link", "linkType": "Environment"}},
            "contentType": link,
            "revision": 3,
            "createdAt": iso(entry.updated - 60),
            "updatedAt": iso(entry.updated),
        }

    def publish(self, entry: Entry) -> Sent:
        document = {
            "nodeType": "document",
            "data": {},
            "content": [
                {"nodeType": "heading-2", "data": {}, "content": [
                    {"nodeType": "text", "value": entry.title, "marks": [], "data": {}}]},
                {"nodeType": "paragraph", "data": {}, "content": [
                    {"nodeType": "text", "value": entry.text, "marks": [], "data": {}}]},
            ],
        }  # fmt: skip
        payload = {
            "metadata": {"tags": [], "concepts": []},
            "fields": {"title": {"en-US": entry.title}, "content": {"en-US": document}},
            "sys": {**self.sys(entry, "Entry"), "publishedVersion": 4},
        }
        return self._send("ContentManagement.Entry.publish", payload)

    def remove(self, entry: Entry) -> Sent:
        payload = {"sys": {**self.sys(entry, "DeletedEntry"), "deletedAt": iso(entry.updated)}}
        return self._send("ContentManagement.Entry.unpublish", payload)

    def key(self, entry: Entry) -> str:
        return entry.ident

    def forged(self, sent: Sent) -> Sent:
        return self._send(
            sent.headers["X-Contentful-Topic"], json.loads(sent.body), secret="f" * 64
        )

    def source_toml(self) -> str:
        return 'format = "contentful"\nsecret_env = "RAGD_TEST_CONTENTFUL_SECRET"\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_CONTENTFUL_SECRET": self.secret}


# -- Sanity: sanity-io/webhook-toolkit src/signature.ts (t=<ms>,v1=<base64url HMAC of
# "<t>.<body>">); headers from Sanity's webhook documentation; the body is the
# projection deploy/cms-webhooks.md gives, with Portable Text (portabletext/types).


@dataclass
class Sanity:
    name: str = "sanity"
    secret: str = "sanity-webhook-secret"

    def _send(
        self,
        operation: str,
        document_id: str,
        payload: dict[str, Any],
        *,
        secret: str | None = None,
    ) -> Sent:
        body = compact(payload)
        ts = int(time.time() * 1000)
        mac = hmac.new((secret or self.secret).encode(), f"{ts}.".encode() + body, hashlib.sha256)
        signature = base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()
        headers = {
            "content-type": "application/json",
            "user-agent": "Sanity.io webhook delivery",
            "idempotency-key": f"msg-{uuid.uuid4().hex}",
            "sanity-transaction-id": uuid.uuid4().hex,
            "sanity-transaction-time": iso(time.time()),
            "sanity-dataset": "production",
            "sanity-document-id": document_id,
            "sanity-project-id": "abc123",
            "sanity-webhook-id": "hook1",
            "sanity-operation": operation,
            "sanity-webhook-signature": f"t={ts},v1={signature}",
        }
        return Sent(body, headers)

    def document(self, entry: Entry) -> dict[str, Any]:
        return {
            "_id": entry.ident,
            "_type": "post",
            "_updatedAt": iso(entry.updated),
            "title": entry.title,
            "slug": {"_type": "slug", "current": entry.ident},
            "content": [
                {"_type": "block", "_key": "a1", "style": "h2", "markDefs": [],
                 "children": [{"_type": "span", "text": entry.title, "marks": []}]},
                {"_type": "block", "_key": "a2", "style": "normal", "markDefs": [],
                 "children": [{"_type": "span", "text": entry.text, "marks": []}]},
            ],
            "operation": "update",
        }  # fmt: skip

    def publish(self, entry: Entry) -> Sent:
        return self._send("update", entry.ident, self.document(entry))

    def remove(self, entry: Entry) -> Sent:
        return self._send("delete", entry.ident, {**self.document(entry), "operation": "delete"})

    def key(self, entry: Entry) -> str:
        return entry.ident

    def forged(self, sent: Sent) -> Sent:
        operation = sent.headers["sanity-operation"]
        return self._send(
            operation, sent.headers["sanity-document-id"], json.loads(sent.body), secret="wrong"
        )

    def source_toml(self) -> str:
        return 'format = "sanity"\nsecret_env = "RAGD_TEST_SANITY_SECRET"\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_SANITY_SECRET": self.secret}


# -- Directus: a Flow's "Webhook / Request URL" operation with body {{$trigger}}
# (api/src/flows.ts: $trigger is the event's meta: {event, payload, key|keys,
# collection}); Directus signs nothing, the Flow sends a static Authorization header.


@dataclass
class Directus:
    name: str = "directus"
    token: str = "directus-static-token"

    def _send(self, payload: dict[str, Any], *, token: str | None = None) -> Sent:
        headers = {
            "Authorization": f"Bearer {token or self.token}",
            "Content-Type": "application/json",
        }
        return Sent(compact(payload), headers)

    def publish(self, entry: Entry) -> Sent:
        item = {
            "id": entry.ident,
            "title": entry.title,
            "content": f"## {entry.title}\n\n{entry.text}\n",
            "date_updated": iso(entry.updated),
        }
        return self._send(
            {
                "event": "articles.items.create",
                "payload": item,
                "key": entry.ident,
                "collection": "articles",
            }
        )

    def update(self, keys: list[str], changed: dict[str, Any]) -> Sent:
        """A bulk edit: one items.update naming every key, with the fields that changed."""
        return self._send(
            {
                "event": "articles.items.update",
                "payload": changed,
                "keys": keys,
                "collection": "articles",
            }
        )

    def remove(self, entry: Entry) -> Sent:
        keys = [entry.ident]
        return self._send(
            {
                "event": "articles.items.delete",
                "payload": keys,
                "keys": keys,
                "collection": "articles",
            }
        )

    def key(self, entry: Entry) -> str:
        return f"articles:{entry.ident}"

    def forged(self, sent: Sent) -> Sent:
        return Sent(sent.body, {**sent.headers, "Authorization": "Bearer guessed"})

    def source_toml(self) -> str:
        return 'format = "directus"\nbearer_token_env = "RAGD_TEST_DIRECTUS_TOKEN"\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_DIRECTUS_TOKEN": self.token}


# -- ragd's own format, signed per Standard Webhooks (standard-webhooks/spec): the
# signature is computed here from the specification, not with ragd's signer.


@dataclass
class Native:
    name: str = "ragd"
    secret: bytes = b"native-webhook-secret"

    def _send(self, payload: dict[str, Any], *, secret: bytes | None = None) -> Sent:
        body = compact(payload)
        msg_id, ts = f"msg_{uuid.uuid4().hex}", str(int(time.time()))
        mac = hmac.new(secret or self.secret, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256)
        signature = "v1," + base64.b64encode(mac.digest()).decode()
        headers = {
            "Content-Type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": ts,
            "webhook-signature": signature,
        }
        return Sent(body, headers)

    def publish(self, entry: Entry) -> Sent:
        return self._send({
            "event": "upsert", "id": entry.ident, "title": entry.title,
            "url": f"https://cms.example.com/{entry.ident}", "updated_at": iso(entry.updated),
            "content": f"# {entry.title}\n\n{entry.text}\n",
        })  # fmt: skip

    def remove(self, entry: Entry) -> Sent:
        return self._send({"event": "delete", "id": entry.ident, "updated_at": iso(entry.updated)})

    def key(self, entry: Entry) -> str:
        return entry.ident

    def forged(self, sent: Sent) -> Sent:
        return self._send(json.loads(sent.body), secret=b"not-the-secret")

    def source_toml(self) -> str:
        return 'secret_env = "RAGD_TEST_NATIVE_SECRET"\n'

    def environ(self) -> dict[str, str]:
        return {"RAGD_TEST_NATIVE_SECRET": self.secret.decode()}


SENDERS: tuple[Sender, ...] = (Native(), Ghost(), Strapi(), Contentful(), Sanity(), Directus())
