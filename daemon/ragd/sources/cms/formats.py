"""What a webhook format is: the request it reads, what it makes of it, and the read API
behind it.

Owns `WebhookRequest` (a delivery as the HTTP layer received it: exact body bytes,
lower-case header names, the path and query it was sent to), `Parsed` (the entries a
delivery upserts or deletes, or why it is ignored), and the protocols each CMS module
implements: `WebhookFormat` (authenticate, then parse) and `EntryReader` (fetch one
entry back from the CMS's read API, for a delivery that carried too little). Pure types.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ragd.sources.deliveries import Delivery


@dataclass(frozen=True)
class WebhookRequest:
    """One delivery as received: `headers` with lower-case names, `body` byte for byte."""

    headers: Mapping[str, str]
    body: bytes
    method: str = "POST"
    path: str = "/"
    query: Mapping[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        """A header's value by its lower-case name."""
        return self.headers.get(name)


@dataclass(frozen=True)
class Parsed:
    """What a delivery does: upserts and deletes (a thin upsert has no content: the
    entry is fetched back), or nothing, with the reason (a draft, an event or a content
    type ragd does not index)."""

    deliveries: tuple[Delivery, ...] = ()
    ignored: str | None = None

    @classmethod
    def ignore(cls, reason: str) -> Parsed:
        return cls(ignored=reason)


class WebhookFormat(Protocol):
    """A CMS's webhooks: who may send them, and what they say."""

    name: str

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        """The delivery id (the idempotency key) of an authentic delivery; WebhookRejected
        (401) otherwise, with a one-line message that echoes no secret."""
        ...

    def parse(self, request: WebhookRequest) -> Parsed:
        """The entries an authentic delivery changes; WebhookRejected(400) naming the
        field when its body is not what this CMS sends."""
        ...

    @property
    def fetches_thin_entries(self) -> bool:
        """Whether an upsert without content can be completed from a read API."""
        ...


class EntryReader(Protocol):
    """Reads one entry back from a CMS (or an entry URL) by its document key."""

    def fetch_entry(self, key: str) -> Delivery | None:
        """The entry now, or None when the CMS says it no longer exists (or is no longer
        published); FetchError or WebhookRejected when it cannot be read."""
        ...


def body_delivery_id(prefix: str, *parts: bytes) -> str:
    """A delivery id for a sender that sends none: a hash of what identifies the
    delivery (its body, and its timestamp where it has one)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return f"{prefix}:sha256:{digest.hexdigest()}"
