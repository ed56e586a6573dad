"""Tests for ragd.sources.sitemap against sitemaps served by a real local HTTP server:
listing, sitemap indexes, the same-host rule, hostile and broken XML, page fetches, keys
and `<lastmod>` versions."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from ragd.errors import SourceError
from ragd.indexing.parsers import parse_document
from ragd.sources.http_client import FetchError, HttpClient, Limits
from ragd.sources.remote import Listed
from ragd.sources.sitemap import SitemapSource, lastmod_version, page_key
from tests.local_http import LocalServer, Reply, local_server

XML = "application/xml"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with local_server() as running:
        yield running


def urlset(*urls: tuple[str, str | None]) -> bytes:
    entries = "".join(
        f"<url><loc>{loc}</loc>{'' if mod is None else f'<lastmod>{mod}</lastmod>'}</url>"
        for loc, mod in urls
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{entries}</urlset>'.encode()


def sitemapindex(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f"<sitemapindex {NS}>{entries}</sitemapindex>".encode()


def source(server: LocalServer, path: str = "/sitemap.xml") -> SitemapSource:
    return SitemapSource("site", server.url(path), HttpClient(Limits(timeout=2)))


def listing_error(site: SitemapSource) -> str:
    with pytest.raises(SourceError) as info:
        site.listing()
    message = str(info.value)
    assert message.startswith("source 'site': sitemap ")
    assert "\n" not in message
    return message


# --- listing ---------------------------------------------------------------------------------


def test_a_sitemap_lists_its_pages_with_lastmod_as_version(server: LocalServer) -> None:
    body = urlset(
        (server.url("/docs/intro"), "2025-05-01"),
        (server.url("/docs/setup"), "2025-05-02T10:00:00+02:00"),
        (server.url("/about"), None),
    )
    server.route("/sitemap.xml", Reply(body=body, content_type=XML))
    assert source(server).listing() == [
        Listed("docs/intro", "2025-05-01T00:00:00.000000Z", server.url("/docs/intro")),
        Listed("docs/setup", "2025-05-02T08:00:00.000000Z", server.url("/docs/setup")),
        Listed("about", None, server.url("/about")),
    ]


def test_a_sitemap_over_the_protocols_50000_urls_fails_rather_than_list_a_part(
    server: LocalServer,
) -> None:
    # A cut listing would delete every page past the cut.
    urls = [(server.url(f"/p{n}"), None) for n in range(50_001)]
    server.route("/sitemap.xml", Reply(body=urlset(*urls), content_type="application/xml"))
    assert "more than 50000 URLs" in listing_error(source(server))


def test_a_sitemap_served_as_text_xml_is_read(server: LocalServer) -> None:
    body = urlset((server.url("/a"), None))
    server.route("/sitemap.xml", Reply(body=body, content_type="text/xml; charset=utf-8"))
    assert [item.key for item in source(server).listing()] == ["a"]


def test_a_gzipped_sitemap_is_read(server: LocalServer) -> None:
    body = gzip.compress(urlset((server.url("/a"), "2025-05-01")))
    server.route("/sitemap.xml.gz", Reply(body=body, content_type="application/gzip"))
    assert [item.key for item in source(server, "/sitemap.xml.gz").listing()] == ["a"]


def test_urls_on_another_host_are_skipped_and_counted(server: LocalServer) -> None:
    body = urlset(
        (server.url("/mine"), None),
        (server.url("/theirs", host="localhost"), None),
        ("https://elsewhere.example/page", None),
        (f"ftp://127.0.0.1:{server.port}/file", None),
    )
    server.route("/sitemap.xml", Reply(body=body, content_type=XML))
    site = source(server)
    assert [item.key for item in site.listing()] == ["mine"]
    assert site.skipped == 3


def test_a_url_that_cannot_be_a_key_is_skipped(server: LocalServer) -> None:
    body = urlset((server.url("/a/../b"), None), (server.url("/ok"), None))
    server.route("/sitemap.xml", Reply(body=body, content_type=XML))
    site = source(server)
    assert [item.key for item in site.listing()] == ["ok"]
    assert site.skipped == 1


def test_a_sitemap_index_lists_the_pages_of_its_sitemaps(server: LocalServer) -> None:
    index = sitemapindex(server.url("/a.xml"), server.url("/b.xml"))
    server.route("/index.xml", Reply(body=index, content_type=XML))
    server.route("/a.xml", Reply(body=urlset((server.url("/one"), None)), content_type=XML))
    server.route("/b.xml", Reply(body=urlset((server.url("/two"), None)), content_type=XML))
    assert [item.key for item in source(server, "/index.xml").listing()] == ["one", "two"]


def test_a_sitemap_index_on_another_host_is_not_read(server: LocalServer) -> None:
    index = sitemapindex(server.url("/a.xml"), server.url("/b.xml", host="localhost"))
    server.route("/index.xml", Reply(body=index, content_type=XML))
    server.route("/a.xml", Reply(body=urlset((server.url("/one"), None)), content_type=XML))
    server.route("/b.xml", Reply(body=urlset((server.url("/two"), None)), content_type=XML))
    site = source(server, "/index.xml")
    assert [item.key for item in site.listing()] == ["one"]
    assert site.skipped == 1
    assert server.hits("/b.xml") == 0


def test_a_sitemap_index_is_followed_one_level_only(server: LocalServer) -> None:
    index = sitemapindex(server.url("/nested.xml"))
    server.route("/index.xml", Reply(body=index, content_type=XML))
    server.route("/nested.xml", Reply(body=sitemapindex(server.url("/a.xml")), content_type=XML))
    server.route("/a.xml", Reply(body=urlset((server.url("/one"), None)), content_type=XML))
    message = listing_error(source(server, "/index.xml"))
    assert "a sitemap index may only list <urlset>s" in message
    assert server.hits("/a.xml") == 0


def test_a_child_sitemap_that_fails_fails_the_whole_listing(server: LocalServer) -> None:
    # Half a listing would delete the pages of the other half.
    index = sitemapindex(server.url("/a.xml"), server.url("/missing.xml"))
    server.route("/index.xml", Reply(body=index, content_type=XML))
    server.route("/a.xml", Reply(body=urlset((server.url("/one"), None)), content_type=XML))
    assert "HTTP 404" in listing_error(source(server, "/index.xml"))


def test_a_missing_sitemap_is_a_source_error(server: LocalServer) -> None:
    assert "HTTP 404" in listing_error(source(server))


def test_a_sitemap_that_is_html_is_refused(server: LocalServer) -> None:
    server.route("/sitemap.xml", Reply(body=b"<html></html>", content_type="text/html"))
    assert "unexpected content type 'text/html'" in listing_error(source(server))


def test_xml_that_is_not_a_sitemap_is_refused(server: LocalServer) -> None:
    server.route("/sitemap.xml", Reply(body=b"<rss><channel/></rss>", content_type=XML))
    assert "the root element is <rss>" in listing_error(source(server))


def test_a_sitemap_with_a_dtd_is_refused(server: LocalServer) -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        b"<urlset><url><loc>&lol2;</loc></url></urlset>"
    )
    server.route("/sitemap.xml", Reply(body=laughs, content_type=XML))
    assert "refused XML: DTDForbidden" in listing_error(source(server))


def test_a_sitemap_with_an_external_entity_is_refused(server: LocalServer) -> None:
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>&x;</loc></url></urlset>"
    )
    server.route("/sitemap.xml", Reply(body=xxe, content_type=XML))
    assert "refused XML" in listing_error(source(server))


def test_malformed_xml_is_a_clear_error(server: LocalServer) -> None:
    server.route("/sitemap.xml", Reply(body=b"<urlset><url><loc>x</url>", content_type=XML))
    assert "not well-formed XML" in listing_error(source(server))


def test_a_listing_error_never_shows_the_sitemaps_query(server: LocalServer) -> None:
    site = source(server, "/sitemap.xml?key=s3cret")
    assert "s3cret" not in listing_error(site)


def test_a_bad_lastmod_leaves_its_page_unversioned(server: LocalServer) -> None:
    body = urlset((server.url("/a"), "2025-13"), (server.url("/b"), "yesterday"))
    server.route("/sitemap.xml", Reply(body=body, content_type=XML))
    assert [(item.key, item.version) for item in source(server).listing()] == [
        ("a", None),
        ("b", None),
    ]


# --- fetching a page -------------------------------------------------------------------------

PAGE = b"""<!doctype html><html><head><title>Intro</title></head>
<body><h1>Intro</h1><p>How to start.</p></body></html>"""


def test_a_fetched_page_is_its_html_ready_to_parse(server: LocalServer) -> None:
    server.route("/docs/intro", Reply(body=PAGE, content_type="text/html; charset=utf-8"))
    item = Listed("docs/intro", "2025-05-01T00:00:00.000000Z", server.url("/docs/intro"))
    delivery = source(server).fetch(item)
    assert delivery is not None
    assert (delivery.event, delivery.entry_id) == ("upsert", "docs/intro")
    assert delivery.content_type == "text/html"
    assert delivery.url == server.url("/docs/intro")
    assert delivery.version() == "2025-05-01T00:00:00.000000Z"
    assert delivery.content is not None
    parsed = parse_document(delivery.content.encode(), "intro.html")
    assert parsed.title == "Intro"
    assert "How to start." in parsed.sections[0].blocks[0].text


def test_a_page_in_a_declared_charset_is_decoded(server: LocalServer) -> None:
    body = "<p>Café</p>".encode("latin-1")
    server.route("/cafe", Reply(body=body, content_type="text/html; charset=iso-8859-1"))
    delivery = source(server).fetch(Listed("cafe", None, server.url("/cafe")))
    assert delivery is not None
    assert delivery.content == "<p>Café</p>"


@pytest.mark.parametrize("status", [404, 410])
def test_a_page_that_is_gone_is_none(server: LocalServer, status: int) -> None:
    server.route("/old", Reply(status, b"gone"))
    assert source(server).fetch(Listed("old", None, server.url("/old"))) is None


def test_a_page_that_fails_raises(server: LocalServer) -> None:
    server.route("/broken", Reply(503, b"busy"))
    with pytest.raises(FetchError) as info:
        source(server).fetch(Listed("broken", None, server.url("/broken")))
    assert info.value.status == 503


def test_a_page_that_is_not_html_raises(server: LocalServer) -> None:
    server.route("/file.pdf", Reply(body=b"%PDF-1.7", content_type="application/pdf"))
    with pytest.raises(FetchError, match="unexpected content type 'application/pdf'"):
        source(server).fetch(Listed("file.pdf", None, server.url("/file.pdf")))


# --- keys and versions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://docs.example.com/guide/intro", "guide/intro"),
        ("https://docs.example.com/guide/", "guide/"),
        ("https://docs.example.com/", "index"),
        ("https://docs.example.com", "index"),
        ("https://docs.example.com/search?q=x", "search?q=x"),
    ],
)
def test_page_key_is_the_path_on_the_site(url: str, key: str) -> None:
    assert page_key(url) == key


def test_page_key_ignores_scheme_host_case_and_fragment() -> None:
    keys = {
        page_key("https://docs.example.com/guide/intro"),
        page_key("http://docs.example.com/guide/intro"),
        page_key("https://DOCS.example.com/guide/intro#setup"),
    }
    assert keys == {"guide/intro"}


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.example.com/a/../etc/passwd",
        "https://docs.example.com/a b",
        "https://docs.example.com/a\x00b",
        "https://docs.example.com/" + "a" * 1025,
    ],
)
def test_page_key_refuses_urls_that_cannot_be_keys(url: str) -> None:
    assert page_key(url) is None


@pytest.mark.parametrize(
    ("lastmod", "version"),
    [
        ("2025-05-01", "2025-05-01T00:00:00.000000Z"),
        ("2025-05", "2025-05-01T00:00:00.000000Z"),
        ("2025", "2025-01-01T00:00:00.000000Z"),
        ("2025-05-01T10:30:00Z", "2025-05-01T10:30:00.000000Z"),
        ("2025-05-01T10:30:00+02:00", "2025-05-01T08:30:00.000000Z"),
        ("2025-05-01T10:30:00", "2025-05-01T10:30:00.000000Z"),
        (" 2025-05-01 ", "2025-05-01T00:00:00.000000Z"),
    ],
)
def test_lastmod_version_is_sortable_utc(lastmod: str, version: str) -> None:
    assert lastmod_version(lastmod) == version


@pytest.mark.parametrize(
    "lastmod", [None, "", "soon", "2025-13", "0000", "0001-01-01T00:00:00+01:00"]
)
def test_lastmod_version_of_what_is_not_a_date_is_none(lastmod: str | None) -> None:
    assert lastmod_version(lastmod) is None
