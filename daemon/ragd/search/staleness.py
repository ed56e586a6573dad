"""Staleness: whether what the index says of a document may no longer be true.

Owns the stale reasons and the rule for each. Reasons are reported by name, in this
order: source_changed, source_deleted, pending, max_age, fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from ragd.errors import DocumentError
from ragd.sources.folders import FolderSource
from ragd.stores.records import DocumentRecord, content_hash, parse_time

SOURCE_CHANGED = "source_changed"
SOURCE_DELETED = "source_deleted"
PENDING = "pending"
MAX_AGE = "max_age"
FINGERPRINT = "fingerprint"
REASONS = (SOURCE_CHANGED, SOURCE_DELETED, PENDING, MAX_AGE, FINGERPRINT)


@dataclass(frozen=True)
class SourcePolicy:
    """What staleness needs to know of a source: its folder (if any) and its max_age."""

    max_age: timedelta
    folder: FolderSource | None = None


def stale_reasons(
    doc: DocumentRecord,
    *,
    policy: SourcePolicy | None,
    fingerprint: str,
    now: datetime,
    pending: bool = False,
    unreachable: bool = False,
    verify_content: bool = True,
) -> list[str]:
    """Every reason the document's indexed chunks may be stale, or [] when fresh.

    For folder sources the file is re-checked: a different size or mtime is confirmed by
    hashing the file (cheap for the k documents of a query) unless `verify_content` is off,
    as it is for whole-index reports. `pending` says a change to it is queued (a watch
    event or a webhook delivery not yet applied); `unreachable` that the last poll of its
    source could not list it, so nothing vouches for it now (max_age).
    """
    reasons: list[str] = []
    if policy is not None and policy.folder is not None:
        reasons.extend(file_reasons(doc, policy.folder, verify_content=verify_content))
    if pending or doc.status == "pending":
        reasons.append(PENDING)
    if unreachable or (
        policy is not None and _older_than(doc.checked_at or doc.indexed_at, policy.max_age, now)
    ):
        reasons.append(MAX_AGE)
    if doc.fingerprint != fingerprint:
        reasons.append(FINGERPRINT)
    return reasons


class IndexedFile(Protocol):
    """What was indexed of a folder document's file: a `DocumentRecord` is one."""

    @property
    def key(self) -> str: ...
    @property
    def size(self) -> int | None: ...
    @property
    def mtime_ns(self) -> int | None: ...
    @property
    def content_hash(self) -> str | None: ...


def file_reasons(doc: IndexedFile, folder: FolderSource, *, verify_content: bool) -> list[str]:
    """`source_changed` or `source_deleted` when the document's file is no longer what was
    indexed, or []: its stat, then (with `verify_content`) its bytes decide."""
    current = folder.stat(doc.key)
    if current is None:
        return [SOURCE_DELETED]
    if (current[1], current[2]) == (doc.size, doc.mtime_ns):
        return []
    if not verify_content:
        return [SOURCE_CHANGED]
    try:
        data = folder.read(doc.key).data
    except DocumentError:
        return [SOURCE_CHANGED]
    # A touch without an edit changes mtime only: the bytes decide.
    return [] if content_hash(data) == doc.content_hash else [SOURCE_CHANGED]


def _older_than(stamp: str | None, max_age: timedelta, now: datetime) -> bool:
    if stamp is None:
        return True
    return now - parse_time(stamp) > max_age
