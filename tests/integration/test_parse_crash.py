"""A file whose parse kills the process: one crash, then it is failed and never parsed again.

A native parser crash is simulated by tests/faults.py's `poisoned_parse`: with that plan,
whichever process parses a document holding `faults.POISON` dies of SIGKILL there, every
time it meets one, as a segfault in markdown-it.rs would. The real command line runs with
the plan throughout (tests/integration/crashing_ragd.py), so a second parse of the poison
would kill it again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ragd.indexing.parse_guard import CRASHED
from ragd.stores.manifest_reader import ManifestReader
from tests import faults
from tests.conftest import REPO, write_config
from tests.integration.conftest import run_json


def index_poisoned(config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    command = [
        *(sys.executable, "-m", "tests.integration.crashing_ragd", "poisoned_parse"),
        *("--config", str(config), "index", "--json"),
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


def report_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def statuses(config: Path) -> dict[str, tuple[str, str | None]]:
    manifest = ManifestReader.open(config.parent / "data" / "state.db")
    try:
        return {d.key: (d.status, d.error) for d in manifest.documents()}
    finally:
        manifest.close()


def write_pages(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (root / f"page{n:04}.md").write_text(f"# Page {n}\n\nHow to configure widget {n}.\n")


def test_a_file_that_kills_the_parser_costs_one_crash_and_is_then_failed(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "docs"
    write_pages(corpus, 3)
    (corpus / "poison.md").write_bytes(b"# Poison\n\n" + faults.POISON + b"\n")
    config = write_config(tmp_path, corpus)

    crashed = index_poisoned(config)
    recovered = report_of(index_poisoned(config))
    again = report_of(index_poisoned(config))

    assert crashed.returncode == -signal.SIGKILL
    assert recovered["documents"] | {"unchanged": 0} == {
        "added": 3,
        "changed": 0,
        "unchanged": 0,
        "deleted": 0,
        "failed": 1,
    }
    assert statuses(config)["poison.md"] == ("failed", CRASHED)
    assert again["documents"]["unchanged"] == 4 and again["documents"]["failed"] == 0
    status = run_json(config, "status")
    assert status["failed"] == 1 and status["stores_agree"] is True


def test_a_poisoned_file_parses_again_once_it_changes(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_pages(corpus, 2)
    poison = corpus / "poison.md"
    poison.write_bytes(b"# Poison\n\n" + faults.POISON + b"\n")
    config = write_config(tmp_path, corpus)
    assert index_poisoned(config).returncode == -signal.SIGKILL
    report_of(index_poisoned(config))

    poison.write_text("# Poison\n\nHarmless now: the widget guide.\n")
    fixed = report_of(index_poisoned(config))

    assert fixed["documents"]["changed"] == 1 and fixed["documents"]["failed"] == 0
    assert statuses(config)["poison.md"] == ("indexed", None)


def test_a_file_that_kills_index_workers_is_failed_without_a_crash(tmp_path: Path) -> None:
    # 600 files: the pass prepares them on worker processes (ragd.indexing.preparing). The poison
    # kills a worker, then the worker it is tried alone on; it is failed, the rest indexed.
    corpus = tmp_path / "docs"
    write_pages(corpus, 600)
    (corpus / "page0300.md").write_bytes(b"# Page 300\n\n" + faults.POISON + b"\n")
    config = write_config(tmp_path, corpus)

    first = report_of(index_poisoned(config))
    again = report_of(index_poisoned(config))

    assert first["documents"]["added"] == 599 and first["documents"]["failed"] == 1
    found = statuses(config)
    assert found.pop("page0300.md") == ("failed", CRASHED)
    assert len(found) == 599 and {s for s, _ in found.values()} == {"indexed"}
    assert again["documents"]["unchanged"] == 600
