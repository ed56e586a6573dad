"""A thin delivery completed from the CMS's read API, against a real `ragd serve` and a fake
Directus REST API on loopback.

Directus's `items.update` carries only the fields that changed (directus/directus
api/src/services/items.ts emits the update's payload), so with `api_url` configured ragd
reads the whole item back from `GET /items/<collection>/<id>`, which answers
`{"data": {...}}` (and 403 for an item that does not exist, which a listing filtered
on its id, `filter[id][_eq]`, tells from a token that may not read it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragd.service.daemon.intake import MAX_DELIVERY_ENTRIES
from tests.cms_deliveries import Directus, Entry, compact, iso
from tests.integration.daemon import Served, wait_until
from tests.local_http import Reply, Seen, json_reply, local_server

API_TOKEN = "directus-read-token"


@dataclass
class FakeDirectus:
    """Items of the `articles` collection, served as Directus's REST API (the app of a
    LocalServer)."""

    items: dict[str, Entry] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    port: int = 0  # the LocalServer's, once it serves

    def __call__(self, seen: Seen) -> Reply:
        if seen.headers.get("Authorization") != f"Bearer {API_TOKEN}":
            return json_reply({"errors": [{"message": "Invalid user credentials."}]}, 401)
        if seen.path == "/items/articles":
            wanted = seen.query.get("filter[id][_eq]")
            shown = [e for k, e in self.items.items() if wanted in (None, k)]
            return json_reply({"data": [self.item(e) for e in shown]})
        if seen.path.startswith("/items/articles/"):
            ident = seen.path.rsplit("/", 1)[-1]
            self.fetched.append(ident)
            if ident in self.items:
                return json_reply({"data": self.item(self.items[ident])})
            forbidden = {"message": "You don't have permission to access this."}
            return json_reply({"errors": [forbidden]}, 403)
        return json_reply({"errors": [{"message": "Route doesn't exist."}]}, 404)

    @staticmethod
    def item(entry: Entry) -> dict[str, Any]:
        return {
            "id": entry.ident,
            "title": entry.title,
            "content": f"## {entry.title}\n\n{entry.text}\n",
            "date_updated": iso(entry.updated),
        }


@pytest.fixture
def directus() -> Iterator[FakeDirectus]:
    fake = FakeDirectus()
    with local_server(fake) as server:
        fake.port = server.port
        yield fake


@pytest.fixture
def served(tmp_path: Path, directus: FakeDirectus) -> Iterator[Served]:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page so the folder source is not empty.\n")
    source = f"""
[[sources]]
name = "directus"
type = "webhook"
{Directus().source_toml()}api_url = "http://127.0.0.1:{directus.port}"
api_token_env = "RAGD_TEST_DIRECTUS_API_TOKEN"
content_types = ["articles"]
"""
    env = {**Directus().environ(), "RAGD_TEST_DIRECTUS_API_TOKEN": API_TOKEN}
    daemon = Served(tmp_path, root, env=env, extra_sources=source).start().wait_ready()
    wait_until(lambda: "directus" in daemon.status()["daemon"].get("polls", {}), 30, 0.2)
    daemon.wait_idle()
    directus.fetched.clear()
    yield daemon
    daemon.stop()


def update(*keys: str, changed: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """A Flow's {{$trigger}} for an items.update of `keys`: only the changed fields."""
    payload = {
        "event": "articles.items.update",
        "payload": changed,
        "keys": list(keys),
        "collection": "articles",
    }
    headers = {"Authorization": f"Bearer {Directus().token}", "Content-Type": "application/json"}
    return compact(payload), headers


def found(served: Served, text: str) -> list[str]:
    return sorted(h["doc_id"] for h in served.query(text)["results"] if h["source"] == "directus")


def test_an_update_carrying_only_the_changed_title_is_indexed_whole_from_the_api(
    served: Served, directus: FakeDirectus
) -> None:
    directus.items["7"] = Entry("7", "Otters", "River otters hold hands while sleeping.")

    status, answer = served.post("/v1/webhooks/directus", *update("7", changed={"title": "Otters"}))

    assert (status, answer["status"]) == (202, "queued")
    wait_until(lambda: found(served, "otters sleeping") == ["directus:articles:7"], 5)
    assert directus.fetched == ["7"]


def test_an_update_of_several_items_reads_each_back(served: Served, directus: FakeDirectus) -> None:
    directus.items["8"] = Entry("8", "Beavers", "Beavers build lodges of mud.")
    directus.items["9"] = Entry("9", "Muskrats", "Muskrats build lodges of reeds.")

    status, _ = served.post("/v1/webhooks/directus", *update("8", "9", changed={"status": "x"}))

    assert status == 202
    wait_until(lambda: found(served, "lodges") == ["directus:articles:8", "directus:articles:9"], 5)
    assert sorted(directus.fetched) == ["8", "9"]


def test_an_update_of_an_item_the_api_no_longer_has_deletes_it(
    served: Served, directus: FakeDirectus
) -> None:
    directus.items["10"] = Entry("10", "Voles", "Voles dig shallow runways.")
    assert served.post("/v1/webhooks/directus", *update("10", changed={"title": "Voles"}))[0] == 202
    wait_until(lambda: found(served, "voles runways") == ["directus:articles:10"], 5)

    del directus.items["10"]
    assert served.post("/v1/webhooks/directus", *update("10", changed={"title": "V"}))[0] == 202

    wait_until(lambda: found(served, "voles runways") == [], 5)


def test_a_bulk_update_of_100_items_reads_each_back(served: Served, directus: FakeDirectus) -> None:
    keys = [str(n) for n in range(100, 200)]
    for key in keys:
        directus.items[key] = Entry(key, f"Stoat {key}", f"Stoats turn white in winter ({key}).")

    status, _ = served.post("/v1/webhooks/directus", *update(*keys, changed={"status": "x"}))

    assert status == 202
    wait_until(lambda: documents(served) == 100, 20)
    assert sorted(directus.fetched) == keys


def test_an_update_of_more_items_than_a_delivery_may_change_is_413_and_fetches_nothing(
    served: Served, directus: FakeDirectus
) -> None:
    keys = [str(n) for n in range(MAX_DELIVERY_ENTRIES + 1)]

    status, answer = served.post("/v1/webhooks/directus", *update(*keys, changed={"status": "x"}))

    assert status == 413, answer
    assert f"the limit is {MAX_DELIVERY_ENTRIES} per delivery" in answer["error"]
    served.wait_idle()
    assert directus.fetched == []


def documents(served: Served) -> int:
    return sum(s["documents"] for s in served.status()["sources"] if s["name"] == "directus")
