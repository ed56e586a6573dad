"""Helpers for tests that run the real `ragd` command: as a subprocess, where the test is
about the process (its exit on a crash, a signal, a file it may not read), else in this
process, through the same entry point the console script calls.

Every test in this directory is a whole-process test: the hook below marks it `system`
(`-m "not system"` runs the unit tests alone) and gives it SYSTEM_TIMEOUT unless it sets
its own `timeout` mark, so a test added here is marked and bounded as the others are.

A new interpreter costs ~3 s of CPU on this machine before ragd runs a line (importing
LanceDB alone takes ~1.7 s), so a test that runs ten commands in-process saves half a
minute; what the commands do to the stores on disk is the same.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from ragd.cli import main
from tests.conftest import FASTAPI_DOCS, write_config

Ragd = Callable[..., subprocess.CompletedProcess[str]]

INTEGRATION = Path(__file__).parent
# Seconds per test, its fixtures' set-up and tear-down included: a daemon started, a corpus
# indexed and a few commands take well under a minute on a loaded CI machine; a test that
# needs longer says so with its own mark.
SYSTEM_TIMEOUT = 120


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the marks added here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(INTEGRATION):
            continue
        item.add_marker(pytest.mark.system)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SYSTEM_TIMEOUT))


# Root reads any file, so a test about unreadable files drops the capabilities that
# let it; a non-root user needs nothing dropped.
_AS_ORDINARY_READER = (
    [
        "setpriv",
        "--bounding-set",
        "-dac_override,-dac_read_search",
        "--inh-caps",
        "-dac_override,-dac_read_search",
    ]
    if os.geteuid() == 0
    else []
)


def run_ragd(
    config: Path,
    *args: str,
    timeout: float = 600,
    unreadable_as_root: bool = False,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m ragd --config CONFIG ARGS...` and capture its output; `env` adds
    environment variables."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
    env.pop("RAGD_CONFIG", None)
    prefix = _AS_ORDINARY_READER if unreadable_as_root else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ragd", "--config", str(config), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def run_ragd_as_typed(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `python -m ragd ARGS...` exactly as given (no --config added) and capture it."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "ragd", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def ragd_in_process(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `ragd --config CONFIG ARGS...` in this process (`ragd.cli.main`, what the
    console script runs) and capture its exit code and output as `run_ragd` does."""
    argv = ["--config", str(config), *args]
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(argv)
    return subprocess.CompletedProcess(["ragd", *argv], code, stdout.getvalue(), stderr.getvalue())


def run_json(config: Path, *args: str) -> Any:
    """Run a command in-process with --json, assert it exited 0, return the parsed output."""
    result = ragd_in_process(config, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def copy_corpus(target: Path) -> Path:
    """A writable copy of fastapi-docs."""
    shutil.copytree(FASTAPI_DOCS, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture(scope="module")
def indexed_fastapi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fastapi-docs copy indexed once per module with the real model; returns the config."""
    base = tmp_path_factory.mktemp("indexed")
    corpus = copy_corpus(base / "fastapi-docs")
    config = write_config(base, corpus)
    result = run_ragd(config, "index", "--json")
    assert result.returncode == 0, result.stderr
    return config
