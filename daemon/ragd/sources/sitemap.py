"""A site read through its sitemap.xml: the pages it lists, fetched when they changed.

Owns reading a sitemap (the sitemaps.org protocol: a `<urlset>` of `<url><loc>` with an
optional `<lastmod>`, or a `<sitemapindex>` of child sitemaps, gzip allowed, at most
50,000 URLs each) and turning its pages into entries. A page's key is its URL's path
(and query) on the site, so `path` filters work as on folders; its version is
`<lastmod>`, so a poll fetches only pages whose `<lastmod>` moved (a page without one is
fetched every poll, and its content hash decides). As the protocol requires, only URLs
on the sitemap's own host are read: a sitemap cannot send ragd to another host.
"""

from __future__ import annotations

import re
import urllib.parse
from datetime import UTC, datetime
from xml.etree.ElementTree import Element

from ragd.adapters.defusedxml import local_name, parse_xml
from ragd.errors import SourceError
from ragd.sources.deliveries import Delivery, sortable_time
from ragd.sources.http_client import FetchError, HttpClient, same_host, shown
from ragd.sources.remote import Listed

XML_TYPES = ("application/xml", "text/xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_URLS = 50_000  # per sitemap, as the protocol allows
MAX_CHILD_SITEMAPS = 1000
MAX_PAGES = 500_000  # in all: a listing past it fails rather than hold unbounded memory
MAX_KEY = 1024
_YEAR_MONTH = re.compile(r"([0-9]{4})(?:-([0-9]{2}))?", re.ASCII)


def page_key(url: str) -> str | None:
    """The key of a page: its path without the leading '/' (and '?query' if it has one),
    'index' for the site's root; None for a URL that cannot be a key."""
    parts = urllib.parse.urlsplit(url)
    key = parts.path.lstrip("/") + (f"?{parts.query}" if parts.query else "")
    key = key or "index"
    segments = parts.path.split("/")
    unsafe = any(not c.isprintable() or c.isspace() for c in key) or ".." in segments
    return None if unsafe or len(key) > MAX_KEY else key


def lastmod_version(text: str | None) -> str | None:
    """A `<lastmod>` (W3C date-time: a year, a month, a date, or a time with its zone;
    a time without one is taken as UTC) as a sortable version; None if it is not one."""
    if not text:
        return None
    text = text.strip()
    match = _YEAR_MONTH.fullmatch(text)
    try:
        if match is None:
            moment = datetime.fromisoformat(text)
        else:
            moment = datetime(int(match.group(1)), int(match.group(2) or 1), 1)
        return sortable_time(moment.replace(tzinfo=moment.tzinfo or UTC))
    except (ValueError, OverflowError):  # month 13, year 0, a zone before year 1
        return None


class SitemapSource:
    """The pages of one site, as its sitemap lists them."""

    confirms_deletes = False  # a page the sitemap drops is gone

    def __init__(self, name: str, url: str, client: HttpClient) -> None:
        self.name = name
        self.url = url
        self.host = urllib.parse.urlsplit(url).hostname
        self.client = client
        self.skipped = 0  # URLs of the last listing that were off the host or not keys

    def listing(self) -> list[Listed]:
        """Every page the sitemap (and its child sitemaps) lists; SourceError when the
        sitemap itself cannot be read. A child sitemap that fails fails the listing:
        half a listing would delete the other half."""
        self.skipped = 0
        try:
            root = self._read(self.url)
            if local_name(root) == "urlset":
                return self._pages(root)
            if local_name(root) != "sitemapindex":
                raise ValueError(f"the root element is <{local_name(root)[:40]}>")
            listed: list[Listed] = []
            # A listing cut short would delete the pages past the cut: it fails instead.
            children = self._locs(root, "sitemap")
            if len(children) > MAX_CHILD_SITEMAPS:
                raise ValueError(f"the index lists more than {MAX_CHILD_SITEMAPS} sitemaps")
            for loc in children:
                child = self._read(loc)
                if local_name(child) != "urlset":
                    raise ValueError(f"{shown(loc)}: a sitemap index may only list <urlset>s")
                listed.extend(self._pages(child))
                if len(listed) > MAX_PAGES:
                    raise ValueError(f"the sitemaps list more than {MAX_PAGES} pages")
            return listed
        except (FetchError, ValueError) as exc:
            raise SourceError(f"source '{self.name}': sitemap {shown(self.url)}: {exc}") from None

    def fetch(self, item: Listed) -> Delivery | None:
        """The page's HTML; None when the site answers 404 or 410."""
        try:
            page = self.client.get(item.locator, accept=HTML_TYPES)
        except FetchError as exc:
            if exc.gone:
                return None
            raise
        updated = None if item.version is None else datetime.fromisoformat(item.version)
        return Delivery(
            "upsert",
            item.key,
            url=page.url,
            updated_at=updated,
            content=page.text(),
            content_type="text/html",
        )

    def _read(self, url: str) -> Element:
        return parse_xml(self.client.get(url, accept=XML_TYPES).data)

    def _locs(self, root: Element, wrapper: str) -> list[str]:
        locs = []
        for entry in root:
            if local_name(entry) != wrapper:
                continue
            loc = next((c.text for c in entry if local_name(c) == "loc"), None)
            if loc and self._on_site(loc.strip()):
                locs.append(loc.strip())
            else:
                self.skipped += 1
        return locs

    def _pages(self, urlset: Element) -> list[Listed]:
        listed = []
        if len(urlset) > MAX_URLS:
            raise ValueError(f"a sitemap lists more than {MAX_URLS} URLs")
        for entry in urlset:
            if local_name(entry) != "url":
                continue
            fields = {local_name(c): (c.text or "").strip() for c in entry}
            loc = fields.get("loc", "")
            key = page_key(loc) if loc and self._on_site(loc) else None
            if key is None:
                self.skipped += 1
                continue
            listed.append(Listed(key, lastmod_version(fields.get("lastmod")), loc))
        return listed

    def _on_site(self, url: str) -> bool:
        scheme = urllib.parse.urlsplit(url).scheme
        return scheme in ("http", "https") and same_host(self.url, url)
