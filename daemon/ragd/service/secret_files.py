"""A webhook secret read from the file a source's `secret_file` names, within bounds.

Owns `read_secret_file`: a regular file (never a FIFO, a device or a directory:
ragd.config.bounded_files) of at most MAX_SECRET_FILE_BYTES of UTF-8 text. Every refusal
is a one-line ConfigError naming the key and the path, never the content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ragd.config.bounded_files import TooLarge, UnfitFile, read_bounded_file
from ragd.errors import ConfigError

__all__ = ["MAX_SECRET_FILE_BYTES", "read_secret_file"]

# A webhook secret is tens of bytes; a PEM-encoded key a few KiB.
MAX_SECRET_FILE_BYTES: Final = 64 * 1024


def read_secret_file(path: Path, key: str) -> str:
    """The text of the regular file `path` (UTF-8, at most MAX_SECRET_FILE_BYTES bytes);
    ConfigError naming `key` (the dotted config key) otherwise."""
    try:
        data = read_bounded_file(path, MAX_SECRET_FILE_BYTES)
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None
    except TooLarge as exc:
        raise ConfigError(f"{key}: {path} {exc}; a secret file holds the secret alone") from None
    except UnfitFile as exc:
        raise ConfigError(f"{key}: {path} {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not UTF-8 text") from None
