"""Tests for ragd.sources.wordpress against a local server that answers as WordPress's
REST API does: id sweeps across pages, keys, one post fetched whole, deleted posts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from ragd.errors import SourceError
from ragd.sources.http_client import FetchError, HttpClient, Limits
from ragd.sources.remote import Listed
from ragd.sources.wordpress import WordPressSource
from tests.local_http import LocalServer, Reply, Seen, local_server

JSON = "application/json; charset=UTF-8"
API = "/blog/wp-json/wp/v2"
_ONE = re.compile(rf"{API}/(posts|pages)/([0-9]+)")


@dataclass
class FakeWordPress:
    """WordPress's posts and pages routes: `_fields`, `per_page` (at most 100), `page`
    with X-WP-Total and X-WP-TotalPages, and one item by id; 400 past the last page and
    404 for an unknown id, as WordPress answers."""

    items: dict[str, dict[int, dict[str, object]]] = field(
        default_factory=lambda: {"posts": {}, "pages": {}}
    )
    broken: set[str] = field(default_factory=set)  # routes that answer 500
    forbidden: set[int] = field(default_factory=set)  # ids of trashed, draft or private posts
    totals: bool = True  # False: the X-WP-Total* headers are dropped (as some proxies do)

    def add(
        self, route: str, ident: int, modified_gmt: str, title: str = "", body: str = ""
    ) -> None:
        self.items[route][ident] = {
            "id": ident,
            "modified_gmt": modified_gmt,
            "link": f"https://blog.example.com/?p={ident}",
            "title": {"rendered": title},
            "content": {"rendered": body, "protected": False},
            "status": "publish",
        }

    def __call__(self, seen: Seen) -> Reply:
        if seen.path in self.broken:
            return Reply(500, b'{"code":"internal_server_error"}', JSON)
        if (one := _ONE.fullmatch(seen.path)) is not None:
            if int(one.group(2)) in self.forbidden:
                return _error(401, "rest_forbidden")
            item = self.items[one.group(1)].get(int(one.group(2)))
            if item is None:
                return _error(404, "rest_post_invalid_id")
            return _json(_only(item, seen.query), {})
        route = seen.path.removeprefix(f"{API}/")
        if route not in self.items:
            return _error(404, "rest_no_route")
        per_page = int(seen.query.get("per_page", "10"))
        if not 1 <= per_page <= 100:
            return _error(400, "rest_invalid_param")
        everything = [self.items[route][i] for i in sorted(self.items[route])]
        pages = max(1, -(-len(everything) // per_page))
        page = int(seen.query.get("page", "1"))
        if page > pages:
            return _error(400, "rest_post_invalid_page_number")
        shown = everything[(page - 1) * per_page : page * per_page]
        headers = {"X-WP-Total": str(len(everything)), "X-WP-TotalPages": str(pages)}
        headers = headers if self.totals else {}
        return _json([_only(item, seen.query) for item in shown], headers)


def _only(item: Mapping[str, object], query: Mapping[str, str]) -> dict[str, object]:
    if "_fields" not in query:
        return dict(item)
    wanted = query["_fields"].split(",")
    return {key: value for key, value in item.items() if key in wanted}


def _json(body: object, headers: Mapping[str, str]) -> Reply:
    return Reply(200, json.dumps(body).encode(), JSON, headers)


def _error(status: int, code: str) -> Reply:
    return Reply(status, json.dumps({"code": code, "data": {"status": status}}).encode(), JSON)


@pytest.fixture
def wp() -> FakeWordPress:
    return FakeWordPress()


@pytest.fixture
def server(wp: FakeWordPress) -> Iterator[LocalServer]:
    with local_server(wp) as running:
        yield running


def site(server: LocalServer) -> WordPressSource:
    return WordPressSource("blog", server.url("/blog/"), HttpClient(Limits(timeout=2)))


def version(modified_gmt: str) -> str:
    return modified_gmt + ".000000Z"


def test_the_listing_sweeps_every_post_and_page_across_pages(
    wp: FakeWordPress, server: LocalServer
) -> None:
    for ident in range(1, 251):
        wp.add("posts", ident, f"2025-05-01T10:{ident // 60:02}:{ident % 60:02}")
    wp.add("pages", 7, "2025-04-01T09:00:00")
    listed = site(server).listing()
    assert len(listed) == 251
    assert listed[0] == Listed("post:1", version("2025-05-01T10:00:01"), "")
    assert listed[249] == Listed("post:250", version("2025-05-01T10:04:10"), "")
    assert listed[250] == Listed("page:7", version("2025-04-01T09:00:00"), "")


def test_a_site_holding_posts_only_lists_no_pages(wp: FakeWordPress, server: LocalServer) -> None:
    wp.add("posts", 1, "2025-05-01T10:00:00")
    wp.add("pages", 7, "2025-04-01T09:00:00")
    client = HttpClient(Limits(timeout=2))

    listed = WordPressSource("blog", server.url("/blog/"), client, kinds=("post",)).listing()

    assert [item.key for item in listed] == ["post:1"]
    assert not [seen for seen in server.seen if "/pages" in seen.path]


def test_a_page_indexed_before_a_source_held_posts_only_is_read_as_gone(
    wp: FakeWordPress, server: LocalServer
) -> None:
    wp.add("pages", 7, "2025-04-01T09:00:00", "About", "<p>About us.</p>")
    client = HttpClient(Limits(timeout=2))
    posts_only = WordPressSource("blog", server.url("/blog/"), client, kinds=("post",))

    assert posts_only.fetch(Listed("page:7", None, "")) is None


def test_the_listing_asks_for_ids_and_dates_only_100_at_a_time(
    wp: FakeWordPress, server: LocalServer
) -> None:
    for ident in range(1, 151):
        wp.add("posts", ident, "2025-05-01T10:00:00", body="a long body " * 100)
    site(server).listing()
    sweeps = [seen for seen in server.seen if seen.path == f"{API}/posts"]
    assert [seen.query["page"] for seen in sweeps] == ["1", "2"]
    assert all(seen.query["_fields"] == "id,modified_gmt" for seen in sweeps)
    assert all(seen.query["per_page"] == "100" for seen in sweeps)


def test_an_empty_site_lists_nothing(server: LocalServer) -> None:
    assert site(server).listing() == []


def test_a_listing_that_fails_on_a_later_page_fails_whole(
    wp: FakeWordPress, server: LocalServer
) -> None:
    # Posts listed, then pages failing: half a listing would delete the other half.
    wp.add("posts", 1, "2025-05-01T10:00:00")
    wp.broken.add(f"{API}/pages")
    with pytest.raises(SourceError, match=r"source 'blog': .*HTTP 500"):
        site(server).listing()


def test_a_listed_post_without_an_integer_id_fails_the_listing(
    wp: FakeWordPress, server: LocalServer
) -> None:
    wp.items["posts"][1] = {"id": "1", "modified_gmt": "2025-05-01T10:00:00"}
    with pytest.raises(SourceError, match="a post without an integer id"):
        site(server).listing()


def test_a_listed_post_with_a_bad_date_fails_the_listing(
    wp: FakeWordPress, server: LocalServer
) -> None:
    wp.add("posts", 1, "last tuesday")
    with pytest.raises(SourceError, match="modified_gmt is not an ISO 8601 date-time"):
        site(server).listing()


def test_a_post_is_fetched_whole(wp: FakeWordPress, server: LocalServer) -> None:
    wp.add("posts", 42, "2025-05-01T10:30:00", "Caf&eacute; &amp; more", "<p>Hello</p>")
    delivery = site(server).fetch(Listed("post:42", version("2025-05-01T10:30:00"), ""))
    assert delivery is not None
    assert (delivery.event, delivery.entry_id) == ("upsert", "post:42")
    assert delivery.title == "Café & more"
    assert delivery.content == "<p>Hello</p>"
    assert delivery.content_type == "text/html"
    assert delivery.url == "https://blog.example.com/?p=42"
    assert delivery.updated_at == datetime(2025, 5, 1, 10, 30, tzinfo=UTC)
    asked = server.seen[-1]
    assert asked.path == f"{API}/posts/42"
    fields = set(asked.query["_fields"].split(","))
    assert fields == {"id", "link", "modified_gmt", "title", "content"}


def test_a_page_is_fetched_from_the_pages_route(wp: FakeWordPress, server: LocalServer) -> None:
    wp.add("pages", 7, "2025-04-01T09:00:00", "About", "<p>Who we are</p>")
    delivery = site(server).fetch(Listed("page:7", None, ""))
    assert delivery is not None
    assert (delivery.entry_id, delivery.title, delivery.content) == (
        "page:7",
        "About",
        "<p>Who we are</p>",
    )


def test_a_post_without_a_title_has_none(wp: FakeWordPress, server: LocalServer) -> None:
    wp.add("posts", 3, "2025-05-01T10:00:00", "", "<p>Untitled</p>")
    delivery = site(server).fetch(Listed("post:3", None, ""))
    assert delivery is not None
    assert delivery.title is None


def test_a_link_that_is_not_an_http_url_is_dropped(wp: FakeWordPress, server: LocalServer) -> None:
    wp.add("posts", 4, "2025-05-01T10:00:00", "Linked", "<p>Text</p>")
    wp.items["posts"][4]["link"] = "javascript:alert(1)"
    delivery = site(server).fetch(Listed("post:4", None, ""))
    assert delivery is not None
    assert delivery.url is None and delivery.title == "Linked"


def test_a_trashed_or_private_post_is_gone(wp: FakeWordPress, server: LocalServer) -> None:
    wp.forbidden.add(12)
    assert site(server).fetch(Listed("post:12", None, "")) is None


def test_without_the_total_pages_header_the_listing_reads_until_a_short_page(
    wp: FakeWordPress, server: LocalServer
) -> None:
    wp.totals = False
    for ident in range(1, 251):
        wp.add("posts", ident, "2025-05-01T10:00:00")
    listed = site(server).listing()
    assert len([item for item in listed if item.key.startswith("post:")]) == 250


def test_a_deleted_post_is_gone(server: LocalServer) -> None:
    assert site(server).fetch(Listed("post:99", None, "")) is None


def test_a_post_that_fails_raises(wp: FakeWordPress, server: LocalServer) -> None:
    wp.broken.add(f"{API}/posts/5")
    with pytest.raises(FetchError) as info:
        site(server).fetch(Listed("post:5", None, ""))
    assert info.value.status == 500
