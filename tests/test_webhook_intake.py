"""WebhookIntake: what each delivery is answered, and what it leaves on a real SQLite job
queue. The formats here are small fakes of the WebhookFormat protocol: the real ones
are specified in test_cms_formats.py; this is the intake's own behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from ragd.service.webhook_intake import WebhookIntake
from ragd.sources.cms.formats import Parsed, WebhookRequest, body_delivery_id
from ragd.sources.deliveries import Delivery
from ragd.sources.webhooks import WebhookRejected
from ragd.stores.jobs import JobQueue

REQUEST = WebhookRequest({"authorization": "Bearer t"}, b'{"id": "a"}')


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


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[JobQueue]:
    jobs = JobQueue(tmp_path / "state.db")
    yield jobs
    jobs.close()


def test_a_delivery_is_queued_once_and_its_repeat_is_a_duplicate(queue: JobQueue) -> None:
    intake = WebhookIntake({"cms": FakeFormat(UPSERT)})

    first = intake.accept(queue, "cms", REQUEST)
    again = intake.accept(queue, "cms", REQUEST)

    assert first == ("queued", (202, {"status": "queued", "delivery_id": "fake:1"}))
    assert again == ("duplicate", (202, {"status": "duplicate", "delivery_id": "fake:1"}))
    assert queue.depth() == 1


def test_an_unknown_source_is_404_naming_at_most_64_characters_of_it(queue: JobQueue) -> None:
    outcome, (status, answer) = WebhookIntake({}).accept(queue, "x" * 5000, REQUEST)

    assert (outcome, status) == ("unknown_source", 404)
    assert answer["error"] == f"unknown webhook source '{'x' * 64}'"


def test_an_ignored_event_is_202_ignored_with_its_reason_and_queues_nothing(
    queue: JobQueue,
) -> None:
    intake = WebhookIntake({"cms": FakeFormat(Parsed.ignore("a draft"))})

    answer = intake.accept(queue, "cms", REQUEST)

    assert answer == ("ignored", (202, {"status": "ignored", "reason": "a draft"}))
    assert queue.depth() == 0


def test_a_thin_upsert_without_a_read_api_is_400(queue: JobQueue) -> None:
    intake = WebhookIntake({"cms": FakeFormat(Parsed((Delivery("upsert", "a"),)))})

    outcome, (status, answer) = intake.accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("malformed", 400)
    assert "fetch_url or api_url" in answer["error"] and queue.depth() == 0


def test_a_rejected_signature_keeps_its_status_and_message(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_authenticate=WebhookRejected(401, "bad signature"))

    answer = WebhookIntake({"cms": fake}).accept(queue, "cms", REQUEST)

    assert answer == ("unauthorized", (401, {"error": "bad signature"}))


def test_a_checker_that_crashes_lets_nothing_through(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_authenticate=ValueError("invalid literal"))

    outcome, (status, answer) = WebhookIntake({"cms": fake}).accept(queue, "cms", REQUEST)

    assert (outcome, status) == ("unauthorized", 401)
    assert answer["error"].endswith("(internal error: ValueError)")
    assert "invalid literal" not in answer["error"] and queue.depth() == 0


def test_a_reader_that_crashes_is_a_400_not_a_server_error(queue: JobQueue) -> None:
    fake = FakeFormat(UPSERT, raises_in_parse=TypeError("unhashable type: 'list'"))

    outcome, (status, answer) = WebhookIntake({"cms": fake}).accept(queue, "cms", REQUEST)

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
    intake = WebhookIntake({"cms": FakeFormat(UPSERT, delivery_id=body_delivery_id("f", b"x"))})

    assert [intake.accept(queue, "cms", REQUEST)[0] for _ in range(2)] == ["queued", "duplicate"]
