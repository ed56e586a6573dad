"""The daemon's periodic jobs, as `ragd serve` schedules them from [schedule]."""

from __future__ import annotations

from datetime import timedelta

from ragd.config import ScheduleConfig
from ragd.service import CLEANUP_MARGIN, ScheduledJob, scheduled_jobs


def test_the_default_schedule_follows_each_compaction_once_its_versions_can_go() -> None:
    jobs = {job.id: job for job in scheduled_jobs(ScheduleConfig())}

    assert jobs["rescan"] == ScheduledJob("rescan", timedelta(hours=1), "scan", timedelta(hours=1))
    assert jobs["compact"].first_after == timedelta(hours=6)
    follow_up = jobs["compact-cleanup"]
    assert (follow_up.kind, follow_up.interval) == ("compact", timedelta(hours=6))
    assert follow_up.first_after == timedelta(hours=6, minutes=10) + CLEANUP_MARGIN


def test_compactions_closer_than_the_cleanup_age_need_no_follow_up() -> None:
    schedule = ScheduleConfig(
        compact_interval=timedelta(seconds=90), cleanup_older_than=timedelta(seconds=60)
    )

    assert [job.id for job in scheduled_jobs(schedule)] == ["rescan", "compact"]
