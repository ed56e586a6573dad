"""The `ragd` command's own options, typed as a user types them: --version, --config and
--debug after the command name, and a model directory that does not exist."""

from __future__ import annotations

import json
import sqlite3
from importlib.metadata import version
from pathlib import Path
from typing import Any

import ragd
from tests.conftest import write_config
from tests.integration.conftest import run_ragd, run_ragd_as_typed
from tests.integration.daemon import small_root


def _indexed(tmp_path: Path) -> Path:
    config = write_config(tmp_path, small_root(tmp_path / "docs", 3))
    result = run_ragd(config, "index")
    assert result.returncode == 0, result.stderr
    return config


def _without_time(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key != "generated_at"}


def test_version_prints_the_package_version_and_exits_0() -> None:
    result = run_ragd_as_typed("--version")

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ragd {version('ragd')}\n"
    assert ragd.__version__ == version("ragd")


def test_config_after_the_command_name_means_what_it_means_before(tmp_path: Path) -> None:
    config = _indexed(tmp_path)

    before = run_ragd_as_typed("--config", str(config), "status", "--json")
    after = run_ragd_as_typed("status", "--config", str(config), "--json")

    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert _without_time(json.loads(after.stdout)) == _without_time(json.loads(before.stdout))
    assert json.loads(after.stdout)["documents"] == 3


def test_the_config_given_after_the_command_name_wins(tmp_path: Path) -> None:
    config = _indexed(tmp_path)
    missing = tmp_path / "missing.toml"

    good_last = run_ragd_as_typed("--config", str(missing), "status", "--config", str(config))
    missing_last = run_ragd_as_typed("--config", str(config), "status", "--config", str(missing))

    assert good_last.returncode == 0, good_last.stderr
    assert missing_last.returncode == 2
    assert f"config file not found: {missing}" in missing_last.stderr


def test_debug_after_the_command_name_shows_the_traceback(tmp_path: Path) -> None:
    config = _indexed(tmp_path)
    # An unexpected error: a value in state.db that ragd itself would never write.
    with sqlite3.connect(tmp_path / "data" / "state.db") as db:
        db.execute("INSERT INTO meta (key, value) VALUES ('skipped:docs', 'not json')")
    db.close()

    plain = run_ragd_as_typed("status", "--config", str(config))
    debug = run_ragd_as_typed("status", "--config", str(config), "--debug")

    assert plain.returncode == 1
    assert "internal error" in plain.stderr and "Traceback" not in plain.stderr
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr


def test_a_model_directory_that_does_not_exist_exits_2_with_a_hint(tmp_path: Path) -> None:
    model = tmp_path / "models" / "potion-base-8M"
    config = write_config(tmp_path, small_root(tmp_path / "docs", 1), model=model)

    result = run_ragd(config, "index")

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        f"ragd: error: {config}: embedding.model: no such directory: {model} ("
    )
    assert "Hugging Face id" in result.stderr
