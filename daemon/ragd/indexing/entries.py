"""CMS entry deliveries: what applying one does to its document.

Owns `EntryUpdate` (a delivery, its content already fetched) and `entry_outcome`, which
decides from the delivery and the document's record alone. A delivery older than the one
applied is ignored; a deletion deletes; a failed fetch or unparseable content records a
failure; the same content under the same recipe and title is unchanged; anything else is
indexed. The Indexer applies the outcome; nothing here touches a store.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Literal

from ragd.indexing.parse_guard import ParseGuard, Parsing
from ragd.indexing.parsers import UnsupportedDocument
from ragd.indexing.pipeline import Pipeline, PreparedWrite
from ragd.sources.deliveries import Delivery
from ragd.stores.records import SETTLED, DocumentRecord, DocumentWrite, content_hash, doc_id_of

# An entry's content type picks the parser, as a file's suffix does.
_SUFFIX_FOR_TYPE = {"text/markdown": ".md", "text/html": ".html", "text/plain": ".txt"}

OutcomeKind = Literal["ignored", "nothing", "deleted", "failed", "unchanged", "added", "changed"]


@dataclass(frozen=True, slots=True)
class EntryUpdate:
    """A CMS entry to apply: its content (already fetched), or its deletion.

    `version` (the entry's updated_at as sortable text) orders deliveries: an update
    older than the last applied one for the same entry is ignored. `error` records a
    fetch that failed; the entry is then marked failed with that reason.
    """

    key: str
    uri: str
    deleted: bool = False
    title: str | None = None
    data: bytes | None = None
    content_type: str = "text/markdown"
    version: str | None = None
    error: str | None = None


def entry_update(source: str, delivery: Delivery, *, error: str | None = None) -> EntryUpdate:
    """The update a delivery (from a webhook or a poll) makes; `error` records that its
    content could not be had. Without a URL the document's uri is a `urn:ragd:` name."""
    uri = delivery.url or f"urn:ragd:{source}:{delivery.entry_id}"
    update = EntryUpdate(
        key=delivery.entry_id,
        uri=uri,
        deleted=delivery.event == "delete",
        title=delivery.title,
        content_type=delivery.content_type,
        version=delivery.version(),
        error=error,
    )
    if update.deleted or error is not None or delivery.content is None:
        return update
    # Delivered text is text: a NUL in it is not the sign of a binary file that it is in
    # a file's first bytes, and reads as unknown text, as one past them does
    # (ragd.indexing.parsers.decoding).
    return replace(update, data=delivery.content.replace("\x00", "\ufffd").encode())


@dataclass(frozen=True, slots=True)
class EntryOutcome:
    """What a delivery does: `kind` is also the report counter it adds to ("nothing" and
    "unchanged" write nothing; the others hand `write` to the batch writer)."""

    kind: OutcomeKind
    write: PreparedWrite | None = None
    size: int = 0  # the content's size, for an unchanged entry


def entry_outcome(
    source: str,
    update: EntryUpdate,
    record: DocumentRecord | None,
    *,
    applied_version: str | None,
    pipeline: Pipeline,
    guard: ParseGuard | None = None,
) -> EntryOutcome:
    """Decide what `update` does to the document `record` (None: never indexed), whose
    last applied delivery had `applied_version`. Parses the content when it changed (and
    did not fail before), inside `guard` when given."""
    doc_id = doc_id_of(source, update.key)
    version = update.version
    if version is not None and applied_version is not None and version < applied_version:
        return EntryOutcome("ignored")  # an older delivery arriving late must not win
    base: PreparedWrite = DocumentWrite(
        doc_id=doc_id,
        source=source,
        key=update.key,
        uri=update.uri,
        status="deleted",
        entry_version=update.version,
    )
    if update.deleted:
        return EntryOutcome("nothing") if record is None else EntryOutcome("deleted", base)
    fingerprint = pipeline.fingerprint
    if update.error is not None or update.data is None:
        reason = update.error or "no content"
        return EntryOutcome(
            "failed", replace(base, status="failed", error=reason, fingerprint=fingerprint)
        )
    digest = content_hash(update.data)
    if (
        record is not None
        and record.status in SETTLED
        and record.content_hash == digest
        and record.fingerprint == fingerprint
        # A new title alone rewrites an indexed entry. Content that failed stays failed:
        # parsing the same bytes again fails again, or crashes again (ragd.indexing.parse_guard).
        and (record.status == "failed" or (update.title or record.title) == record.title)
    ):
        return EntryOutcome("unchanged", size=len(update.data))
    suffix = _SUFFIX_FOR_TYPE.get(update.content_type, ".txt")
    parsing = Parsing(
        doc_id, source, update.key, update.uri, len(update.data), 0, digest, fingerprint
    )
    try:
        with nullcontext() if guard is None else guard.parsing(parsing):
            processed = pipeline.process(
                update.data, f"{update.key}{suffix}", doc_id, title=update.title
            )
    except UnsupportedDocument as exc:
        failed = replace(
            base, status="failed", error=exc.reason, content_hash=digest, fingerprint=fingerprint
        )
        return EntryOutcome("failed", failed)
    write = replace(
        base,
        status="indexed",
        title=processed.title,
        size=len(update.data),
        content_hash=digest,
        fingerprint=fingerprint,
        chunks=processed.chunks,
        error=processed.warning,
    )
    kind: OutcomeKind = "added" if record is None or record.content_hash is None else "changed"
    return EntryOutcome(kind, write)
