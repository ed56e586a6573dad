"""A bulk delivery against a real `ragd serve`: a Directus `items.update` names many keys
and carries one payload for all of them, so without a bound one body of [http]
max_body_bytes becomes keys x body of text to index. Deliveries are shaped as Directus
sends them (tests/cms_deliveries.py); the source has no read API, so an update that
carries the body field upserts that body under every key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cms_deliveries import Directus, Sent
from tests.integration.daemon import Served, wait_until

DIRECTUS = Directus()
BODY_LIMIT = 1_048_576  # [http] max_body_bytes' default, which this daemon keeps


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("bulk")
    root = workdir / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA folder page so the folder source is not empty.\n")
    source = f'\n[[sources]]\nname = "directus"\ntype = "webhook"\n{DIRECTUS.source_toml()}'
    daemon = Served(workdir, root, env=DIRECTUS.environ(), extra_sources=source)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def deliver(served: Served, sent: Sent) -> tuple[int, dict[str, object]]:
    status, answer = served.post("/v1/webhooks/directus", sent.body, sent.headers)
    return status, answer


def found(served: Served, text: str) -> list[str]:
    return [h["doc_id"] for h in served.query(text, k=100)["results"] if h["source"] == "directus"]


def test_an_update_whose_keys_times_body_exceed_the_body_limit_is_413_and_indexes_nothing(
    served: Served,
) -> None:
    # 40 keys x a 30 KB body: the body is well under the limit, what it implies is not.
    body = "## Bulk\n\n" + "The hornbeamwood hedge is trimmed in late summer. " * 600
    keys = [f"bulk-{i}" for i in range(40)]
    sent = DIRECTUS.update(keys, {"title": "Hedges", "content": body})
    assert len(sent.body) < BODY_LIMIT / 30

    status, answer = deliver(served, sent)

    assert status == 413, answer
    assert answer == {
        "error": f"the delivery carries {40 * (len(body) + len('Hedges'))} characters of text "
        f"over 40 entries; the limit is {BODY_LIMIT} per delivery ([http] max_body_bytes)"
    }
    assert served.status()["daemon"]["queue_depth"] == 0
    served.wait_idle()
    assert found(served, "hornbeamwood") == []


def test_an_update_of_50_keys_with_a_small_body_indexes_every_key(served: Served) -> None:
    keys = [f"note-{i}" for i in range(50)]
    changed = {"title": "Notes", "content": "## Notes\n\nThe quillwort grows underwater.\n"}

    status, answer = deliver(served, DIRECTUS.update(keys, changed))

    assert (status, answer["status"]) == (202, "queued")
    expected = sorted(f"directus:articles:{key}" for key in keys)
    wait_until(lambda: sorted(found(served, "quillwort")) == expected, 10)
