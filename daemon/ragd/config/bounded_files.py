"""Files whose path an operator names (the config file, a `secret_file`), read within bounds.

The path may be a symlink (Kubernetes mounts secrets so; documents are read by
ragd.sources.folders, which follows none), but what is there may not be a file of text: a
FIFO blocks its reader until something writes to it, /dev/zero never ends, a directory
holds no text. So the file must be a regular file, checked before it is opened and again
on the opened descriptor (the path could be swapped in between), opened non-blocking so
that nothing ever waits on it, and read up to a limit.
"""

import os
import stat
from pathlib import Path
from typing import Final

__all__ = ["TooLarge", "UnfitFile", "read_bounded_file"]

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)  # fmt: skip


class UnfitFile(ValueError):
    """The path names something other than a regular file, or one over the limit; the
    message is a predicate to follow the path (`is a FIFO, not a regular file`)."""


class TooLarge(UnfitFile):
    """A regular file over the limit."""


def read_bounded_file(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path` (a symlink to one is followed), at most
    `limit` of them; UnfitFile for anything else, OSError when it cannot be read."""
    _check_regular(path.stat().st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        _check_regular(os.fstat(file.fileno()).st_mode)
        data = file.read(limit + 1)
    if len(data) > limit:
        shown = f"{limit // 1024} KiB" if limit % 1024 == 0 else f"{limit} bytes"
        raise TooLarge(f"is larger than {shown}")
    return data


def _check_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "of an unknown kind")
    raise UnfitFile(f"is {kind}, not a regular file")
