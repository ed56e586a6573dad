"""Fetching a CMS entry's content when a webhook delivery carries only its id.

Owns the HTTP GET of a source's `fetch_url` (with `{id}` filled in, URL-quoted), its
time-out, size cap and content-type check. Runs in the writer thread, never in the
webhook request path, so a slow CMS delays indexing, not the CMS's delivery.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

from ragd.errors import DocumentError

ACCEPTED_TYPES = {
    "text/markdown": "text/markdown",
    "text/x-markdown": "text/markdown",
    "text/html": "text/html",
    "text/plain": "text/plain",
}


@dataclass(frozen=True)
class EntryFetcher:
    """GETs entries from one CMS. `headers` hold resolved values (tokens): never log them."""

    url_template: str
    timeout: float = 10.0
    max_bytes: int = 5_000_000
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def url_for(self, entry_id: str) -> str:
        """The entry's URL: the template with `{id}` replaced by the quoted id."""
        return self.url_template.replace("{id}", urllib.parse.quote(entry_id, safe=""))

    def fetch(self, entry_id: str) -> tuple[bytes, str]:
        """The entry's bytes and content type; DocumentError with a one-line reason otherwise."""
        url = self.url_for(entry_id)
        # The config only admits http(s) fetch_url templates, so no file: or custom schemes.
        request = urllib.request.Request(url, headers=dict(self.headers), method="GET")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # noqa: S310
                kind = reply.headers.get_content_type()
                if kind not in ACCEPTED_TYPES:
                    raise DocumentError(f"fetch {url}: unsupported content type '{kind}'")
                data = reply.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise DocumentError(f"fetch {url}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DocumentError(f"fetch {url}: {reason}") from exc
        if len(data) > self.max_bytes:
            raise DocumentError(f"fetch {url}: entry exceeds {self.max_bytes} bytes")
        return data, ACCEPTED_TYPES[kind]
