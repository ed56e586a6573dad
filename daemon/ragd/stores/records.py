"""What the manifest stores, as values: document and chunk rows, a document's write,
the content hash and times it records, and when a file's stat may stand for its content.

Plain frozen dataclasses and functions; no SQLite (`manifest_reader` reads them,
`manifest` writes them). Imports nothing from ragd.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, NamedTuple, NewType, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

DocId = NewType("DocId", str)
"""A document's id: `<source>:<key>`, made by `doc_id_of` alone (a document is its source and
its key within it: a path for a folder, the CMS's entry id for a webhook)."""


def doc_id_of(source: str, key: str) -> DocId:
    """The id of the document `key` of `source`."""
    return DocId(f"{source}:{key}")


def content_hash(data: bytes) -> str:
    """The hash of a document's bytes, as read: what change detection compares."""
    return hashlib.sha256(data).hexdigest()


def utc_now() -> str:
    """The current time as the ISO 8601 UTC text stored in the manifest."""
    return format_time(datetime.now(UTC))


def format_time(moment: datetime) -> str:
    """ISO 8601 UTC with microseconds and a Z, so stored times sort as text."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """Parse a time written by format_time (fromisoformat: ~20x faster than strptime)."""
    return datetime.fromisoformat(text)


class DocumentRecord(NamedTuple):
    """One document row. A named tuple, as the manifest reads them by the ten thousand
    (every document, for `ragd status`): cheap to build from a row."""

    doc_id: DocId
    source: str
    key: str
    uri: str
    title: str
    size: int | None
    mtime_ns: int | None
    content_hash: str | None
    fingerprint: str | None
    status: str
    error: str | None
    first_seen_at: str
    indexed_at: str | None
    checked_at: str | None
    chunk_count: int = 0


class ChunkRow(Protocol):
    """What the manifest stores of a chunk; `ChunkRecord` is one, and so is the chunk the
    indexer writes (ragd.indexing.pipeline.PreparedChunk), which carries more."""

    @property
    def chunk_id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def ordinal(self) -> int: ...
    @property
    def heading_path(self) -> tuple[str, ...]: ...
    @property
    def text(self) -> str: ...
    @property
    def embed_key(self) -> str: ...
    @property
    def second_key(self) -> str | None: ...
    @property
    def page(self) -> int | None: ...


class ChunkRecord(NamedTuple):
    """One chunk row as the manifest holds it: what the stores index, and what a query
    returns. `second_key` is the embedding key of its second-stage vector (None when the
    second stage was off when it was written); `page` the 1-based page of a paged
    document (PDF) the chunk is on, else None."""

    chunk_id: str
    doc_id: str
    ordinal: int
    heading_path: tuple[str, ...]
    text: str
    embed_key: str
    second_key: str | None = None
    page: int | None = None


C = TypeVar("C", bound=ChunkRow, covariant=True)


@dataclass(frozen=True, slots=True)
class DocumentWrite(Generic[C]):
    """The outcome of processing one document, committed by `Manifest.commit`.

    status is `indexed` (with chunks, possibly none; `error` then holds a warning, if
    any, about how it was read), `failed` (with error; no chunks) or `deleted` (the row
    goes away). The writer's chunks carry more than their rows
    (what is embedded and indexed), so the chunk type is a parameter.
    """

    doc_id: DocId
    source: str
    key: str
    uri: str
    status: str
    title: str = ""
    size: int | None = None
    mtime_ns: int | None = None
    content_hash: str | None = None
    fingerprint: str | None = None
    error: str | None = None
    chunks: tuple[C, ...] = ()
    entry_version: str | None = None  # a CMS entry's updated_at; outlives a delete
    # Files an indexed document included: (key looked up, digest of what it gave or "").
    includes: tuple[tuple[str, str], ...] = ()


SETTLED = ("indexed", "failed")  # a document in one of these states waits for a change
# A file modified this close to when it was last read and hashed may be rewritten within
# the same timestamp tick (two seconds on FAT, one on HFS+ and many network mounts),
# keeping its size and mtime: its stat cannot vouch for it, so the next pass reads and
# hashes it again (git's "racily clean"). checked_at is when the pass that read the file
# began, so never later than the read, however long the pass ran.
RACY_SECONDS = 60


def stat_vouches(record: DocumentRecord, fingerprint: str) -> bool:
    """Whether a record's size and mtime may stand for its content: settled under
    `fingerprint`, and modified RACY_SECONDS or more before the pass that last read it
    began (its checked_at). `Manifest.file_states` applies the same rule in SQL."""
    return (
        record.status in SETTLED
        and record.fingerprint == fingerprint
        and record.mtime_ns is not None
        and record.checked_at is not None
        and record.mtime_ns
        < (parse_time(record.checked_at).timestamp() - RACY_SECONDS) * 1_000_000_000
    )


# What a pass needs to tell an unchanged file from a changed one, and no more: (key, size,
# mtime_ns), with size and mtime None unless the document's stat vouches for it (stat_vouches).
FileState = tuple[str, int | None, int | None]


def listing_digest(files: Sequence[tuple[str, int, int]]) -> str:
    """A digest of (key, size, mtime_ns) triples in key order: two listings with the same
    digest list the same files with the same stats."""
    digest = hashlib.blake2b(digest_size=16)
    if files:
        # Columns, not one string per file: a no-op pass digests every file. Keys hold no
        # NUL, so their join is unambiguous; ints as text cannot overflow.
        keys, sizes, mtimes = zip(*files, strict=True)
        digest.update("\0".join(keys).encode("utf-8", "surrogateescape"))
        digest.update(repr((sizes, mtimes)).encode())
    return digest.hexdigest()


# A folder with thousands of symlinks (a vendored tree, a build output) must not grow the
# manifest or the status report: the counts cover every one, the list the first few.
SKIPPED_LISTED = 20
NON_UTF8_NAME = "non-utf8-name"  # the kind of a file whose name is not valid UTF-8


@dataclass(frozen=True, slots=True)
class SkippedFiles:
    """What the last full scan of a folder source passed over without reading: symlinks
    (never followed) and special files (FIFOs, sockets, devices) where a document or a
    scanned directory would be, and files whose names are not valid UTF-8 (`names`).
    `listed` holds the first SKIPPED_LISTED as (key, kind), in key order; a name that is
    not valid UTF-8 is listed escaped (`caf\\xe9.md`, ragd.sources.folders.shown_key)."""

    symlinks: int = 0
    special: int = 0
    listed: tuple[tuple[str, str], ...] = ()
    names: int = 0

    @classmethod
    def of(cls, entries: Sequence[tuple[str, str]]) -> SkippedFiles:
        """From every skipped (key, kind) of a listing, in any order."""
        symlinks = sum(1 for _, kind in entries if kind == "symlink")
        names = sum(1 for _, kind in entries if kind == NON_UTF8_NAME)
        listed = tuple(sorted(entries)[:SKIPPED_LISTED])
        return cls(symlinks, len(entries) - symlinks - names, listed, names)

    @property
    def total(self) -> int:
        """Every skipped entry, listed or not."""
        return self.symlinks + self.special + self.names

    def to_json(self) -> dict[str, object]:
        """The `skipped` object of a source in the status report."""
        return {
            "symlinks": self.symlinks,
            "special": self.special,
            "non_utf8_names": self.names,
            "files": [{"path": key, "kind": kind} for key, kind in self.listed],
        }
