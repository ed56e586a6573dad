"""`ragd serve` with a config it cannot use stops at once: one line on stderr naming the
key, exit 2, nothing started. Here what a TOML parser accepts but no setting can use, and
a `secret_file` that is not a file holding a secret (read when serve starts).

Each run is bounded: a FIFO used to hang start-up, and /dev/zero was read until the
process was killed (24 GB), so the child gets a deadline and an address-space limit that
turn either back into a failure rather than a stuck or swapping test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_config

DEADLINE_SECONDS = 60  # a hang's bound; a refusal takes about a second, start-up included
ADDRESS_SPACE_BYTES = 4 << 30


# The console script's entry point, under an address-space limit set in the child itself.
BOUNDED_RAGD = (
    "import resource, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_BYTES}, {ADDRESS_SPACE_BYTES})); "
    "from ragd.__main__ import run; run()"
)


def serve(config: Path) -> subprocess.CompletedProcess[str]:
    """Run `ragd --config CONFIG serve` as an operator would, bounded in time and memory."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-c", BOUNDED_RAGD, "--config", str(config), "serve"],
        capture_output=True,
        text=True,
        env=env,
        timeout=DEADLINE_SECONDS,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    """Exit 2 with one line on stderr holding each of `expected`."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragd: error: "), lines[0]
    assert all(part in lines[0] for part in expected), lines[0]


def webhook_config(tmp_path: Path, secret_file: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    source = f'[[sources]]\nname = "cms"\ntype = "webhook"\nsecret_file = "{secret_file}"\n'
    return write_config(tmp_path, root, extra=source)


@pytest.fixture(params=["dev-zero", "fifo", "directory"])
def not_a_regular_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A path that is not a regular file, and what the error calls it."""
    if request.param == "dev-zero":
        return Path("/dev/zero"), "a character device"
    if request.param == "fifo":
        fifo = tmp_path / "secret.fifo"
        os.mkfifo(fifo)
        return fifo, "a FIFO"
    directory = tmp_path / "secret.d"
    directory.mkdir()
    return directory, "a directory"


def test_a_secret_file_that_is_not_a_regular_file_stops_serve_with_one_line(
    tmp_path: Path, not_a_regular_file: tuple[Path, str]
) -> None:
    path, kind = not_a_regular_file

    result = serve(webhook_config(tmp_path, path))

    assert_refused(result, f"sources.cms.secret_file: {path} is {kind}, not a regular file")


def test_a_secret_file_over_64_kib_stops_serve_with_one_line(tmp_path: Path) -> None:
    big = tmp_path / "secret.txt"
    big.write_bytes(b"s" * (64 * 1024 + 1))

    result = serve(webhook_config(tmp_path, big))

    assert_refused(result, f"sources.cms.secret_file: {big} is larger than 64 KiB")


@pytest.mark.parametrize(
    "value",
    ["[" * 5000 + "]" * 5000, "{a = " * 5000 + "1" + "}" * 5000],
    ids=["arrays", "inline-tables"],
)
def test_toml_nested_5000_deep_stops_serve_with_one_line(tmp_path: Path, value: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"nested = {value}\n")

    result = serve(config)

    assert_refused(result, f"{config}: invalid TOML: arrays or inline tables nested too deeply")


def test_a_5000_digit_integer_stops_serve_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[http]\nmax_body_bytes = " + "9" * 5000 + "\n")

    result = serve(config)

    assert_refused(result, f"{config}: invalid TOML: an integer is too large")
