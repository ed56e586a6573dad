"""read_secret_file: a secret_file's text, or one ConfigError line naming the key; whatever
is at the path, it never blocks and never reads more than MAX_SECRET_FILE_BYTES."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.errors import ConfigError
from ragd.service.secret_files import MAX_SECRET_FILE_BYTES, read_secret_file

KEY = "sources.cms.secret_file"


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        read_secret_file(path, KEY)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n")

    assert read_secret_file(path, KEY) == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    # Kubernetes mounts secrets as symlinks into a ..data directory.
    (tmp_path / "real").write_text("s3cret")
    (tmp_path / "link").symlink_to(tmp_path / "real")

    assert read_secret_file(tmp_path / "link", KEY) == "s3cret"


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_bytes(b"k" * MAX_SECRET_FILE_BYTES)

    assert len(read_secret_file(path, KEY)) == MAX_SECRET_FILE_BYTES


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"k" * (MAX_SECRET_FILE_BYTES + 1))

    assert refusal(path) == (
        f"{KEY}: {path} is larger than 64 KiB; a secret file holds the secret alone"
    )


def test_dev_zero_is_refused_without_reading_it() -> None:
    assert (
        refusal(Path("/dev/zero")) == f"{KEY}: /dev/zero is a character device, not a regular file"
    )


@pytest.mark.timeout(10)  # a regression blocks in open(): fail soon, not after 300 s
def test_a_fifo_without_a_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "secret.fifo"
    os.mkfifo(fifo)

    assert refusal(fifo) == f"{KEY}: {fifo} is a FIFO, not a regular file"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path) == f"{KEY}: {tmp_path} is a directory, not a regular file"


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        yield path


def test_a_socket_is_refused(unix_socket: Path) -> None:
    assert refusal(unix_socket) == f"{KEY}: {unix_socket} is a socket, not a regular file"


def test_a_missing_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    missing = tmp_path / "nope"

    assert refusal(missing) == f"{KEY}: cannot read {missing}: No such file or directory"


def test_a_file_that_is_not_utf8_is_refused_without_echoing_it(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"\xffs3cret")

    message = refusal(path)

    assert message == f"{KEY}: {path} is not UTF-8 text" and "s3cret" not in message
