"""Folder sources: listing a root and reading its files safely.

Owns the rules for which files under a root are documents: include/exclude patterns
(gitignore style), no symlinks followed (to files or directories), only regular files,
a size cap. A scan says what it passed over (symlinks and special files where a document
or a scanned directory would be, and files whose names are not valid UTF-8) so that status
can show it. Reading opens with
O_NOFOLLOW|O_NONBLOCK and checks the opened file, so a file swapped for a FIFO, a symlink
or a directory between listing and reading is refused instead of blocking or escaping
the root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import quote

from ragd.adapters.pathspec import glob_matcher
from ragd.errors import DocumentError, SourceError

_READ_MORE = 64 << 10  # bytes per read once a file has grown past its stat


SkippedKind = Literal["symlink", "fifo", "socket", "device", "other", "non-utf8-name"]
"""What a skipped entry was: a symlink, a special file that cannot be a document, or a
regular file whose name is not valid UTF-8 (a name no store can hold as a key)."""

NON_UTF8_NAME: SkippedKind = "non-utf8-name"

FileStat = tuple[str, int, int]
"""A file as listed: (key, size, mtime_ns), the key its POSIX path relative to the root.

A plain tuple: a scan makes one per file and a pass keeps them all, and an exact tuple of
a string and numbers is not tracked by the cycle collector (see ragd.indexing.preparing).
"""


@dataclass(frozen=True, slots=True)
class FileContent:
    """The bytes of a file and the stat of the very file descriptor they came from."""

    data: bytes
    size: int
    mtime_ns: int


@dataclass(slots=True)
class Listing:
    """The result of scanning a root.

    `unreadable_dirs` are directories that could not be listed; documents under them are
    neither confirmed nor deleted by this scan. `skipped` are the entries the patterns
    select that cannot be documents, as (key, kind): symlinks (never followed) to a
    selected name or to a directory the scan would enter, FIFOs, sockets and devices, and
    regular files whose names are not valid UTF-8. A key that is not valid UTF-8 is
    given as `shown_key` makes it (`caf\\xe9.md`): text that JSON and SQLite can hold.
    """

    files: list[FileStat] = field(default_factory=list)
    unreadable_dirs: list[str] = field(default_factory=list)
    skipped: list[tuple[str, SkippedKind]] = field(default_factory=list)

    @property
    def skipped_symlinks(self) -> int:
        """How many selected entries were symlinks (not followed)."""
        return sum(1 for _, kind in self.skipped if kind == "symlink")

    @property
    def skipped_names(self) -> list[str]:
        """The selected regular files whose names are not valid UTF-8, as shown keys."""
        return [key for key, kind in self.skipped if kind == NON_UTF8_NAME]

    @property
    def skipped_special(self) -> int:
        """How many selected entries were FIFOs, sockets or devices (not read)."""
        return len(self.skipped) - self.skipped_symlinks - len(self.skipped_names)

    def covers(self, key: str) -> bool:
        """True when this listing can vouch for `key` (it is not under an unreadable dir)."""
        return not any(key.startswith(prefix + "/") for prefix in self.unreadable_dirs)


def file_patterns(patterns: Sequence[str]) -> Sequence[str]:
    """Of exclude patterns, those that can exclude a file a scan reached.

    A scan tests each directory before it descends, and a pattern that names only
    directories (a trailing `/`) matches a file only through one of its directories: so
    a file the scan reaches is tested against the other patterns alone. With the default
    excludes (all of them directories) that is no test at all: at 38k files, ~25 ms of
    a no-op pass. A negation could re-include what a directory pattern excluded, so
    with one every pattern is kept.
    """
    if any(p.lstrip().startswith("!") for p in patterns):
        return patterns
    return [p for p in patterns if not p.rstrip().endswith("/")]


class FolderSource:
    """A directory tree of documents, selected by include and exclude patterns."""

    def __init__(
        self,
        name: str,
        root: Path,
        include: tuple[str, ...],
        exclude: tuple[str, ...] = (),
        max_file_bytes: int = 20_000_000,
    ) -> None:
        self.name = name
        self.root = root
        self._root_text = os.fspath(root)
        self.max_file_bytes = max_file_bytes
        self._reader = FileReader(self._root_text, max_file_bytes)
        # The root's file URL with one trailing slash, also when the root is "/".
        self._uri_prefix = (root.absolute() / "x").as_uri()[:-1]
        self._includes = glob_matcher(include)
        self._excludes = glob_matcher(exclude)
        self._excludes_listed_file = glob_matcher(file_patterns(exclude))

    def selects(self, key: str) -> bool:
        """True when a scan from the root would list this file key: included, not excluded,
        not below an excluded directory, and a valid UTF-8 name."""
        if not is_utf8_name(key):
            return False
        return self._includes(key) and not self._excludes(key) and not self._below_excluded(key)

    def descends(self, rel_dir: str) -> bool:
        """True when a scan from the root would list what is in this directory key."""
        return not self.excludes_dir(rel_dir) and not self._below_excluded(rel_dir)

    def excludes_dir(self, rel_dir: str) -> bool:
        """True when a directory key is excluded (its whole subtree is skipped)."""
        return self._excludes(rel_dir + "/")

    def _below_excluded(self, key: str) -> bool:
        # A negation (`!docs/a/`) can match below an excluded directory (`docs/`), but a
        # scan never descends there to find it: git's rule too.
        parts = key.split("/")
        return any(self.excludes_dir("/".join(parts[:n])) for n in range(1, len(parts)))

    def path_for(self, key: str) -> Path:
        """The filesystem path of a key. Keys come from our own listing, never from users."""
        return self.root.joinpath(*PurePosixPath(key).parts)

    def uri_for(self, key: str) -> str:
        """A file:// URL for a key (what `path_for(key).as_uri()` gives, without the Path)."""
        return self._uri_prefix + quote(key)

    def check_root(self) -> None:
        """Raise SourceError unless the root is a readable directory."""
        try:
            st = self.root.stat()
        except OSError as exc:
            raise SourceError(
                f"source '{self.name}': cannot open root {self.root}: {exc.strerror}",
                hint="check sources.path in the config; nothing was deleted",
            ) from exc
        if not stat.S_ISDIR(st.st_mode):
            raise SourceError(f"source '{self.name}': root {self.root} is not a directory")

    def scan(self, prefix: str = "") -> Listing:
        """List every selected regular file under the root (or under directory key `prefix`:
        what a scan from the root lists there).

        Symlinks are never followed. A `prefix` that is not a directory (it moved away)
        lists nothing; a root that cannot be listed raises SourceError.
        """
        self.check_root()
        listing = Listing()
        if prefix:
            start = self.path_for(prefix)
            if start.is_symlink() or not start.is_dir() or not self.descends(prefix):
                return listing
            stack: list[tuple[Path, str]] = [(start, prefix)]
        else:
            stack = [(self.root, "")]
        while stack:
            directory, rel = stack.pop()
            try:
                with os.scandir(directory) as listed:
                    entries = list(listed)
            except FileNotFoundError:
                continue  # removed while being listed: its documents are gone
            except OSError:
                if not rel:
                    raise SourceError(
                        f"source '{self.name}': cannot list root {self.root}"
                    ) from None
                listing.unreadable_dirs.append(rel)
                continue
            base = f"{rel}/" if rel else ""
            for entry in entries:  # the per-file cost here is most of a no-op re-index
                self._visit(entry, base + entry.name, stack, listing)
        # Keys are unique, so ordering by key alone is the same order, with cheaper compares.
        listing.files.sort(key=itemgetter(0))
        return listing

    def _visit(
        self, entry: os.DirEntry[str], key: str, stack: list[tuple[Path, str]], listing: Listing
    ) -> None:
        try:
            if entry.is_symlink():
                if self._selects_link(entry, key):
                    listing.skipped.append((shown_key(key), "symlink"))
            elif entry.is_dir(follow_symlinks=False):
                if not self.excludes_dir(key):
                    stack.append((Path(entry.path), key))
            elif not self._includes(key) or self._excludes_listed_file(key):
                pass
            elif not entry.is_file(follow_symlinks=False):
                kind = _special_kind(entry.stat(follow_symlinks=False))
                listing.skipped.append((shown_key(key), kind))
            elif not is_utf8_name(key):
                listing.skipped.append((shown_key(key), NON_UTF8_NAME))
            else:
                st = entry.stat(follow_symlinks=False)
                listing.files.append((key, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            pass  # vanished between listing and stat: the next scan sees it gone

    def _selects_link(self, entry: os.DirEntry[str], key: str) -> bool:
        """Whether a symlink stands where a document or a scanned directory would be: a
        name the patterns select, or a link to a directory that is not excluded. Only for
        reporting what was skipped; the link itself is never followed."""
        if self._includes(key) and not self._excludes_listed_file(key):
            return True
        try:
            # One stat of the target (the scan never lists it): links to other files, the
            # common case in a docs tree, need none.
            return entry.is_dir() and not self.excludes_dir(key)
        except OSError:
            return False  # a dangling or looping link to an unselected name

    def stat(self, key: str) -> FileStat | None:
        """The current stat of a key's file, or None when it is gone or not a regular file."""
        try:
            # String joining, not pathlib: status stats every document of a source.
            st = os.lstat(os.path.join(self._root_text, key))  # noqa: PTH118
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return key, st.st_size, st.st_mtime_ns

    def read(self, key: str) -> FileContent:
        """Read a file once; raise DocumentError with a one-line reason when it cannot be read."""
        return self._reader(key)

    def reader(self) -> FileReader:
        """`read` as a picklable value, for a worker process."""
        return self._reader


@dataclass(frozen=True, slots=True)
class FileReader:
    """Reads keys under one root with `read_regular_file`; a plain value, so it pickles."""

    root: str
    max_bytes: int

    def __call__(self, key: str) -> FileContent:
        # String joining, not pathlib: building a Path cost as much as the read itself.
        return read_regular_file(os.path.join(self.root, key), self.max_bytes)  # noqa: PTH118


def _special_kind(st: os.stat_result) -> SkippedKind:
    if stat.S_ISFIFO(st.st_mode):
        return "fifo"
    if stat.S_ISSOCK(st.st_mode):
        return "socket"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "device"
    return "other"


def is_utf8_name(key: str) -> bool:
    """False for names that are not valid UTF-8 (decoded with surrogate escapes).

    Such a name cannot be a doc_id: SQLite, Tantivy and JSON all need real text.
    """
    if key.isascii():
        return True  # most names; no encoding needed to tell
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_key(key: str) -> str:
    """A key as text any store, JSON or terminal takes: a name that is not valid UTF-8
    (listed with surrogate escapes) has its bytes that are not as `\\xNN`, the way
    Python's backslashreplace writes them; any other key is itself."""
    if is_utf8_name(key):
        return key
    try:
        raw = key.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no file name decodes to
        return key.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def read_regular_file(path: str | Path, max_bytes: int) -> FileContent:
    """Open without following symlinks or blocking on FIFOs, check it is a regular file, read it."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise DocumentError("file vanished before it could be read") from exc
    except PermissionError as exc:
        raise DocumentError("permission denied") from exc
    except OSError as exc:
        raise DocumentError(f"cannot open: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError("not a regular file")
        if st.st_size > max_bytes:
            raise DocumentError(f"file is {st.st_size} bytes; the limit is {max_bytes}")
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        # os.read allocates the full request up front: asking for 1 MiB per read made
        # reading 38k small files take 7 s. Ask for the stat's size (+1, to see growth).
        request = st.st_size + 1
        while remaining > 0:
            asked = min(request, remaining)
            piece = os.read(fd, asked)
            chunks.append(piece)
            remaining -= len(piece)
            if len(piece) < asked:
                break  # a short read of a regular file is its end: no extra read to see b""
            request = _READ_MORE
        data = b"".join(chunks)
    except OSError as exc:
        raise DocumentError(f"read failed: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise DocumentError(f"file grew past the limit of {max_bytes} bytes while being read")
    return FileContent(data, st.st_size, st.st_mtime_ns)
