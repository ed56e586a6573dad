"""The daemon's writer thread when jobs fail: real stores and job queue on disk, a fake
embedder. A poisoned job is one queued with a content no encoding can store (a lone
surrogate: what a ragd from before the intake refused it could have queued)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.service.daemon.writer import batch_parts
from ragd.stores.jobs import Job, JobKind
from tests.writer_harness import WriterHarness as Harness

ATTEMPTS = 3
POISON = "# Poisoned\n\nHalf a pair: \ud800.\n"


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path, max_attempts=ATTEMPTS)
    yield h
    h.close()


def valid(n: int) -> tuple[str, str]:
    return f"page-{n}", f"# Page {n}\n\nThe quokka number {n} is here.\n"


def test_a_poisoned_job_does_not_fail_the_jobs_taken_with_it(harness: Harness) -> None:
    harness.entries(
        *(valid(n) for n in range(5)), ("poisoned", POISON), *(valid(n) for n in range(5, 10))
    )

    harness.run_until_idle()

    indexed = [harness.document(f"page-{n}") for n in range(10)]
    assert [d.status if d else None for d in indexed] == ["indexed"] * 10
    assert harness.stats.jobs_done == 10


def test_a_job_that_keeps_failing_becomes_a_failed_document_with_its_reason(
    harness: Harness,
) -> None:
    harness.entries(valid(1), ("poisoned", POISON))

    harness.run_until_idle()

    record = harness.document("poisoned")
    assert record is not None and record.status == "failed"
    assert record.error is not None
    assert f"failed {ATTEMPTS} times" in record.error and "UnicodeEncodeError" in record.error
    assert harness.stats.jobs_dropped == 1


def test_only_the_job_that_fails_alone_counts_failed_attempts(harness: Harness) -> None:
    harness.entries(valid(1), valid(2), ("poisoned", POISON), valid(3))
    counted: list[str] = []
    failed = harness.queue.failed

    def counting(job, **kwargs):  # type: ignore[no-untyped-def]
        counted.append(job.key)
        return failed(job, **kwargs)

    harness.queue.failed = counting  # type: ignore[method-assign]

    harness.run_until_idle()

    assert counted == ["poisoned"] * ATTEMPTS


def test_a_failed_document_indexed_before_loses_its_old_chunks(harness: Harness) -> None:
    harness.entries(("page", "# Page\n\nThe wombat digs.\n"))
    harness.run_until_idle()
    harness.entries(("page", POISON))

    deadline = time.monotonic() + 30
    while (record := harness.document("page")) is not None and record.status != "failed":
        assert time.monotonic() < deadline
        time.sleep(0.02)

    assert record is not None and record.chunk_count == 0
    assert harness.stores.manifest.chunks_of("cms:page") == []


def test_a_poisoned_delivery_older_than_the_applied_one_leaves_the_document_as_it_is(
    harness: Harness,
) -> None:
    harness.entries(("page", "# Page\n\nThe wombat digs.\n"), version="2026-02-01T00:00:00Z")
    harness.run_until_idle()
    harness.entries(("page", POISON), version="2026-01-01T00:00:00Z")  # late, and poisoned

    harness.run_until_idle()

    record = harness.document("page")
    assert record is not None and (record.status, record.chunk_count) == ("indexed", 1)
    assert harness.stats.jobs_dropped == 1


def test_a_housekeeping_job_that_keeps_failing_is_given_up_and_listed(tmp_path: Path) -> None:
    def compact() -> None:
        raise OSError(28, "No space left on device")

    harness = Harness(tmp_path, compact=compact, max_attempts=ATTEMPTS)
    try:
        harness.queue.enqueue("compact")

        harness.run_until_idle()

        (dropped,) = harness.stats.dropped
        assert dropped.kind == "compact"
        assert "No space left on device" in dropped.reason
        assert harness.stats.to_json()["dropped_jobs"] == [dropped._asdict()]
        (event,) = harness.stats.recent_events()  # the status page's feed
        assert (event.action, event.doc_id, event.reason) == ("gave up", "compact", dropped.reason)
    finally:
        harness.close()


def test_a_failed_job_waits_for_its_retry_while_later_jobs_are_done(tmp_path: Path) -> None:
    harness = Harness(
        tmp_path, retry_base=60.0, max_attempts=ATTEMPTS
    )  # a retry that does not come in the test
    try:
        harness.entries(("poisoned", POISON))
        harness.start()
        deadline = time.monotonic() + 30
        while harness.stats.errors == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)

        harness.entries(valid(1))
        while harness.stats.jobs_done == 0:  # the later job applied and marked done
            assert time.monotonic() < deadline, "a later job waited behind the failed one"
            time.sleep(0.02)

        record = harness.document("page-1")
        assert record is not None and record.status == "indexed"

        assert harness.document("poisoned") is None  # still queued, waiting for its retry
        assert harness.queue.depth() == 1
    finally:
        harness.close()


def test_an_error_of_the_queue_itself_costs_the_writer_one_round_not_its_thread(
    harness: Harness,
) -> None:
    take = harness.queue.take
    calls = 0

    def locked_once(limit: int = 500) -> list[Job]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise sqlite3.OperationalError("database is locked")
        return take(limit)

    harness.queue.take = locked_once  # type: ignore[method-assign]
    harness.entries(valid(1))

    harness.run_until_idle()

    assert harness.writer.is_alive()
    record = harness.document("page-1")
    assert record is not None and record.status == "indexed"


def job(job_id: int, kind: JobKind) -> Job:
    return Job(job_id, kind, "docs", f"k{job_id}", 0, 0, "2026-12-06T00:00:00Z")


def test_a_failed_batch_is_tried_again_in_halves() -> None:
    jobs = [job(n, "path") for n in range(5)]

    assert batch_parts(jobs) == [jobs[:2], jobs[2:]]


def test_a_failed_batch_tries_each_whole_pass_alone_and_the_rest_together() -> None:
    scan, compact = job(1, "scan"), job(4, "compact")
    rest = [job(2, "path"), job(3, "entry")]

    assert batch_parts([scan, *rest, compact]) == [[scan], [compact], rest]
