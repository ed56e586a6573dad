"""The job queue's rules, on a real SQLite state.db: what stays queued, what is taken,
and which payload a job keeps."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.stores.jobs import Job, JobQueue

MAX = 3


def no_wait(attempts: int) -> float:
    return 0.0


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[JobQueue]:
    jobs = JobQueue(tmp_path / "state.db")
    yield jobs
    jobs.close()


def only(queue: JobQueue) -> Job:
    (job,) = queue.take()
    return job


def fail_once(queue: JobQueue) -> bool:
    return queue.failed(only(queue), max_attempts=MAX, retry_in=no_wait)


def test_a_job_is_used_up_on_exactly_its_last_allowed_attempt(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")

    outcomes = [fail_once(queue) for _ in range(MAX)]

    assert outcomes == [False] * (MAX - 1) + [True]


def test_a_failed_job_stays_queued_even_when_used_up(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")

    for _ in range(MAX):
        fail_once(queue)

    assert queue.depth() == 1  # the writer records the failure, then marks it done


def test_a_failed_job_is_not_taken_again_before_its_retry_time(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")
    queue.enqueue("path", "docs", "b.md")
    first = queue.take()[0]

    queue.failed(first, max_attempts=MAX, retry_in=lambda attempts: 60.0)

    assert [j.key for j in queue.take()] == ["b.md"]


def test_a_failed_job_is_taken_again_once_its_retry_time_passed(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")
    queue.failed(only(queue), max_attempts=MAX, retry_in=lambda attempts: 0.05)
    time.sleep(0.1)

    job = only(queue)

    assert (job.key, job.attempts) == ("a.md", 1)


def test_the_retry_wait_is_asked_with_the_attempts_so_far(queue: JobQueue) -> None:
    asked: list[int] = []

    def retry_in(attempts: int) -> float:
        asked.append(attempts)
        return 0.0

    queue.enqueue("path", "docs", "a.md")
    for _ in range(3):
        queue.failed(only(queue), max_attempts=10, retry_in=retry_in)

    assert asked == [1, 2, 3]


def test_done_keeps_a_job_that_was_enqueued_again_while_it_ran(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")
    taken = queue.take()

    queue.enqueue("path", "docs", "a.md")  # the file changed again meanwhile
    queue.done(taken)

    again = only(queue)
    assert again.generation == taken[0].generation + 1


def test_done_removes_the_generation_it_took(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")

    queue.done(queue.take())

    assert queue.depth() == 0


def test_a_job_enqueued_again_starts_its_attempts_afresh(queue: JobQueue) -> None:
    queue.enqueue("path", "docs", "a.md")
    for _ in range(MAX - 1):
        fail_once(queue)

    queue.enqueue("path", "docs", "a.md")

    assert only(queue).attempts == 0
    assert not fail_once(queue)


def test_a_failure_of_a_generation_enqueued_again_meanwhile_is_not_counted(
    queue: JobQueue,
) -> None:
    queue.enqueue("path", "docs", "a.md")
    taken = only(queue)
    queue.enqueue("path", "docs", "a.md")

    used_up = queue.failed(taken, max_attempts=1, retry_in=no_wait)

    assert not used_up
    assert only(queue).attempts == 0


def test_the_newest_dated_payload_wins_over_the_latest_arriving(queue: JobQueue) -> None:
    newer = ("post-1", '{"title": "newer"}', "2026-01-02T00:00:00.000000Z")
    older = ("post-1", '{"title": "older"}', "2026-01-01T00:00:00.000000Z")

    queue.enqueue_entries("cms", [newer])
    queue.enqueue_entries("cms", [older])

    job = only(queue)
    assert (job.payload, job.version) == (newer[1], newer[2])


def test_the_latest_arriving_payload_wins_when_it_is_the_newest(queue: JobQueue) -> None:
    queue.enqueue_entries("cms", [("post-1", '{"title": "a"}', "2026-01-01T00:00:00.000000Z")])
    queue.enqueue_entries("cms", [("post-1", '{"title": "b"}', "2026-01-02T00:00:00.000000Z")])

    assert only(queue).payload == '{"title": "b"}'


def test_a_queue_from_before_retries_is_opened_and_its_jobs_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
            "source TEXT NOT NULL DEFAULT '', key TEXT NOT NULL DEFAULT '', "
            "generation INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, "
            "enqueued_at TEXT NOT NULL, payload TEXT, version TEXT, UNIQUE (kind, source, key))"
        )
        conn.execute(
            "INSERT INTO jobs (kind, source, key, enqueued_at) VALUES ('path', 'docs', 'a.md', 'x')"
        )
    queue = JobQueue(path)
    try:
        assert [j.key for j in queue.take()] == ["a.md"]
    finally:
        queue.close()
