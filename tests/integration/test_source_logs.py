"""What `ragd serve` logs about its sources: the `serving` line names every configured
source with its kind, and an ignored delivery's line says why it was ignored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cms_deliveries import Entry, Strapi
from tests.integration.daemon import Served, free_port, wait_until

STRAPI = Strapi()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("logs")
    root = workdir / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page.\n")
    # Nothing answers on this port: the WordPress source's polls fail, and it is named anyway.
    blog = f"http://127.0.0.1:{free_port()}/"
    sources = (
        f'\n[[sources]]\nname = "strapi"\ntype = "webhook"\n{STRAPI.source_toml()}'
        f'\n[[sources]]\nname = "blog"\ntype = "wordpress"\nurl = "{blog}"\n'
    )
    daemon = Served(workdir, root, env=STRAPI.environ(), extra_sources=sources)
    daemon.start().wait_ready()
    yield daemon
    daemon.stop()


def test_the_serving_line_names_every_configured_source_with_its_kind(served: Served) -> None:
    (serving,) = served.events("serving")

    assert serving["sources"] == {"docs": "folder", "strapi": "webhook:strapi", "blog": "wordpress"}


def test_an_ignored_deliverys_line_says_why_it_was_ignored(served: Served) -> None:
    sent = STRAPI.draft(Entry("draft-1", "Draft", "Not yet published."))

    status, answer = served.post("/v1/webhooks/strapi", sent.body, sent.headers)

    assert (status, answer["status"]) == (202, "ignored")
    (line,) = wait_until(lambda: served.events("webhook_delivery", outcome="ignored"), 10)
    assert line["reason"] == "a draft (publishedAt is null) is not published content"
    assert line["source"] == "strapi"
