"""The scheduled reconcile of a Strapi source against a real `ragd serve` and a fake Strapi
REST API on loopback: what the webhooks missed is repaired, and a listing that fails or
comes back empty deletes nothing.

The fake answers as Strapi v5's REST API does (packages/core/core/src/core-api and the
REST docs: `{"data": [...], "meta": {"pagination": {"page", "pageSize", "pageCount",
"total"}}}` for a collection, `{"data": {...}, "meta": {}}` for one document, 404 with
`{"data": null, "error": {...}}` for a missing one). ragd reconciles each source once
shortly after it starts, then every reconcile_interval.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cms_deliveries import Entry, Strapi, iso
from tests.integration.daemon import Served, wait_until
from tests.local_http import Reply, Seen, json_reply, local_server

API_TOKEN = "strapi-read-api-token"


@dataclass
class FakeStrapi:
    """Published `article` entries in locale "en", served as Strapi's REST API (the app of
    a LocalServer)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    listing: str = "ok"  # "ok", "fail" (500) or "empty"
    fetched: list[str] = field(default_factory=list)  # documentIds fetched one by one
    port: int = 0  # the LocalServer's, once it serves

    def __call__(self, seen: Seen) -> Reply:
        if seen.headers.get("Authorization") != f"Bearer {API_TOKEN}":
            return json_reply({"data": None, "error": {"status": 401}}, 401)
        if seen.path == "/api/articles":
            return self.collection()
        if seen.path.startswith("/api/articles/"):
            return self.document(seen.path.rsplit("/", 1)[-1])
        return json_reply({"data": None, "error": {"status": 404}}, 404)

    def collection(self) -> Reply:
        if self.listing == "fail":
            error = {"status": 500, "name": "InternalServerError"}
            return json_reply({"data": None, "error": error}, 500)
        shown = [] if self.listing == "empty" else list(self.entries.values())
        data = [
            {"id": n, "documentId": e.ident, "updatedAt": iso(e.updated), "locale": "en"}
            for n, e in enumerate(shown, 1)
        ]
        pagination = {"page": 1, "pageSize": 100, "pageCount": 1, "total": len(data)}
        return json_reply({"data": data, "meta": {"pagination": pagination}})

    def document(self, ident: str) -> Reply:
        self.fetched.append(ident)
        entry = self.entries.get(ident)
        if entry is None:
            error = {"status": 404, "name": "NotFoundError"}
            return json_reply({"data": None, "error": error}, 404)
        return json_reply({"data": Strapi().row(entry), "meta": {}})


@pytest.fixture
def strapi() -> Iterator[FakeStrapi]:
    fake = FakeStrapi()
    with local_server(fake) as server:
        fake.port = server.port
        yield fake


def daemon(tmp_path: Path, strapi: FakeStrapi) -> Served:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    (root / "seed.md").write_text("# Seed\n\nA folder page so the folder source is not empty.\n")
    source = f"""
[[sources]]
name = "strapi"
type = "webhook"
format = "strapi"
bearer_token_env = "RAGD_TEST_STRAPI_TOKEN"
api_url = "http://127.0.0.1:{strapi.port}/api"
api_token_env = "RAGD_TEST_STRAPI_API_TOKEN"
content_types = {{ article = "articles" }}
locales = ["en"]
max_age = "30d"
"""
    env = {"RAGD_TEST_STRAPI_TOKEN": Strapi().token, "RAGD_TEST_STRAPI_API_TOKEN": API_TOKEN}
    return Served(tmp_path, root, env=env, extra_sources=source)


def reconciled(served: Served) -> dict[str, Any]:
    """The report of the first reconcile of the run, once it has been applied."""

    def finished() -> dict[str, Any] | None:
        polls = served.status()["daemon"].get("polls", {})
        return polls.get("strapi") if "strapi" in polls else None

    report: dict[str, Any] = wait_until(finished, 30, interval=0.2)
    served.wait_idle()
    return report


def strapi_ids(served: Served, text: str) -> list[str]:
    hits = served.query(text)["results"]
    return sorted(h["doc_id"] for h in hits if h["source"] == "strapi")


def first_run(tmp_path: Path, strapi: FakeStrapi) -> None:
    """A run in which the reconcile indexes two published articles."""
    strapi.entries = {
        "kept": Entry("kept", "Kept", "The kept article about heron nests."),
        "gone": Entry("gone", "Gone", "The gone article about heron feathers."),
    }
    served = daemon(tmp_path, strapi).start().wait_ready()
    try:
        report = reconciled(served)
        assert (report["listed"], report["fetched"], report["error"]) == (2, 2, None)
        assert strapi_ids(served, "heron") == ["strapi:article:gone:en", "strapi:article:kept:en"]
    finally:
        served.stop()
    strapi.fetched.clear()


def test_an_entry_deleted_while_ragd_was_down_is_removed_by_the_next_reconcile(
    tmp_path: Path, strapi: FakeStrapi
) -> None:
    first_run(tmp_path, strapi)
    del strapi.entries["gone"]
    strapi.entries["missed"] = Entry("missed", "Missed", "Published while down: heron eggs.")

    served = daemon(tmp_path, strapi).start().wait_ready()
    try:
        report = reconciled(served)

        assert strapi_ids(served, "heron") == ["strapi:article:kept:en", "strapi:article:missed:en"]
        assert (report["deleted"], report["fetched"], report["error"]) == (1, 1, None)
        # The new entry fetched, the vanished one confirmed gone (404), the unchanged one
        # not read at all.
        assert sorted(strapi.fetched) == ["gone", "missed"]
    finally:
        served.stop()


def test_a_reconcile_whose_listing_fails_deletes_nothing_and_marks_the_source_stale(
    tmp_path: Path, strapi: FakeStrapi
) -> None:
    first_run(tmp_path, strapi)
    strapi.listing = "fail"

    served = daemon(tmp_path, strapi).start().wait_ready()
    try:
        report = reconciled(served)
        source = next(s for s in served.status()["sources"] if s["name"] == "strapi")
        hits = [h for h in served.query("heron")["results"] if h["source"] == "strapi"]

        assert "500" in report["error"] and report["deleted"] == 0
        assert len(hits) == 2 and all(h["stale_reasons"] == ["max_age"] for h in hits)
        assert source["unreachable"] and source["stale"] == 2
    finally:
        served.stop()


def test_a_reconcile_whose_listing_comes_back_empty_deletes_nothing(
    tmp_path: Path, strapi: FakeStrapi
) -> None:
    first_run(tmp_path, strapi)
    strapi.listing = "empty"

    served = daemon(tmp_path, strapi).start().wait_ready()
    try:
        report = reconciled(served)

        assert (report["listed"], report["deleted"]) == (0, 0)
        assert strapi_ids(served, "heron") == ["strapi:article:gone:en", "strapi:article:kept:en"]
    finally:
        served.stop()
