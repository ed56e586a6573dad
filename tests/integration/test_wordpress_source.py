"""A WordPress source through `ragd index` (which polls each remote source once), against a
local server answering as WordPress's REST API does (wordpress-develop
class-wp-rest-posts-controller.php: a JSON list, `X-WP-Total` and `X-WP-TotalPages`
headers, `_fields` honoured, `modified_gmt` in UTC without a zone, 404
`rest_post_invalid_id` for a post that does not exist and 401 `rest_forbidden` for one
in the trash)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.integration.conftest import run_json
from tests.local_http import LocalServer, Reply, Seen, json_reply, local_server


@dataclass
class Post:
    title: str
    html: str
    modified_gmt: str


@dataclass
class FakeWordPress:
    server: LocalServer
    posts: dict[int, Post] = field(default_factory=dict)
    pages: dict[int, Post] = field(default_factory=dict)
    trashed: set[int] = field(default_factory=set)  # not listed; 401 rest_forbidden to read

    def __call__(self, seen: Seen) -> Reply:
        prefix = "/wp-json/wp/v2/"
        if not seen.path.startswith(prefix):
            return Reply(404, b"not found")
        route, _, ident = seen.path[len(prefix) :].partition("/")
        items = {"posts": self.posts, "pages": self.pages}.get(route)
        if items is None:
            return json_reply({"code": "rest_no_route"}, 404)
        if ident:
            if ident.isdigit() and int(ident) in self.trashed:
                return json_reply({"code": "rest_forbidden", "data": {"status": 401}}, 401)
            post = items.get(int(ident)) if ident.isdigit() else None
            if post is None:
                return json_reply({"code": "rest_post_invalid_id", "data": {"status": 404}}, 404)
            return json_reply(self.whole(int(ident), post))
        per_page, page = int(seen.query["per_page"]), int(seen.query["page"])
        ids = sorted(set(items) - self.trashed)
        shown = ids[(page - 1) * per_page : page * per_page]
        listed = [{"id": i, "modified_gmt": items[i].modified_gmt} for i in shown]
        pages = max(1, -(-len(ids) // per_page))
        totals = {"X-WP-Total": str(len(ids)), "X-WP-TotalPages": str(pages)}
        return json_reply(listed, headers=totals)

    def whole(self, ident: int, post: Post) -> dict[str, object]:
        return {
            "id": ident,
            "link": self.server.url(f"/?p={ident}"),
            "modified_gmt": post.modified_gmt,
            "title": {"rendered": post.title},
            "content": {"rendered": post.html, "protected": False},
        }


@pytest.fixture
def wordpress() -> Iterator[FakeWordPress]:
    with local_server() as server:
        fake = FakeWordPress(server)
        server.app = fake
        fake.posts = {
            n: Post(f"Post {n}", f"<p>Post {n} about wren song.</p>", "2026-11-01T10:00:00")
            for n in range(1, 151)
        }
        about = Post(
            "About &amp; more", "<p>About this site of hedgerows.</p>", "2026-10-01T00:00:00"
        )
        fake.pages = {2: about}
        yield fake


def config(tmp_path: Path, wordpress: FakeWordPress) -> Path:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    (root / "seed.md").write_text("# Seed\n\nA folder page.\n")
    source = (
        f'\n[[sources]]\nname = "blog"\ntype = "wordpress"\nurl = "{wordpress.server.url("/")}"\n'
    )
    return write_config(tmp_path, root, extra=source)


def blog_docs(config_path: Path, text: str) -> list[str]:
    hits = run_json(config_path, "query", text, "--mode", "bm25")["results"]
    return [h["doc_id"] for h in hits if h["source"] == "blog"]


def test_ragd_index_indexes_every_published_post_and_page_across_listing_pages(
    tmp_path: Path, wordpress: FakeWordPress
) -> None:
    path = config(tmp_path, wordpress)

    report = run_json(path, "index")

    status = run_json(path, "status")
    blog = next(s for s in status["sources"] if s["name"] == "blog")
    assert report["errors"] == [] and blog["documents"] == 151
    assert blog_docs(path, "hedgerows") == ["blog:page:2"]
    hit = run_json(path, "query", "hedgerows")["results"][0]
    assert hit["title"] == "About & more" and hit["uri"] == wordpress.server.url("/?p=2")


def test_the_next_poll_fetches_only_the_modified_post_and_deletes_the_trashed_one(
    tmp_path: Path, wordpress: FakeWordPress
) -> None:
    path = config(tmp_path, wordpress)
    run_json(path, "index")
    wordpress.server.seen.clear()
    moved = "2026-11-20T08:00:00"
    wordpress.posts[7] = Post("Post 7", "<p>Post 7 now about dipper nests.</p>", moved)
    wordpress.trashed.add(8)

    run_json(path, "index")

    single = [s.path for s in wordpress.server.seen if s.path.rstrip("/")[-1].isdigit()]
    # The modified post fetched, the trashed one confirmed gone (401), no other read.
    assert sorted(single) == ["/wp-json/wp/v2/posts/7", "/wp-json/wp/v2/posts/8"]
    assert blog_docs(path, "dipper nests") == ["blog:post:7"]
    assert "blog:post:8" not in blog_docs(path, "post 8 about wren song")
    blog = next(s for s in run_json(path, "status")["sources"] if s["name"] == "blog")
    assert blog["documents"] == 150
