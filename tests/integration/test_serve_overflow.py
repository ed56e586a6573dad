"""A burst of file creations that overflows the inotify queue is recovered by a rescan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.daemon import Served, wait_until

QUEUE_LIMIT = Path("/proc/sys/fs/inotify/max_queued_events")
BURST = 20_000


@pytest.fixture
def small_inotify_queue() -> Iterator[None]:
    """Shrink the kernel's per-instance event queue so the burst surely overflows it.

    The limit applies to inotify instances created afterwards, so set it before the
    daemon starts. Needs root, as CI has.
    """
    old = QUEUE_LIMIT.read_text()
    try:
        QUEUE_LIMIT.write_text("256")
    except OSError as exc:
        pytest.fail(f"cannot lower {QUEUE_LIMIT} ({exc}); run this test as root")
    try:
        yield
    finally:
        QUEUE_LIMIT.write_text(old)


def test_a_burst_that_overflows_the_watch_queue_ends_fully_indexed(
    tmp_path: Path, small_inotify_queue: None
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nThe first page.\n")
    daemon = Served(tmp_path, root)
    try:
        daemon.start().wait_ready()
        daemon.wait_scanned()

        burst = root / "burst"
        burst.mkdir()
        for n in range(BURST):
            (burst / f"{n:05}.md").write_text(f"# Page {n}\n\nBurst page number {n}.\n")

        def all_indexed() -> bool:
            return bool(daemon.status()["sources"][0]["documents"] == BURST + 1)

        wait_until(all_indexed, 150, interval=1.0)
        status = daemon.wait_idle()
        assert status["daemon"]["watcher"]["overflows"] >= 1
        # A fresh reader may trail the writer's last commit briefly (Tantivy reloads on a timer).
        wait_until(lambda: daemon.status()["stores_agree"], 5)
        assert daemon.events("watch_events_lost")
    finally:
        daemon.stop()
