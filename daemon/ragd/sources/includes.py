"""Files a document includes, found and read inside its source root.

Owns where an include written in a document (`../../docs_src/x.py`) is looked for and
whether it may be read. A path is tried relative to the including document's directory,
then to each directory above it up to the root, as MkDocs resolves from its config's
directory and Sphinx from its source directory (a leading `/`: the root alone); the first
that gives a file wins. A path whose `..` climbs out of the root is never tried; a file
whose real path (symlinks resolved) is outside the root, that is not a regular file, or
that is over MAX_INCLUDE_BYTES gives nothing; a document looks up at most MAX_INCLUDES
includes, and reads at most MAX_INCLUDED_BYTES in all. An include that gives nothing is
dropped by its parser: it never fails the document.

Every key looked up is recorded with the digest of what it gave ("" for nothing), so a
pass can tell whether a document's includes changed without parsing it again
(`include_digest`), and a file appearing where a missing include was looked for counts as
a change too.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass, field

from ragd.errors import DocumentError
from ragd.sources.folders import read_regular_file

MAX_INCLUDE_BYTES = 1 << 20
MAX_INCLUDES = 256  # per document: FastAPI's busiest page has 20
MAX_INCLUDED_BYTES = 8 << 20  # per document, all includes together

IncludeDigests = tuple[tuple[str, str], ...]
"""What a document included: (key looked up, digest of what it gave or ""), in order."""


@dataclass(frozen=True, slots=True)
class IncludeRoot:
    """Reads included files under one source root; a plain value, so it pickles.

    Real paths of directories are remembered for its lifetime (one pass, or one worker
    task): realpath walks every component, and most includes share a few directories.
    """

    root: str
    real_root: str = field(init=False)
    _real_dirs: dict[str, str] = field(init=False, default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "real_root", os.path.realpath(self.root))

    def read(self, key: str) -> bytes | None:
        """The bytes of the file at root-relative `key`, when it may be included."""
        path = os.path.join(self.real_root, key)  # noqa: PTH118
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except (OSError, ValueError):
            return None  # most keys a pass checks again are missing ones: no realpath
        if link:
            path = os.path.realpath(path)
        else:
            directory, name = os.path.split(path)
            if (real := self._real_dirs.get(directory)) is None:
                real = self._real_dirs[directory] = os.path.realpath(directory)
            path = os.path.join(real, name)  # noqa: PTH118
        if os.path.commonpath([self.real_root, path]) != self.real_root:
            return None  # a symlink out of the root
        try:
            return read_regular_file(path, MAX_INCLUDE_BYTES).data
        except DocumentError:
            return None  # missing, not a regular file, unreadable or too big

    def for_document(self, key: str) -> DocumentIncludes:
        """The include reader of the document at `key`."""
        return DocumentIncludes(self, key)


def include_digest(data: bytes | None) -> str:
    """The digest recorded for what an include gave: "" for nothing."""
    return "" if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()


class DocumentIncludes:
    """One document's include reader (`parsers.ReadInclude`) and the keys it looked up."""

    def __init__(self, root: IncludeRoot, key: str) -> None:
        self._root = root
        self._directory = posixpath.dirname(key)
        self._looked_up: dict[str, str] = {}
        self._includes = 0
        self._bytes = 0

    def __call__(self, written: str) -> bytes | None:
        self._includes += 1
        if self._includes > MAX_INCLUDES or not written or "\0" in written:
            return None
        for key in candidates(self._directory, written):
            data = self._root.read(key)
            if data is not None and self._bytes + len(data) > MAX_INCLUDED_BYTES:
                return None  # over budget: dropped, and not recorded as read
            self._looked_up.setdefault(key, include_digest(data))
            if data is not None:
                self._bytes += len(data)
                return data
        return None

    def digests(self) -> IncludeDigests:
        """Every key looked up and the digest of what it gave, in the order first asked."""
        return tuple(self._looked_up.items())


def candidates(directory: str, written: str) -> list[str]:
    """The root-relative keys an include written in a document in `directory` may name,
    in the order tried; none that climbs out of the root."""
    written = written.replace("\\", "/")
    if written.startswith("/"):
        bases = [""]
    else:
        parts = directory.split("/") if directory else []
        bases = ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]
    keys: list[str] = []
    for base in bases:
        key = posixpath.normpath(posixpath.join(base, written.lstrip("/")))
        if key != ".." and not key.startswith("../") and key != "." and key not in keys:
            keys.append(key)
    return keys
