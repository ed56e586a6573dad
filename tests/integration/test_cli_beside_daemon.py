"""`ragd query`, `ragd index` and `ragd status` beside a real `ragd serve` of their data
directory: the daemon answers, so the command neither opens the stores nor loads a model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_config
from tests.integration.daemon import Served, small_root, wait_until

# Runs the real command line in a fresh interpreter, then says whether it imported the
# libraries a command that opens the stores imports.
_COMMAND = (
    "import sys; from ragd.cli import main; code = main(sys.argv[1:]); "
    "print('OPENED', 'lancedb' in sys.modules or 'model2vec' in sys.modules, file=sys.stderr); "
    "sys.exit(code)"
)


def ragd(config: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """Run `ragd --config CONFIG ARGS...`; (the process, whether it opened the stores)."""
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    opened = "OPENED True" in done.stderr
    return done, opened


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("beside")
    daemon = Served(workdir, small_root(workdir / "docs", files=10))
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_a_query_is_the_daemons_answer_and_opens_no_store(served: Served) -> None:
    done, opened = ragd(served.config, "query", "request body", "--json", "-k", "5")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == served.query("request body", mode="hybrid", k=5)
    assert not opened


def test_a_query_with_context_is_the_daemons_context(served: Served) -> None:
    done, opened = ragd(served.config, "query", "path parameters", "--context", "--json")

    answer = served.post_json("/v1/context", {"query": "path parameters"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == answer
    assert not opened


def test_a_query_the_daemon_refuses_is_a_one_line_usage_error(served: Served) -> None:
    done, _ = ragd(served.config, "query", "x" * 100_000)

    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("ragd: error: query is ")


def test_an_index_pass_is_run_by_the_daemons_writer_and_an_edit_is_searchable_after(
    served: Served,
) -> None:
    root = served.workdir / "docs"
    (root / "zebra.md").write_text("# Zebras\n\nThe okapi is a zebra's cousin.\n")

    done, opened = ragd(served.config, "index", "--json")

    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert sum(report["documents"].values()) == len(list(root.glob("*.md")))
    assert not opened
    assert [h["path"] for h in served.query("okapi cousin")["results"]][:1] == ["zebra.md"]


def test_status_is_the_daemons_report_with_its_section(served: Served) -> None:
    done, opened = ragd(served.config, "status", "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["daemon"]["pid"] == served.process.pid  # type: ignore[union-attr]
    assert not opened


def test_a_daemon_of_another_data_directory_is_not_asked(served: Served, tmp_path: Path) -> None:
    root = small_root(tmp_path / "docs", files=3)
    listen = f'[http]\nlisten = "127.0.0.1:{served.port}"\n'
    other = write_config(tmp_path, root, sections=listen)  # its own data_dir, same port
    before = served.status()["documents"]

    done, opened = ragd(other, "index", "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"]["added"] == 3
    assert opened
    wait_until(lambda: served.status()["daemon"]["queue_depth"] == 0, 30)
    assert served.status()["documents"] == before  # the daemon's index is untouched
