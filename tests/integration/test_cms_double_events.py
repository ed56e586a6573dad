"""The double events real CMSes send for one change (Ghost 6: `post.unpublished` then
`post.deleted` for a delete; Strapi 5: `entry.update` and `entry.publish` for a publish,
two events for a delete) against a real `ragd serve`: the second does nothing, and no
document fails. The shapes are re-typed in tests/cms_deliveries.py from the measurements
in ../shared/research/integrations.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.cms_deliveries import Entry, Ghost, Sent, Strapi
from tests.integration.daemon import Served, wait_until

GHOST, STRAPI = Ghost(), Strapi()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("double")
    root = workdir / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page.\n")
    sources = "".join(
        f'\n[[sources]]\nname = "{s.name}"\ntype = "webhook"\n{s.source_toml()}'
        for s in (GHOST, STRAPI)
    )
    daemon = Served(workdir, root, env=GHOST.environ() | STRAPI.environ(), extra_sources=sources)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def deliver_all(served: Served, source: str, deliveries: list[Sent]) -> list[object]:
    """Each delivery's answer status ("queued", "duplicate", ...), in order."""
    answers = []
    for sent in deliveries:
        path = f"/v1/webhooks/{source}" + (f"?{sent.query}" if sent.query else "")
        status, answer = served.post(path, sent.body, sent.headers)
        assert status == 202, answer
        answers.append(answer["status"])
    return answers


def hits(served: Served, source: str, word: str) -> list[str]:
    return [h["doc_id"] for h in served.query(word)["results"] if h["source"] == source]


def test_a_strapi_publish_sent_as_update_then_publish_indexes_once(served: Served) -> None:
    entry = Entry("strapi-moss", "Moss", "The strapimoss grows in damp shade.")

    answers = deliver_all(served, "strapi", STRAPI.published_in_strapi5(entry))

    assert answers == ["queued", "queued"]
    (doc_id,) = wait_until(lambda: hits(served, "strapi", "strapimoss"), 30)
    served.wait_idle()
    assert len(served.events("document_indexed", doc_id=doc_id)) == 1
    assert served.events("document_failed", doc_id=doc_id) == []


# Ghost 6 sends `post.unpublished` then `post.deleted`; Strapi 5 two delete events.
@pytest.mark.parametrize(
    ("cms", "sends_delete", "word"),
    [
        (GHOST, GHOST.deleted_in_ghost6, "ghostfern"),
        (STRAPI, STRAPI.deleted_in_strapi5, "strapisedge"),
    ],
    ids=["ghost", "strapi"],
)
def test_a_delete_sent_as_two_events_deletes_once(
    served: Served, cms: Ghost | Strapi, sends_delete: Callable[[Entry], list[Sent]], word: str
) -> None:
    entry = Entry(f"{cms.name}-{word}", word.title(), f"The {word} grows in damp shade.")
    deliver_all(served, cms.name, [cms.publish(entry)])
    (doc_id,) = wait_until(lambda: hits(served, cms.name, word), 30)

    answers = deliver_all(served, cms.name, sends_delete(entry))

    assert answers == ["queued", "queued"]
    wait_until(lambda: not hits(served, cms.name, word), 30)
    served.wait_idle()
    assert len(served.events("document_deleted", doc_id=doc_id)) == 1
    assert served.events("document_failed", doc_id=doc_id) == []
