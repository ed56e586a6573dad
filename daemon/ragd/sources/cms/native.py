"""ragd's own webhook format, for any sender that speaks it (a CMS plugin, a script).

Owns wrapping the format of ragd.sources.deliveries (`{"event": "upsert"|"delete", "id",
"title", "url", "updated_at", "content", "content_type"}`) and the schemes of
ragd.sources.webhooks (Standard Webhooks, GitHub's, or a bearer token alone) in the
`WebhookFormat` protocol, with `fetch_url` as the way back to an entry that came
without content.
"""

from __future__ import annotations

from ragd.sources.cms.formats import Parsed, WebhookRequest
from ragd.sources.deliveries import parse_delivery
from ragd.sources.fetch import EntryFetcher
from ragd.sources.webhooks import WebhookAuth, authenticate


class NativeFormat:
    """ragd's payload format, authenticated as the source's `signature` says."""

    name = "ragd"

    def __init__(self, auth: WebhookAuth, *, fetcher: EntryFetcher | None = None) -> None:
        self.auth = auth
        self.api = fetcher

    @property
    def fetches_thin_entries(self) -> bool:
        return self.api is not None

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        return authenticate(self.auth, request.headers, request.body, now=now)

    def parse(self, request: WebhookRequest) -> Parsed:
        return Parsed((parse_delivery(request.body),))
