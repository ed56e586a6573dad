"""`ragd status` shows a running daemon's section, and reads the stores when none runs."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_config
from tests.integration.conftest import ragd_in_process, run_json
from tests.integration.daemon import Served, small_root


def test_status_carries_the_running_daemons_section(tmp_path: Path) -> None:
    served = Served(tmp_path, small_root(tmp_path / "docs", 10)).start().wait_ready()
    try:
        served.wait_scanned()
        report = run_json(served.config, "status")
        text = ragd_in_process(served.config, "status").stdout
        check = ragd_in_process(served.config, "status", "--check")
    finally:
        served.stop()

    assert served.process is not None
    daemon = report["daemon"]
    assert isinstance(daemon, dict)
    assert daemon["pid"] == served.process.pid
    assert daemon["queue_depth"] == 0
    assert daemon["watcher"]["watching"] is True
    assert set(daemon["next_jobs"]) == {"rescan", "compact", "compact-cleanup"}
    assert f"daemon: pid {served.process.pid}, ok" in text
    assert "watcher: watching, 0 overflows" in text
    assert daemon["writer_alive"] is True
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout == ("RAGD OK - 10 documents, 0 stale, 0 failed, stores agree, daemon ok\n")


def test_status_check_is_critical_while_the_daemon_cannot_watch_a_root(tmp_path: Path) -> None:
    missing = tmp_path / "not-there-yet"
    source = f'\n[[sources]]\nname = "later"\ntype = "folder"\npath = "{missing}"\n'
    served = Served(tmp_path, small_root(tmp_path / "docs", 3), extra_sources=source)
    served.start().wait_ready()
    try:
        served.wait_scanned()
        check = ragd_in_process(served.config, "status", "--check")
    finally:
        served.stop()

    assert check.returncode == 1
    assert check.stdout.startswith("RAGD CRITICAL - ")
    assert check.stdout.rstrip().endswith(f"daemon watcher degraded: not watching {missing}")


def test_status_reads_the_stores_once_the_daemon_has_stopped(tmp_path: Path) -> None:
    served = Served(tmp_path, small_root(tmp_path / "docs", 10)).start().wait_ready()
    try:
        live = served.wait_scanned()
    finally:
        served.stop()

    report = run_json(served.config, "status")

    assert "daemon" not in report
    assert report["documents"] == live["documents"] == 10
    # The daemon compares the stores by their counts; a reader of everything, by the ids.
    assert (live["stores"].pop("checked_by"), report["stores"].pop("checked_by")) == (
        "counts",
        "ids",
    )
    assert report["stores"] == live["stores"]


def test_status_ignores_a_daemon_serving_another_data_dir(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    served = Served(tmp_path / "a", small_root(tmp_path / "docs", 10)).start().wait_ready()
    other = write_config(
        tmp_path / "b",
        tmp_path / "docs",
        sections=f'[http]\nlisten = "127.0.0.1:{served.port}"\n',
    )
    assert ragd_in_process(other, "index").returncode == 0
    try:
        served.wait_scanned()
        report = run_json(other, "status")
    finally:
        served.stop()

    assert "daemon" not in report  # read from its own stores, not from the daemon
    assert report["documents"] == 10
