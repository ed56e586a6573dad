"""The CMSes' read APIs as ragd calls them: the listing a reconcile diffs, and one entry
read back, against a real local HTTP server answering in each API's documented shape.

Shapes: Ghost Content API (`{"posts": [...], "meta": {"pagination": {"next"}}}`, the key
as `?key=`), Strapi v5 REST (`{"data", "meta": {"pagination": {"pageCount"}}}`),
Directus REST (`{"data": [...]}`, 403 for a missing item), Contentful Content Delivery
API (`{"items", "total", "skip", "limit"}`) and Sanity's Query API (`{"result"}`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ragd.errors import SourceError
from ragd.sources.cms.contentful import ContentfulApi
from ragd.sources.cms.directus import DirectusApi
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.ghost import GhostApi
from ragd.sources.cms.sanity import SanityApi
from ragd.sources.cms.strapi import StrapiApi
from ragd.sources.deliveries import MAX_TITLE
from ragd.sources.http_client import FetchError, HttpClient, Limits
from ragd.sources.remote import Listed
from tests.local_http import LocalServer, Reply, Seen, local_server
from tests.local_http import json_reply as answer

CLIENT = HttpClient(Limits(timeout=5))
FIELDS = FieldMap("title", "content", "markdown", None)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with local_server() as running:
        yield running


# -- Ghost


def ghost_page(seen: Seen) -> Reply:
    page = int(seen.query["page"])
    posts = [{"id": f"p{page}", "updated_at": f"2026-11-0{page}T10:00:00.000+00:00"}]
    return answer({"posts": posts, "meta": {"pagination": {"next": 2 if page == 1 else None}}})


def test_ghost_lists_posts_and_pages_across_its_pages_with_the_content_key(
    server: LocalServer,
) -> None:
    server.route("/ghost/api/content/posts/", ghost_page)
    server.route("/ghost/api/content/pages/", answer({"pages": [], "meta": {"pagination": {}}}))

    listed = GhostApi("blog", server.url(""), "content-key", CLIENT).listing()

    assert [item.key for item in listed] == ["post:p1", "post:p2"]
    assert listed[0].version is not None and listed[0].version < str(listed[1].version)
    assert {seen.query["key"] for seen in server.seen} == {"content-key"}
    assert {seen.query["filter"] for seen in server.seen} == {"visibility:public"}


def test_a_ghost_source_holding_posts_only_lists_no_pages(server: LocalServer) -> None:
    server.route("/ghost/api/content/posts/", ghost_page)
    pages = {"pages": [{"id": "about", "updated_at": "2026-11-01T10:00:00.000+00:00"}]}
    server.route("/ghost/api/content/pages/", answer(pages | {"meta": {"pagination": {}}}))

    listed = GhostApi("blog", server.url(""), "k", CLIENT, kinds=("post",)).listing()

    assert [item.key for item in listed] == ["post:p1", "post:p2"]
    assert {seen.path for seen in server.seen} == {"/ghost/api/content/posts/"}


def test_a_page_indexed_before_a_ghost_source_held_posts_only_is_read_as_gone(
    server: LocalServer,
) -> None:
    page = {"id": "about", "title": "About", "html": "<p>About us.</p>", "url": "https://b/"}
    server.route("/ghost/api/content/pages/about/", answer({"pages": [page]}))

    posts_only = GhostApi("blog", server.url(""), "k", CLIENT, kinds=("post",))

    assert posts_only.fetch_entry("page:about") is None


def test_ghost_whose_listing_has_no_pagination_fails_rather_than_stop_at_one_page(
    server: LocalServer,
) -> None:
    server.route("/ghost/api/content/posts/", answer({"posts": [{"id": "p1"}]}))

    with pytest.raises(SourceError, match=r"no meta\.pagination"):
        GhostApi("blog", server.url(""), "k", CLIENT).listing()


def test_ghost_reads_back_a_published_post_as_html(server: LocalServer) -> None:
    post = {
        "id": "p1",
        "title": "Herons",
        "html": "<p>Herons wade.</p>",
        "url": "https://blog.example.com/herons/",
        "visibility": "public",  # and no status: the Content API leaves it out
        "updated_at": "2026-11-01T10:00:00.000Z",
    }
    server.route("/ghost/api/content/posts/p1/", answer({"posts": [post]}))

    delivery = GhostApi("blog", server.url(""), "k", CLIENT).fetch_entry("post:p1")

    assert delivery is not None and delivery.content == "<p>Herons wade.</p>"
    assert delivery.url == "https://blog.example.com/herons/" and delivery.title == "Herons"


def test_ghost_drops_a_post_url_that_is_not_http(server: LocalServer) -> None:
    post = {"id": "p2", "title": "T" * 5000, "html": "<p>x</p>", "url": "javascript:alert(1)"}
    post |= {"visibility": "public"}
    server.route("/ghost/api/content/posts/p2/", answer({"posts": [post]}))

    delivery = GhostApi("blog", server.url(""), "k", CLIENT).fetch_entry("post:p2")

    assert delivery is not None and delivery.url is None
    assert delivery.title is not None and len(delivery.title) == MAX_TITLE


def test_ghost_reads_a_members_only_post_as_gone(server: LocalServer) -> None:
    post = {"id": "p3", "title": "Paid", "html": "<p>teaser</p>", "visibility": "paid"}
    server.route("/ghost/api/content/posts/p3/", answer({"posts": [post]}))

    assert GhostApi("blog", server.url(""), "k", CLIENT).fetch_entry("post:p3") is None


def test_ghost_reads_a_post_it_no_longer_publishes_as_gone(server: LocalServer) -> None:
    server.route("/ghost/api/content/posts/p9/", answer({"errors": [{"type": "NotFound"}]}, 404))

    assert GhostApi("blog", server.url(""), "k", CLIENT).fetch_entry("post:p9") is None


# -- Strapi


def test_strapi_lists_each_content_type_in_each_locale(server: LocalServer) -> None:
    def articles(seen: Seen) -> Reply:
        row = {"id": 1, "documentId": "abc", "updatedAt": "2026-11-01T10:00:00.000Z"}
        pagination = {"page": 1, "pageSize": 100, "pageCount": 1, "total": 1}
        data = [{**row, "locale": seen.query["locale"]}]
        return answer({"data": data, "meta": {"pagination": pagination}})

    server.route("/api/articles", articles)
    api = StrapiApi(
        "cms", server.url("/api"), CLIENT, FIELDS, {"article": "articles"}, ("en", "fr")
    )

    listed = api.listing()

    assert [item.key for item in listed] == ["article:abc:en", "article:abc:fr"]
    assert server.seen[0].query["fields[0]"] == "updatedAt"


def test_strapi_reads_back_a_v4_entry_through_its_attributes(server: LocalServer) -> None:
    attributes = {"title": "Otters", "content": "# Otters\n\nOtters hold hands.\n"}
    attributes["updatedAt"] = "2026-11-01T10:00:00.000Z"
    server.route("/api/articles/7", answer({"data": {"id": 7, "attributes": attributes}}))
    api = StrapiApi("cms", server.url("/api"), CLIENT, FIELDS, {"article": "articles"})

    delivery = api.fetch_entry("article:7")

    assert delivery is not None and "Otters hold hands." in (delivery.content or "")
    assert delivery.title == "Otters"


def test_strapi_whose_listing_has_no_page_count_fails_rather_than_stop_at_one_page(
    server: LocalServer,
) -> None:
    row = {"id": 1, "documentId": "abc", "updatedAt": "2026-11-01T10:00:00.000Z"}
    server.route("/api/articles", answer({"data": [row], "meta": {"pagination": {"page": 1}}}))
    api = StrapiApi("cms", server.url("/api"), CLIENT, FIELDS, {"article": "articles"})

    with pytest.raises(SourceError, match="pageCount is missing"):
        api.listing()


def test_strapi_whose_listing_fails_raises_a_source_error_naming_the_source(
    server: LocalServer,
) -> None:
    server.route("/api/articles", answer({"error": {"status": 500}}, 500))
    api = StrapiApi("cms", server.url("/api"), CLIENT, FIELDS, {"article": "articles"})

    with pytest.raises(SourceError, match=r"source 'cms'.*500"):
        api.listing()


# -- Directus


def test_directus_lists_a_collection_page_by_page(server: LocalServer) -> None:
    def items(seen: Seen) -> Reply:
        page = int(seen.query["page"])
        count = 100 if page == 1 else 3
        rows = [{"id": (page - 1) * 100 + n, "date_updated": None} for n in range(count)]
        return answer({"data": rows})

    server.route("/items/articles", items)

    listed = DirectusApi("d", server.url(""), CLIENT, FIELDS, ("articles",)).listing()

    assert len(listed) == 103 and listed[-1].key == "articles:102"
    assert server.hits("/items/articles") == 2


def test_directus_reads_an_item_its_collection_does_not_list_as_gone(server: LocalServer) -> None:
    # Directus answers 403 for an item that does not exist.
    server.route("/items/articles/5", answer({"errors": [{"message": "forbidden"}]}, 403))
    server.route("/items/articles", answer({"data": []}))
    api = DirectusApi("d", server.url(""), CLIENT, FIELDS, ("articles",))

    assert api.fetch_entry("articles:5") is None
    assert server.seen[-1].query["filter[id][_eq]"] == "5"


def test_directus_reads_a_forbidden_item_it_still_lists_as_an_error(server: LocalServer) -> None:
    # A token that lost its permission must not delete what it no longer sees.
    server.route("/items/articles/5", answer({"errors": [{"message": "forbidden"}]}, 403))
    server.route("/items/articles", answer({"data": [{"id": 5}]}))
    api = DirectusApi("d", server.url(""), CLIENT, FIELDS, ("articles",))

    with pytest.raises(FetchError, match="HTTP 403"):
        api.fetch_entry("articles:5")


def test_directus_that_forbids_the_collection_too_is_an_error(server: LocalServer) -> None:
    forbidden = answer({"errors": [{"message": "forbidden"}]}, 403)
    server.route("/items/articles/5", forbidden)
    server.route("/items/articles", forbidden)
    api = DirectusApi("d", server.url(""), CLIENT, FIELDS, ("articles",))

    with pytest.raises(FetchError, match="HTTP 403"):
        api.fetch_entry("articles:5")


# -- Contentful


def test_contentful_lists_entries_by_skip_until_the_total(server: LocalServer) -> None:
    def entries(seen: Seen) -> Reply:
        skip = int(seen.query["skip"])
        count = min(int(seen.query["limit"]), 1500 - skip)
        stamp = "2026-11-01T10:00:00.000Z"
        items = [{"sys": {"id": f"e{skip + n}", "updatedAt": stamp}} for n in range(count)]
        return answer({"items": items, "total": 1500, "skip": skip, "limit": 1000})

    server.route("/spaces/s/environments/master/entries", entries)
    api = ContentfulApi(
        "c", server.url("/spaces/s/environments/master"), CLIENT, FIELDS, locale="en-US"
    )

    listed = api.listing()

    assert len(listed) == 1500 and listed[-1].key == "e1499"


def test_contentful_whose_listing_has_no_total_fails_rather_than_stop_at_one_page(
    server: LocalServer,
) -> None:
    server.route("/env/entries", answer({"items": [{"sys": {"id": "e1"}}]}))

    with pytest.raises(SourceError, match="no total"):
        ContentfulApi("c", server.url("/env"), CLIENT, FIELDS, locale="en-US").listing()


def test_contentful_reads_back_an_entry_in_the_sources_locale(server: LocalServer) -> None:
    entry: dict[str, Any] = {
        "sys": {"id": "e1", "updatedAt": "2026-11-01T10:00:00.000Z"},
        "fields": {"title": "Kiwi", "content": "Kiwi birds feed at dusk."},
    }
    server.route("/env/entries/e1", answer(entry))

    delivery = ContentfulApi("c", server.url("/env"), CLIENT, FIELDS, locale="de-DE").fetch_entry(
        "e1"
    )

    assert delivery is not None and delivery.content == "Kiwi birds feed at dusk."
    assert server.seen[0].query["locale"] == "de-DE"


# -- Sanity


def test_sanity_lists_published_documents_of_the_configured_types(server: LocalServer) -> None:
    server.route(
        "/v1/data/query/production",
        answer({"result": [{"_id": "a1", "_updatedAt": "2026-11-01T10:00:00Z"}]}),
    )
    api = SanityApi("s", server.url("/v1/data/query/production"), CLIENT, FIELDS, ("post",))

    listed = api.listing()

    seen = server.seen[0].query
    assert listed == [Listed("a1", listed[0].version, "")] and listed[0].version
    assert seen["perspective"] == "published" and json.loads(seen["$types"]) == ["post"]
    assert 'path("drafts.**")' in seen["query"]


def test_sanity_reads_back_nothing_for_a_document_of_another_type(server: LocalServer) -> None:
    server.route(
        "/q", answer({"result": {"_id": "a1", "_type": "author", "title": "Ann", "content": "x"}})
    )

    assert SanityApi("s", server.url("/q"), CLIENT, FIELDS, ("post",)).fetch_entry("a1") is None
