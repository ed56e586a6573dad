"""The daemon's periodic jobs (from [schedule]) and how a stop reaches its main thread."""

from __future__ import annotations

import os
import signal
import threading
from datetime import timedelta

from ragd.config import ScheduleConfig
from ragd.service.daemon.scheduler import CLEANUP_MARGIN, ScheduledJob, scheduled_jobs
from ragd.service.daemon.stopping import StopSignal


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


def test_a_stop_signal_wakes_the_waiting_main_thread() -> None:
    stopping = StopSignal()
    try:
        with stopping.installed():
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
            stopping.wait()
            assert stopping.signalled
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        stopping.close()


def test_a_thread_wakes_the_waiting_main_thread_without_a_signal() -> None:
    stopping = StopSignal()
    try:
        threading.Timer(0.2, stopping.wake).start()
        stopping.wait()
        assert not stopping.signalled
    finally:
        stopping.close()


def test_the_signal_handler_takes_no_lock() -> None:
    # Python runs a handler on the main thread between two bytecodes, which can be inside
    # Event.wait with the Event's lock held. The handler only sets a flag, so it returns
    # even while every lock of the daemon is held.
    stopping = StopSignal()
    try:
        with stopping.installed():
            handler = signal.getsignal(signal.SIGTERM)
            assert callable(handler)
            call = threading.Thread(target=handler, args=(signal.SIGTERM, None))
            call.start()
            call.join(2)
            assert not call.is_alive()
            assert stopping.signalled
    finally:
        stopping.close()
