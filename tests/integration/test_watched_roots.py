"""`ragd serve` and a watched root that goes away: deleted, or moved away, then back.

While the root is gone the daemon says so (`unwatched_roots`, /healthz degraded) and
deletes nothing; once a directory is back at its path it is watched again and rescanned,
so a new file there is searchable at once, not at the next scheduled rescan (an hour).
"""

from __future__ import annotations

import json
import shutil
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon import Served, small_root, wait_until

# A bound on the wait for a new file in a restored root, far inside the hourly rescan that
# would find it otherwise.
RESTORED_WITHIN = 60.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 10))
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def _unwatched(served: Served) -> list[str]:
    roots: list[str] = served.status()["daemon"]["watcher"]["unwatched_roots"]
    return roots


def _healthz(served: Served) -> dict[str, Any]:
    """/healthz's body, whatever its status (a degraded daemon answers 503)."""
    try:
        answer: dict[str, Any] = served.get("/healthz")
    except urllib.error.HTTPError as error:
        answer = json.loads(error.read())
    return answer


def _write_zebra(root: Path) -> None:
    (root / "zebra.md").write_text("# Zebra crossings\n\nPlatypus wranglers cross here.\n")


def test_a_root_deleted_and_restored_is_watched_again_and_its_new_files_indexed(
    served: Served, tmp_path: Path
) -> None:
    root, backup = tmp_path / "docs", tmp_path / "backup"
    shutil.copytree(root, backup)
    documents = served.status()["sources"][0]["documents"]

    shutil.rmtree(root)
    wait_until(lambda: _unwatched(served), 10)
    assert _healthz(served)["degraded"] is True

    shutil.copytree(backup, root)
    _write_zebra(root)
    wait_until(lambda: served.paths_for("platypus wranglers") == ["zebra.md"], RESTORED_WITHIN)

    assert _unwatched(served) == []
    assert _healthz(served)["degraded"] is False
    assert served.wait_idle()["sources"][0]["documents"] == documents + 1


def test_a_root_moved_away_and_made_again_is_watched_at_its_path(
    served: Served, tmp_path: Path
) -> None:
    root = tmp_path / "docs"

    root.rename(tmp_path / "docs.old")
    root.mkdir()
    _write_zebra(root)
    wait_until(lambda: served.paths_for("platypus wranglers") == ["zebra.md"], RESTORED_WITHIN)

    assert _unwatched(served) == []
    assert _healthz(served)["degraded"] is False


def test_a_root_gone_while_scans_run_loses_no_document_and_each_scan_says_why(
    tmp_path: Path,
) -> None:
    daemon = Served(
        tmp_path,
        small_root(tmp_path / "docs", 10),
        schedule='[schedule]\nrescan_interval = "1s"\n',
    )
    daemon.start().wait_ready()
    try:
        documents = daemon.wait_scanned()["sources"][0]["documents"]

        shutil.rmtree(tmp_path / "docs")
        wait_until(lambda: daemon.events("source_error"), 10)
        status = daemon.wait_idle()
    finally:
        daemon.stop()

    assert "nothing was deleted" in daemon.events("source_error")[0]["error"]
    assert status["sources"][0]["documents"] == documents
