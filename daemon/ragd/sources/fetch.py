"""Fetching an entry of ragd's own webhook format when a delivery carries only its id.

Owns the GET of a source's `fetch_url` (with `{id}` filled in, URL-quoted) and what its
answer means: Markdown, HTML or plain text in UTF-8 is the entry's content; a 404 or 410
says the entry is gone. Time-outs, size caps and redirects are ragd.sources.http_client's.
Runs in the writer thread, never in the webhook request path, so a slow CMS delays
indexing, not the CMS's delivery.
"""

from __future__ import annotations

import urllib.parse

from ragd.sources.deliveries import Delivery
from ragd.sources.http_client import FetchError, HttpClient

ACCEPTED_TYPES = {
    "text/markdown": "text/markdown",
    "text/x-markdown": "text/markdown",
    "text/html": "text/html",
    "text/plain": "text/plain",
}


class EntryFetcher:
    """GETs entries from one CMS by `fetch_url`, through the source's HTTP client."""

    def __init__(self, url_template: str, client: HttpClient) -> None:
        self.url_template = url_template
        self.client = client

    def url_for(self, entry_id: str) -> str:
        """The entry's URL: the template with `{id}` replaced by the quoted id."""
        return self.url_template.replace("{id}", urllib.parse.quote(entry_id, safe=""))

    def fetch_entry(self, key: str) -> Delivery | None:
        """The entry's content; None when the CMS answers 404 or 410."""
        url = self.url_for(key)
        try:
            fetched = self.client.get(url, accept=ACCEPTED_TYPES)
        except FetchError as exc:
            if exc.gone:
                return None
            raise
        try:
            text = fetched.data.decode("utf-8")
        except UnicodeDecodeError:
            raise FetchError(f"GET {url}: the entry is not UTF-8 text") from None
        kind = ACCEPTED_TYPES[fetched.content_type]
        return Delivery("upsert", key, url=url, content=text, content_type=kind)
