"""A WordPress site read through its REST API: published posts and pages.

Owns listing a site's published posts and pages (`/wp-json/wp/v2/posts`, 100 a page,
only `id` and `modified_gmt`) and fetching one whole (`title.rendered`,
`content.rendered`, `link`). Every poll lists every id: that one sweep says both what
changed (a `modified_gmt` newer than the version applied) and what is gone (trashed,
unpublished or deleted posts drop out of the listing, which a `modified_after` query
never shows). An entry is keyed `post:<id>` or `page:<id>`; `modified_gmt` is UTC
without a zone (wordpress-develop class-wp-rest-posts-controller.php).
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ragd.errors import SourceError
from ragd.sources.deliveries import Delivery, parse_time, sortable_time, web_title, web_url
from ragd.sources.http_client import FetchError, HttpClient
from ragd.sources.json_body import decode_json
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected

KINDS = {"post": "posts", "page": "pages"}
PER_PAGE = 100
MAX_PAGES = 10_000


class WordPressSource:
    """The published posts and pages of one WordPress site."""

    confirms_deletes = True

    def __init__(
        self, name: str, site_url: str, client: HttpClient, *, kinds: Sequence[str] = ()
    ) -> None:
        self.name = name
        self.api = site_url.rstrip("/") + "/wp-json/wp/v2"
        self.client = client
        # What the source holds: posts, pages, or (empty) both.
        self.routes = {kind: route for kind, route in KINDS.items() if not kinds or kind in kinds}

    def listing(self) -> list[Listed]:
        """Every published post's and page's key and modified_gmt; SourceError on failure."""
        listed: list[Listed] = []
        try:
            for kind, route in self.routes.items():
                for page in range(1, MAX_PAGES + 1):
                    query = {"_fields": "id,modified_gmt", "per_page": str(PER_PAGE)}
                    query |= {"page": str(page), "orderby": "id", "order": "asc"}
                    posts, pages = self._page(route, query)
                    listed.extend(self._listed(kind, post) for post in posts)
                    # Without X-WP-TotalPages (a proxy may drop it), a short page is the
                    # last; taking one page for all would delete the posts on the others.
                    last = len(posts) < PER_PAGE if pages is None else page >= pages
                    if last or not posts:
                        break
        except (FetchError, WebhookRejected) as exc:
            raise SourceError(f"source '{self.name}': {exc}") from None
        return listed

    def fetch(self, item: Listed) -> Delivery | None:
        """The post or page whole; None when WordPress answers 404 or 410, or 401 (what it
        answers a reader who is not logged in for a post that is trashed, a draft or
        private: rest_forbidden). A 403 is not taken for gone: firewalls answer it."""
        kind, _, ident = item.key.partition(":")
        if kind not in self.routes:
            return None  # indexed before content_types left its kind out: not held now
        query = {"_fields": "id,link,modified_gmt,title,content"}
        url = (
            f"{self.api}/{KINDS[kind]}/{urllib.parse.quote(ident)}?{urllib.parse.urlencode(query)}"
        )
        try:
            post = self.client.get_json(url)
        except FetchError as exc:
            if exc.gone or exc.status == 401:
                return None
            raise
        if not isinstance(post, Mapping):
            raise FetchError(f"GET {self.api}/{KINDS[kind]}/{ident}: not a post object")
        content = _rendered(post.get("content"))
        title = web_title(html.unescape(_rendered(post.get("title"))))
        link = web_url(post.get("link"))
        updated = parse_time(post.get("modified_gmt"), "modified_gmt", naive_is_utc=True)
        return Delivery("upsert", item.key, title, link, updated, content, "text/html")

    def _page(self, route: str, query: Mapping[str, str]) -> tuple[list[Any], int | None]:
        """One page of a listing, and how many pages there are (None: not said)."""
        url = f"{self.api}/{route}?{urllib.parse.urlencode(query)}"
        fetched = self.client.get(url, accept=("application/json",))
        try:
            posts = decode_json(fetched.data)
        except ValueError as exc:
            raise FetchError(f"GET {self.api}/{route}: the answer {exc}") from None
        if not isinstance(posts, list):
            raise FetchError(f"GET {self.api}/{route}: the answer is not a list")
        total = fetched.headers.get("x-wp-totalpages", "")
        return posts, int(total) if total.isascii() and total.isdigit() else None

    def _listed(self, kind: str, post: object) -> Listed:
        if not isinstance(post, Mapping) or not isinstance(post.get("id"), int):
            raise FetchError(f"GET {self.api}/{KINDS[kind]}: a post without an integer id")
        updated = parse_time(post.get("modified_gmt"), "modified_gmt", naive_is_utc=True)
        return Listed(
            f"{kind}:{post['id']}", None if updated is None else sortable_time(updated), ""
        )


def _rendered(value: object) -> str:
    """WordPress's `{"rendered": "..."}` fields."""
    if isinstance(value, Mapping) and isinstance(value.get("rendered"), str):
        return str(value["rendered"])
    return ""
