"""Passes asked of the daemon's writer (`ragd index` beside `ragd serve`), over real stores
and a real job queue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.errors import RagdError
from tests.writer_harness import WriterHarness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[WriterHarness]:
    h = WriterHarness(tmp_path)
    yield h
    h.close()


def test_a_requested_pass_runs_after_the_jobs_queued_before_it(harness: WriterHarness) -> None:
    harness.entries(("page", "# Page\n\nThe wombat digs.\n"))
    asked = harness.writer.request_pass(full=False)

    harness.start()
    report = asked.result(timeout=30)

    record = harness.document("page")
    assert record is not None and record.status == "indexed"
    assert harness.stats.jobs_done == 1
    assert not report.interrupted


def test_requests_made_while_a_pass_waits_share_it(harness: WriterHarness) -> None:
    first = harness.writer.request_pass(full=False)
    second = harness.writer.request_pass(full=False)
    other = harness.writer.request_pass(full=True)

    harness.start()

    assert first is second and other is not first
    assert first.result(timeout=30) is second.result(timeout=30)
    other.result(timeout=30)


def test_a_pass_still_asked_for_when_the_writer_stops_fails_rather_than_waits(
    harness: WriterHarness,
) -> None:
    asked = harness.writer.request_pass(full=False)
    harness.stop.set()  # the writer's loop ends before it takes anything

    harness.start()

    with pytest.raises(RagdError, match="stopped before the pass ran"):
        asked.result(timeout=30)
