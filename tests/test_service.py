"""The daemon's periodic jobs (from [schedule]) and how a stop signal reaches it."""

from __future__ import annotations

import signal
import threading
from datetime import timedelta
from pathlib import Path

from ragd.app import Runtime
from ragd.config import ScheduleConfig, load_config
from ragd.service import CLEANUP_MARGIN, Daemon, ScheduledJob, scheduled_jobs
from tests.conftest import write_config


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


def test_a_stop_signal_is_taken_while_the_stop_events_lock_is_held(tmp_path: Path) -> None:
    daemon = Daemon(Runtime.from_config(load_config(write_config(tmp_path, tmp_path))))
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        daemon._install_signal_handlers()
        handler = signal.getsignal(signal.SIGTERM)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    assert callable(handler)
    # Python runs a handler on the main thread between two bytecodes, which can be inside
    # stop.wait() with the Event's lock held. Here it runs while that lock is held (by
    # this thread, so a handler that waits for the lock blocks instead of hanging the test).
    with daemon.stop._cond:  # type: ignore[attr-defined]
        call = threading.Thread(target=handler, args=(signal.SIGTERM, None))
        call.start()
        call.join(2)
        returned = not call.is_alive()
    call.join()
    assert returned
    assert daemon._should_stop()
