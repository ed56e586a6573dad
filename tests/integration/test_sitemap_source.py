"""A sitemap source against a real `ragd serve` (and `ragd index`) and a site on loopback.

ragd polls a remote source once shortly after it starts, then every poll_interval (at
least a minute), so each step below is a run of the daemon on the same data_dir.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import ragd_in_process, run_json
from tests.integration.daemon import Served, wait_until


@dataclass
class FakeSite:
    """Pages (path -> (title, text, lastmod)) and the sitemap.xml that lists them."""

    pages: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    sitemap_fails: bool = False
    fetched: Counter[str] = field(default_factory=Counter)  # page paths served

    def __post_init__(self) -> None:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urllib.parse.urlsplit(self.path).path
                if path == "/sitemap.xml":
                    if site.sitemap_fails:
                        self.answer(503, "text/plain", b"down for maintenance")
                    else:
                        self.answer(200, "application/xml", site.sitemap())
                elif path in site.pages:
                    site.fetched[path] += 1
                    title, text, _ = site.pages[path]
                    html = f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                    html += f"<p>{text}</p></body></html>"
                    self.answer(200, "text/html; charset=utf-8", html.encode())
                else:
                    self.answer(404, "text/plain", b"not found")

            def answer(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def sitemap(self) -> bytes:
        urls = "".join(
            f"<url><loc>http://127.0.0.1:{self.port}{path}</loc><lastmod>{lastmod}</lastmod></url>"
            for path, (_, _, lastmod) in self.pages.items()
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        ).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[FakeSite]:
    fake = FakeSite(
        pages={
            "/herons.html": ("Herons", "Herons stand still in the shallows.", "2026-11-01"),
            "/egrets.html": ("Egrets", "Egrets follow the cattle.", "2026-11-02"),
            "/bitterns.html": ("Bitterns", "Bitterns boom in the reeds.", "2026-11-03"),
        }
    )
    yield fake
    fake.close()


def daemon(tmp_path: Path, site: FakeSite) -> Served:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    (root / "seed.md").write_text("# Seed\n\nA folder page so the folder source is not empty.\n")
    source = (
        f'\n[[sources]]\nname = "site"\ntype = "sitemap"\n'
        f'url = "http://127.0.0.1:{site.port}/sitemap.xml"\nmax_age = "30d"\n'
    )
    return Served(tmp_path, root, extra_sources=source)


def run(tmp_path: Path, site: FakeSite) -> tuple[Served, dict[str, Any]]:
    """Start the daemon and wait for its first poll to be applied: (daemon, poll report)."""
    served = daemon(tmp_path, site).start().wait_ready()

    def polled() -> dict[str, Any] | None:
        report: dict[str, Any] | None = served.status()["daemon"].get("polls", {}).get("site")
        return report

    report = wait_until(polled, 30, interval=0.2)
    served.wait_idle()
    return served, report


def site_docs(served: Served, text: str) -> list[str]:
    return sorted(h["doc_id"] for h in served.query(text)["results"] if h["source"] == "site")


def indexed_run(tmp_path: Path, site: FakeSite) -> None:
    served, report = run(tmp_path, site)
    served.stop()
    assert (report["listed"], report["fetched"]) == (3, 3)
    site.fetched.clear()


def test_the_pages_a_sitemap_lists_are_indexed_with_their_urls(
    tmp_path: Path, site: FakeSite
) -> None:
    served, report = run(tmp_path, site)
    try:
        hit = served.query("herons shallows")["results"][0]

        assert (report["listed"], report["fetched"], report["error"]) == (3, 3, None)
        assert site_docs(served, "herons egrets bitterns") == [
            "site:bitterns.html",
            "site:egrets.html",
            "site:herons.html",
        ]
        assert hit["uri"] == f"http://127.0.0.1:{site.port}/herons.html"
    finally:
        served.stop()


def test_a_page_whose_lastmod_moved_is_refetched_and_the_others_are_not(
    tmp_path: Path, site: FakeSite
) -> None:
    indexed_run(tmp_path, site)
    site.pages["/egrets.html"] = ("Egrets", "Egrets now nest in the alders.", "2026-11-20")

    served, report = run(tmp_path, site)
    try:
        assert site.fetched == Counter({"/egrets.html": 1})
        assert (report["fetched"], report["unchanged"]) == (1, 2)
        assert site_docs(served, "alders") == ["site:egrets.html"]
        assert site_docs(served, "cattle") == []
    finally:
        served.stop()


def test_a_page_dropped_from_the_sitemap_is_deleted(tmp_path: Path, site: FakeSite) -> None:
    indexed_run(tmp_path, site)
    del site.pages["/bitterns.html"]

    served, report = run(tmp_path, site)
    try:
        assert report["deleted"] == 1 and not site.fetched
        assert site_docs(served, "bitterns reeds") == []
        assert site_docs(served, "herons egrets") == ["site:egrets.html", "site:herons.html"]
    finally:
        served.stop()


def test_a_sitemap_that_fails_to_load_deletes_nothing_and_marks_the_source_stale(
    tmp_path: Path, site: FakeSite
) -> None:
    indexed_run(tmp_path, site)
    site.sitemap_fails = True

    served, report = run(tmp_path, site)
    try:
        source = next(s for s in served.status()["sources"] if s["name"] == "site")
        hits = [
            h for h in served.query("herons egrets bitterns")["results"] if h["source"] == "site"
        ]

        assert "503" in report["error"] and report["deleted"] == 0
        assert len(hits) == 3 and all(h["stale_reasons"] == ["max_age"] for h in hits)
        assert source["unreachable"] and source["stale"] == 3
    finally:
        served.stop()


def test_ragd_status_names_a_source_whose_last_poll_failed(tmp_path: Path, site: FakeSite) -> None:
    site.sitemap_fails = True

    served, _ = run(tmp_path, site)
    try:
        text = ragd_in_process(served.config, "status").stdout
    finally:
        served.stop()

    assert "unreachable site: the last poll failed: source 'site': sitemap" in text
    assert "last poll of site: FAILED:" in text and "503" in text


def test_ragd_index_polls_a_sitemap_once(tmp_path: Path, site: FakeSite) -> None:
    config = daemon(tmp_path, site).config

    first = run_json(config, "index")
    site.pages["/herons.html"] = ("Herons", "Herons fish at dawn.", "2026-11-25")
    second = run_json(config, "index")

    assert site.fetched == Counter({"/herons.html": 2, "/egrets.html": 1, "/bitterns.html": 1})
    assert first["errors"] == [] and second["errors"] == []
    hits = run_json(config, "query", "herons fish dawn")["results"]
    assert hits[0]["doc_id"] == "site:herons.html"
