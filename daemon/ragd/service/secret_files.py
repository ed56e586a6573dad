"""A webhook secret read from the file a source's `secret_file` names, within bounds.

Owns `read_secret_file`. The path is the operator's, but what is there may not be a
secret: a FIFO blocks the reader until something writes to it (start-up would hang, and
a signal would only interrupt the wait, not end it), a device such as /dev/zero never
ends, a directory holds no text. So the file must be a regular file, checked before it is
opened and again on the opened descriptor (the path could be swapped in between), opened
non-blocking so that nothing ever waits on it, and read up to MAX_SECRET_FILE_BYTES. Every
refusal is a one-line ConfigError naming the key and the path, never the content.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from ragd.errors import ConfigError

__all__ = ["MAX_SECRET_FILE_BYTES", "read_secret_file"]

# A webhook secret is tens of bytes; a PEM-encoded key a few KiB.
MAX_SECRET_FILE_BYTES: Final = 64 * 1024
_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_secret_file(path: Path, key: str) -> str:
    """The text of the regular file `path` (UTF-8, at most MAX_SECRET_FILE_BYTES bytes);
    ConfigError naming `key` (the dotted config key) otherwise."""
    try:
        _check_regular(path.stat().st_mode, path, key)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            _check_regular(os.fstat(file.fileno()).st_mode, path, key)
            data = file.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise ConfigError(
            f"{key}: {path} is larger than {MAX_SECRET_FILE_BYTES // 1024} KiB; "
            "a secret file holds the secret alone"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not UTF-8 text") from None


def _check_regular(mode: int, path: Path, key: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "of an unknown kind")
    raise ConfigError(f"{key}: {path} is {kind}, not a regular file")
