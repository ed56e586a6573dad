"""Each CMS's own deliveries against a real `ragd serve`: one daemon with a webhook source
per format, deliveries shaped and signed by tests/cms_deliveries.py as the CMS sends them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cms_deliveries import SENDERS, Entry, Sender, Sent
from tests.integration.daemon import Served, wait_until

pytestmark = pytest.mark.parametrize("sender", SENDERS, ids=[s.name for s in SENDERS])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("cms")
    root = workdir / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page so the folder source is not empty.\n")
    sources = "".join(
        f'\n[[sources]]\nname = "{s.name}"\ntype = "webhook"\n{s.source_toml()}' for s in SENDERS
    )
    environ = {k: v for s in SENDERS for k, v in s.environ().items()}
    daemon = Served(workdir, root, env=environ, extra_sources=sources)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def deliver(served: Served, sender: Sender, sent: Sent) -> tuple[int, dict[str, object]]:
    path = f"/v1/webhooks/{sender.name}" + (f"?{sent.query}" if sent.query else "")
    status, answer = served.post(path, sent.body, sent.headers)
    return status, answer


def doc_ids(served: Served, sender: Sender, text: str) -> list[str]:
    hits = served.query(text)["results"]
    return [h["doc_id"] for h in hits if h["source"] == sender.name]


def entry(sender: Sender, word: str) -> Entry:
    """An entry whose text holds a word no other test or format uses."""
    ident = f"{sender.name}-{word}"
    return Entry(ident, f"{word.title()} notes", f"The {sender.name}{word} grows in damp shade.")


def test_a_published_entry_is_searchable(served: Served, sender: Sender) -> None:
    published = entry(sender, "fern")

    status, answer = deliver(served, sender, sender.publish(published))
    expected = [f"{sender.name}:{sender.key(published)}"]
    wait_until(lambda: doc_ids(served, sender, f"{sender.name}fern") == expected, 30)

    assert (status, answer["status"]) == (202, "queued")


def test_an_update_replaces_the_entry_text(served: Served, sender: Sender) -> None:
    first = entry(sender, "moss")
    assert deliver(served, sender, sender.publish(first))[0] == 202
    wait_until(lambda: doc_ids(served, sender, f"{sender.name}moss"), 5)

    second = Entry(first.ident, first.title, f"Now about {sender.name}lichen.", first.updated + 5)
    assert deliver(served, sender, sender.publish(second))[0] == 202

    doc_id = f"{sender.name}:{sender.key(first)}"
    wait_until(lambda: doc_ids(served, sender, f"{sender.name}lichen") == [doc_id], 5)
    assert doc_ids(served, sender, f"{sender.name}moss") == []


def test_an_unpublish_or_delete_removes_the_entry(served: Served, sender: Sender) -> None:
    published = entry(sender, "sedge")
    assert deliver(served, sender, sender.publish(published))[0] == 202
    wait_until(lambda: doc_ids(served, sender, f"{sender.name}sedge"), 5)

    removed = Entry(published.ident, published.title, published.text, published.updated + 5)
    status, answer = deliver(served, sender, sender.remove(removed))

    assert (status, answer["status"]) == (202, "queued")
    wait_until(lambda: doc_ids(served, sender, f"{sender.name}sedge") == [], 5)


def test_a_wrong_signature_or_token_is_401_and_changes_nothing(
    served: Served, sender: Sender
) -> None:
    forged = sender.forged(sender.publish(entry(sender, "thistle")))

    status, answer = deliver(served, sender, forged)

    assert status == 401, answer
    served.wait_idle()
    assert doc_ids(served, sender, f"{sender.name}thistle") == []


def test_a_delivery_without_its_credentials_is_401(served: Served, sender: Sender) -> None:
    sent = sender.publish(entry(sender, "nettle"))
    credentials = {
        "authorization",
        "x-ghost-signature",
        "x-contentful-signature",
        "sanity-webhook-signature",
        "webhook-signature",
    }
    bare = Sent(
        sent.body,
        {k: v for k, v in sent.headers.items() if k.lower() not in credentials},
        sent.query,
    )

    status, answer = deliver(served, sender, bare)

    assert status == 401, answer
    assert "error" in answer


def test_a_replayed_delivery_is_a_duplicate(served: Served, sender: Sender) -> None:
    sent = sender.publish(entry(sender, "clover"))

    first = deliver(served, sender, sent)
    replay = deliver(served, sender, sent)

    assert first[1]["status"] == "queued"
    assert replay == (202, {"status": "duplicate", "delivery_id": first[1]["delivery_id"]})


def test_valid_deliveries_around_poisoned_ones_are_searchable_and_the_poisoned_refused(
    served: Served, sender: Sender
) -> None:
    # A lone surrogate (JSON's "\ud800" escape), once in the body and once in the title.
    poisoned = [
        Entry(f"{sender.name}-bad-body", "Fine title", "Half a pair \ud800 here."),
        Entry(f"{sender.name}-bad-title", "Half a pair \udfff", "A body that is fine."),
    ]
    words = ["heron", "egret", "ibis", "stork", "crane", "rail", "coot", "grebe", "loon", "tern"]
    valid = [entry(sender, word) for word in words]

    answers = [deliver(served, sender, sender.publish(e)) for e in valid[:5]]
    refusals = [deliver(served, sender, sender.publish(e)) for e in poisoned]
    answers += [deliver(served, sender, sender.publish(e)) for e in valid[5:]]

    assert [status for status, _ in answers] == [202] * 10
    assert [status for status, _ in refusals] == [400, 400]
    assert all("lone surrogate" in str(answer["error"]) for _, answer in refusals)

    def searchable() -> bool:
        return all(
            doc_ids(served, sender, f"{sender.name}{word}") == [f"{sender.name}:{sender.key(e)}"]
            for word, e in zip(words, valid, strict=True)
        )

    wait_until(searchable, 10)
