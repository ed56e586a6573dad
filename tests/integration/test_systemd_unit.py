"""The systemd units and the installer: `systemd-analyze verify`, the sandbox's exposure score,
`bash -n` / shellcheck of deploy/install.sh, and the production config template.

These need `systemd-analyze` (Debian package `systemd`). It is not optional: without it the
tests fail and say so, because a unit that was never verified is the thing they exist to catch.
Nothing here needs systemd to be running (PID 1): verify and `security --offline=true` load
the unit files in a throwaway manager.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragd.config import load_config
from tests.conftest import REPO

SYSTEMD = REPO / "systemd"
UNITS = ("ragd.service", "ragd-check.service", "ragd-check.timer")
INSTALL_SH = REPO / "deploy" / "install.sh"
PRODUCTION_CONFIG = REPO / "deploy" / "config.production.toml"
PRODUCTION_EXEC = "/opt/ragd/venv/bin/ragd"
MAX_EXPOSURE = 3.0


def _systemd_analyze() -> str:
    path = shutil.which("systemd-analyze")
    if path is None:
        pytest.fail(
            "systemd-analyze not found: install the systemd package "
            "(apt-get install systemd) to run the unit checks; CI installs it"
        )
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # Warnings must not be hidden by an inherited log level; no colour codes in the output.
    env = dict(os.environ, SYSTEMD_LOG_LEVEL="info", SYSTEMD_LOG_COLOR="0", SYSTEMD_PAGER="")
    return subprocess.run(
        [_systemd_analyze(), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _exec_start(unit_text: str) -> list[str]:
    return [
        line.removeprefix("ExecStart=")
        for line in unit_text.splitlines()
        if line.startswith("ExecStart=")
    ]


def test_the_services_start_the_installed_ragd() -> None:
    assert _exec_start((SYSTEMD / "ragd.service").read_text()) == [f"{PRODUCTION_EXEC} serve"]
    assert _exec_start((SYSTEMD / "ragd-check.service").read_text()) == [
        f"{PRODUCTION_EXEC} status --check"
    ]


def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """Every unit verifies with no error and no warning that names one of ours.

    `verify` refuses a unit whose ExecStart binary does not exist, and /opt/ragd/venv exists
    only on an installed host. So the units are copied with ExecStart pointing at this
    interpreter (`python -m ragd ...`); every other line is verified exactly as written.
    `verify` exits 0 on warnings (unknown keys, unparsable values, ...), so its output is
    checked too. With systemd 252, verify does not look up User=/Group= (the ragd user does
    not exist on a CI host) and prints nothing about them; if a later systemd warns about the
    missing user, this test fails and shows the line, rather than filtering it out silently.
    """
    python = sys.executable
    if any(c.isspace() for c in python):
        python = f'"{python}"'
    copies = []
    for name in UNITS:
        text = (SYSTEMD / name).read_text()
        rewritten = text.replace(f"ExecStart={PRODUCTION_EXEC} ", f"ExecStart={python} -m ragd ")
        assert _exec_start(rewritten) == [
            line.replace(PRODUCTION_EXEC, f"{python} -m ragd") for line in _exec_start(text)
        ]
        copy = tmp_path / name
        copy.write_text(rewritten)
        copies.append(str(copy))

    result = _run("verify", *copies)

    output = (result.stdout + result.stderr).strip()
    about_ours = [
        line
        for line in output.splitlines()
        if str(tmp_path) in line or any(name in line for name in UNITS)
    ]
    assert result.returncode == 0, output
    assert about_ours == [], output


@pytest.mark.parametrize("unit", ["ragd.service", "ragd-check.service"])
def test_security_exposure_is_at_most_3(unit: str) -> None:
    """`systemd-analyze security --offline=true` scores the unit file as written (0 = best)."""
    result = _run("security", "--offline=true", "--no-pager", str(SYSTEMD / unit))

    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(rf"Overall exposure level for {re.escape(unit)}: ([0-9.]+)", result.stdout)
    assert found, result.stdout + result.stderr
    exposure = float(found.group(1))
    assert exposure <= MAX_EXPOSURE, result.stdout


def test_install_script_parses_and_passes_shellcheck() -> None:
    syntax = subprocess.run(
        ["bash", "-n", str(INSTALL_SH)], capture_output=True, text=True, check=False
    )
    assert syntax.returncode == 0, syntax.stderr
    assert os.access(INSTALL_SH, os.X_OK), "deploy/install.sh must be executable"
    shellcheck = shutil.which("shellcheck")
    assert shellcheck is not None, "install shellcheck (apt-get install shellcheck; .ci/run does)"
    lint = subprocess.run(
        [shellcheck, str(INSTALL_SH)], capture_output=True, text=True, check=False
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_production_config_template_is_valid_and_matches_the_unit() -> None:
    config = load_config(PRODUCTION_CONFIG, environ={})
    unit = (SYSTEMD / "ragd.service").read_text()

    assert config.daemon.data_dir == Path("/var/lib/ragd")
    assert "Environment=RAGD_DATA_DIR=/var/lib/ragd" in unit.splitlines()
    assert "StateDirectory=ragd" in unit.splitlines()
    assert config.embedding.model == "minishlab/potion-base-8M"
    assert not config.embedding.model_is_local
    assert config.http.listen == "127.0.0.1:8750"
    assert [s.name for s in config.sources] == ["docs"]
    assert "ReadOnlyPaths=-/srv/docs" in unit.splitlines()
