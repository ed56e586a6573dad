"""Files whose names are not valid UTF-8 (a latin-1 system's `café.md`), with and without a
daemon: never a document (no store can hold the name as a key), always counted in
`ragd status` under `skipped`, shown escaped, and never in the way of other files."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.integration.conftest import run_ragd
from tests.integration.daemon import Served, small_root, wait_until

LATIN1_NAME = b"caf\xe9.md"  # 'café.md' as a latin-1 system writes it
SHOWN = "caf\\xe9.md"  # how status shows it: the byte that is not UTF-8, escaped
EXPECTED_SKIPPED = {
    "symlinks": 0,
    "special": 0,
    "non_utf8_names": 1,
    "files": [{"path": SHOWN, "kind": "non-utf8-name"}],
}


def _write_latin1_named(directory: Path, name: bytes = LATIN1_NAME) -> None:
    with open(os.path.join(os.fsencode(directory), name), "wb") as file:
        file.write(b"# Cafe\n\nMenu of the day.\n")


def test_ragd_index_succeeds_and_status_counts_and_shows_the_name_escaped(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", 3)
    _write_latin1_named(root)
    config = write_config(tmp_path, root)

    indexed = run_ragd(config, "index", "--json")
    status = run_ragd(config, "status", "--json")
    text = run_ragd(config, "status")

    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["documents"]["added"] == 3
    assert f"skipped docs:{SHOWN}: file name is not valid UTF-8" in indexed.stderr
    assert json.loads(status.stdout)["sources"][0]["skipped"] == EXPECTED_SKIPPED
    assert "skipped docs: 1 file name (not valid UTF-8" in text.stdout
    assert f"skipped docs:{SHOWN}: non-utf8-name" in text.stdout.splitlines()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = small_root(tmp_path / "docs", 3)
    _write_latin1_named(root)
    daemon = Served(tmp_path, root)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_the_daemon_counts_the_name_in_status_after_its_scan(served: Served) -> None:
    assert served.status()["sources"][0]["skipped"] == EXPECTED_SKIPPED


def test_a_directory_so_named_does_not_hold_up_a_deletion_beside_it(
    served: Served, tmp_path: Path
) -> None:
    root = tmp_path / "docs"
    page = root / "zebra.md"
    page.write_text("# Zebra crossings\n\nPlatypus wranglers cross here.\n")
    wait_until(lambda: served.paths_for("platypus wranglers") == ["zebra.md"], 10)

    # Both settle (neither is a finished write), so they are handed over together.
    os.mkdir(os.path.join(os.fsencode(root), b"men\xfc"))
    page.unlink()

    wait_until(lambda: served.paths_for("platypus wranglers") == [], 10)
