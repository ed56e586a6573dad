"""WebhookIntake: what each delivery is answered, and what it leaves on a real SQLite job
queue. The formats here are small fakes of the WebhookFormat protocol: the real ones
are specified in test_cms_formats.py; this is the intake's own behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from ragd.service.daemon.intake import MAX_DELIVERY_ENTRIES, WebhookIntake
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery
from ragd.sources.webhooks import WebhookRejected
from ragd.stores.jobs import JobQueue

REQUEST = WebhookRequest({"authorization": "Bearer t"}, b'{"id": "a"}')
BODY_LIMIT = 1_048_576  # [http] max_body_bytes' default


@dataclass
class FakeFormat:
    """Authenticates by a fixed id, parses to what it is given, or raises."""

    parsed: Parsed
    delivery_id: str = "fake:1"
    raises_in_authenticate: Exception | None = None
    raises_in_parse: Exception | None = None
    fetches_thin_entries: bool = False
    name: str = "fake"

    def authenticate(self, request: WebhookRequest, *, now: float) -> str:
        if self.raises_in_authenticate is not None:
            raise self.raises_in_authenticate
        return self.delivery_id

    def parse(self, request: WebhookRequest) -> Parsed:
        if self.raises_in_parse is not None:
            raise self.raises_in_parse
        return self.parsed


UPSERT = Parsed((Delivery("upsert", "a", content="# A\n\ntext\n"),))


def intake_of(formats: dict[str, FakeFormat], max_body_bytes: int = BODY_LIMIT) -> WebhookIntake:
    return WebhookIntake(formats, max_body_bytes=max_body_bytes)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[JobQueue]:
    jobs = JobQueue(tmp_path / "state.db")
    yield jobs
    jobs.close()


def test_a_delivery_is_queued_once_and_its_repeat_is_a_duplicate(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(UPSERT)})

    first = intake.accept(queue, "cms", REQUEST)
    again = intake.accept(queue, "cms", REQUEST)

    assert first == ("queued", (202, {"status": "queued", "delivery_id": "fake:1"}))
    assert again == ("duplicate", (202, {"status": "duplicate", "delivery_id": "fake:1"}))
    assert queue.depth() == 1


def test_an_unknown_source_is_404_naming_at_most_64_characters_of_it(queue: JobQueue) -> None:
    outcome, (status, answer) = intake_of({}).accept(queue, "x" * 5000, REQUEST)

    assert (outcome, status) == ("unknown_source", 404)
    assert answer["error"] == f"unknown webhook source '{'x' * 64}'"


def test_an_ignored_event_is_202_ignored_with_its_reason_and_queues_nothing(
    queue: JobQueue,
) -> None:
    intake = intake_of({"cms": FakeFormat(Parsed.ignore("a draft"))})

    answer = intake.accept(queue, "cms", REQUEST)

    assert answer == ("ignored", (202, {"status": "ignored", "reason": "a draft"}))
    assert queue.depth() == 0


def test_a_thin_upsert_without_a_read_api_is_400(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(Parsed((Delivery("upsert", "a"),)))})

    outcome, (status, answer) = intake.accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("malformed", 400)
    assert "fetch_url or api_url" in answer["error"] and queue.depth() == 0


def test_a_rejected_signature_keeps_its_status_and_message(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_authenticate=WebhookRejected(401, "bad signature"))

    answer = intake_of({"cms": fake}).accept(queue, "cms", REQUEST)

    assert answer == ("unauthorized", (401, {"error": "bad signature"}))


def test_a_checker_that_crashes_lets_nothing_through(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_authenticate=ValueError("invalid literal"))

    outcome, (status, answer) = intake_of({"cms": fake}).accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("unauthorized", 401)
    assert answer["error"].endswith("(internal error: ValueError)")
    assert "invalid literal" not in answer["error"] and queue.depth() == 0


def test_a_reader_that_crashes_is_a_400_not_a_server_error(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_parse=TypeError("unhashable type: 'list'"))

    outcome, (status, answer) = intake_of({"cms": fake}).accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("malformed", 400)
    assert answer["error"] == "the delivery could not be read (internal error: TypeError)"
    assert queue.depth() == 0


def test_a_body_hash_id_counts_as_a_repeat_only_for_a_while(queue: JobQueue) -> None:
    # A sender without delivery ids: the same body later is a change back (A, B, A).
    entries = [("a", '{"event": "upsert"}', None)]
    assert queue.accept_delivery("cms", "fake:sha256:1", entries, repeat_after=timedelta(hours=1))

    again = queue.accept_delivery("cms", "fake:sha256:1", entries, repeat_after=timedelta(hours=1))
    later = queue.accept_delivery("cms", "fake:sha256:1", entries, repeat_after=timedelta(0))

    assert (again, later) == (False, True)


def test_an_intake_takes_a_body_hash_id_for_a_repeat_within_ten_minutes(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(UPSERT, delivery_id=body_delivery_id("f", b"x"))})

    assert [intake.accept(queue, "cms", REQUEST)[0] for _ in range(2)] == ["queued", "duplicate"]


def bulk(count: int, content: str | None = None, title: str | None = None) -> Parsed:
    """One delivery that upserts `count` entries, each with the same text (a bulk update)."""
    return Parsed(tuple(Delivery("upsert", f"k{i}", title, content=content) for i in range(count)))


def test_a_delivery_whose_text_over_all_its_entries_exceeds_the_body_limit_is_413(
    queue: JobQueue,
) -> None:
    # The finding's shape: one update of 300 keys, each given the same 99 KB body.
    intake = intake_of({"cms": FakeFormat(bulk(300, "x" * 99_000), fetches_thin_entries=True)})

    outcome, (status, answer) = intake.accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("too_large", 413)
    assert answer == {
        "error": "the delivery carries 29700000 characters of text over 300 entries; "
        f"the limit is {BODY_LIMIT} per delivery ([http] max_body_bytes)"
    }
    assert queue.depth() == 0


def test_titles_count_toward_a_deliverys_text(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(bulk(2, "x" * 500, title="t" * 30))}, 1000)

    outcome, (status, _) = intake.accept(queue, "cms", REQUEST)

    assert (outcome, status, queue.depth()) == ("too_large", 413, 0)


def test_a_delivery_with_exactly_as_much_text_as_the_limit_is_queued(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(bulk(4, "x" * 240, title="t" * 10))}, 1000)

    assert intake.accept(queue, "cms", REQUEST)[0] == "queued"
    assert queue.depth() == 4


def test_a_delivery_of_more_entries_than_the_limit_is_413_naming_it(queue: JobQueue) -> None:
    deletes = tuple(Delivery("delete", f"k{i}") for i in range(MAX_DELIVERY_ENTRIES + 1))
    intake = intake_of({"cms": FakeFormat(Parsed(deletes))})

    outcome, (status, answer) = intake.accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("too_large", 413)
    assert answer == {
        "error": f"the delivery changes {MAX_DELIVERY_ENTRIES + 1} entries; "
        f"the limit is {MAX_DELIVERY_ENTRIES} per delivery"
    }
    assert queue.depth() == 0


def test_a_bulk_update_of_entries_fetched_back_is_queued_up_to_the_entry_limit(
    queue: JobQueue,
) -> None:
    intake = intake_of({"cms": FakeFormat(bulk(MAX_DELIVERY_ENTRIES), fetches_thin_entries=True)})

    assert intake.accept(queue, "cms", REQUEST)[0] == "queued"
    assert queue.depth() == MAX_DELIVERY_ENTRIES


def test_a_bulk_update_of_50_entries_with_a_small_body_is_queued(queue: JobQueue) -> None:
    intake = intake_of({"cms": FakeFormat(bulk(50, "# Note\n\n" + "word " * 400))})

    assert intake.accept(queue, "cms", REQUEST)[0] == "queued"
    assert queue.depth() == 50
