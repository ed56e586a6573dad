"""The scheduled reconcile of a Ghost source that holds posts only (`content_types =
["post"]`), against a real `ragd serve` and a fake Ghost Content API on loopback: posts
are listed and indexed, pages are never asked for.

The fake answers as Ghost's Content API does (`{"posts": [...], "meta": {"pagination":
{"page", "limit", "pages", "total", "next", "prev"}}}` for a browse, `{"posts": [{...}]}`
for one post; TryGhost/Ghost core/server/api/endpoints/posts-public.js).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cms_deliveries import Entry, Ghost
from tests.integration.daemon import Served, wait_until
from tests.local_http import Reply, Seen, json_reply, local_server

CONTENT_KEY = "ghost-content-api-key"
PAGINATION = {"page": 1, "limit": 100, "pages": 1, "next": None, "prev": None}


@dataclass
class FakeGhost:
    """One published post and one published page, as Ghost's Content API serves them."""

    posts: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)  # every path asked for
    port: int = 0

    def __call__(self, seen: Seen) -> Reply:
        self.asked.append(seen.path)
        kind = seen.path.removeprefix("/ghost/api/content/").split("/", 1)[0]
        items = [p for p in self.posts.values() if p["kind"] == kind]
        ident = seen.path.rstrip("/").rsplit("/", 1)[-1]
        if ident == kind:  # a browse
            shown = [{"id": p["id"], "updated_at": p["updated_at"]} for p in items]
            pagination = PAGINATION | {"total": len(shown)}
            return json_reply({kind: shown, "meta": {"pagination": pagination}})
        found = [p["post"] for p in items if p["id"] == ident]
        if not found:
            return json_reply({"errors": [{"type": "NotFoundError"}]}, 404)
        return json_reply({kind: found})


def published(kind: str, entry: Entry) -> dict[str, Any]:
    post = Ghost().post(entry)
    del post["status"]  # the Content API leaves it out
    return {"kind": f"{kind}s", "id": entry.ident, "updated_at": post["updated_at"], "post": post}


@pytest.fixture
def ghost() -> Iterator[FakeGhost]:
    fake = FakeGhost()
    with local_server(fake) as server:
        fake.port = server.port
        yield fake


def test_a_ghost_source_holding_posts_only_reconciles_no_pages(
    tmp_path: Path, ghost: FakeGhost
) -> None:
    ghost.posts = {
        "post": published("post", Entry("heron", "Heron", "A post about heron nests.")),
        "page": published("page", Entry("about", "About", "A page about heron feathers.")),
    }
    root = tmp_path / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page.\n")
    source = f"""
[[sources]]
name = "blog"
type = "webhook"
format = "ghost"
secret_env = "RAGD_TEST_GHOST_SECRET"
api_url = "http://127.0.0.1:{ghost.port}"
api_token_env = "RAGD_TEST_GHOST_KEY"
content_types = ["post"]
"""
    env = Ghost().environ() | {"RAGD_TEST_GHOST_KEY": CONTENT_KEY}
    served = Served(tmp_path, root, env=env, extra_sources=source).start().wait_ready()
    try:
        report = wait_until(lambda: served.status()["daemon"].get("polls", {}).get("blog"), 30)
        served.wait_idle()

        hits = served.query("heron")["results"]
        assert [h["doc_id"] for h in hits if h["source"] == "blog"] == ["blog:post:heron"]
        assert (report["listed"], report["error"]) == (1, None)
        assert not [path for path in ghost.asked if "/pages/" in path]
    finally:
        served.stop()
