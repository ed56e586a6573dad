"""The daemon's periodic jobs: what [schedule] asks for, and apscheduler running it.

Owns which jobs exist (a full rescan, LanceDB compaction and its follow-up cleanup, and
a poll of each remote source), when each first runs, and the one apscheduler instance of
`ragd serve`. A rescan or a compaction only queues work on the durable queue, which the
writer thread does; a poll runs on the scheduler's own thread (ragd.service.daemon.poller).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from ragd.config import ScheduleConfig
from ragd.stores.jobs import JobKind
from ragd.stores.records import format_time

# How long after its versions pass `cleanup_older_than` a compaction's follow-up runs.
CLEANUP_MARGIN = timedelta(minutes=1)


class ScheduledJob(NamedTuple):
    """A periodic job: its id, how often it runs, what it queues, and when it first runs."""

    id: str
    interval: timedelta
    kind: JobKind
    first_after: timedelta


def scheduled_jobs(schedule: ScheduleConfig) -> list[ScheduledJob]:
    """The daemon's periodic jobs for a [schedule].

    A compaction's cleanup keeps the versions younger than `cleanup_older_than` (readers
    may still be on them), and with them the files the compaction rewrote: about the
    table's size again until the next compaction, 6 hours later by default. LanceDB
    cleans up only inside a compaction, so a second one runs once those versions are
    old enough. When compactions are that frequent anyway, the next one does it.
    """
    jobs = [
        ScheduledJob("rescan", schedule.rescan_interval, "scan", schedule.rescan_interval),
        ScheduledJob("compact", schedule.compact_interval, "compact", schedule.compact_interval),
    ]
    follow_up = schedule.cleanup_older_than + CLEANUP_MARGIN
    if follow_up < schedule.compact_interval:
        first = schedule.compact_interval + follow_up
        jobs.append(ScheduledJob("compact-cleanup", schedule.compact_interval, "compact", first))
    return jobs


class PollJob(NamedTuple):
    """A remote source's poll: its name, how often, and what runs it."""

    source: str
    interval: timedelta
    run: Callable[[str], None]


# A source is first polled this soon after start, as the folders are first scanned.
FIRST_POLL_AFTER = timedelta(seconds=2)


class Scheduler:
    """The periodic jobs of one daemon, each calling `enqueue(kind)` when due, and the
    polls of its remote sources."""

    def __init__(
        self,
        schedule: ScheduleConfig,
        enqueue: Callable[[JobKind], None],
        polls: Sequence[PollJob] = (),
    ) -> None:
        self._scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": int(schedule.misfire_grace.total_seconds()),
            },
        )
        self._jobs = scheduled_jobs(schedule)
        self._enqueue = enqueue
        self._polls = list(polls)

    def start(self) -> None:
        """Add the jobs, each first due `first_after` from now, and start the thread."""
        now = datetime.now(UTC)
        for job in self._jobs:
            self._scheduler.add_job(
                self._enqueue,
                IntervalTrigger(seconds=max(1, int(job.interval.total_seconds()))),
                args=[job.kind],
                id=job.id,
                replace_existing=True,
                next_run_time=now + max(job.first_after, timedelta(seconds=1)),
            )
        for poll in self._polls:
            self._scheduler.add_job(
                poll.run,
                IntervalTrigger(seconds=max(60, int(poll.interval.total_seconds()))),
                args=[poll.source],
                id=f"poll:{poll.source}",
                replace_existing=True,
                next_run_time=now + FIRST_POLL_AFTER,
            )
        self._scheduler.start()

    def next_runs(self) -> dict[str, str]:
        """When each job runs next (ISO 8601 UTC), by job id; none before `start`."""
        return {
            job.id: format_time(job.next_run_time)
            for job in self._scheduler.get_jobs()
            if job.next_run_time is not None
        }

    def stop(self) -> None:
        """Stop the thread; a job running now finishes on its own."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
