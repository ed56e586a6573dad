"""Listed files: what reading one does to its document.

Owns `file_outcome`, which decides from what was read (a `Prepared`) and the document's
record alone, and the two questions a pass asks before reading: may the stat stand for
the content (`stat_unchanged`), and which hash makes parsing unnecessary (`known_hash`).
An unreadable or unparseable file records a failure; the same bytes under the same
recipe are unchanged; anything else is indexed. The Indexer applies the outcome; nothing
here touches a store. `ragd.indexing.entries` decides the same for CMS deliveries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragd.indexing.pipeline import PreparedWrite
from ragd.indexing.preparing import Prepared
from ragd.sources.folders import FileStat
from ragd.stores.records import SETTLED, DocumentRecord, DocumentWrite, doc_id_of, stat_vouches

FileKind = Literal["unchanged", "added", "changed", "failed"]


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What a read file does: `kind` is also the report counter it adds to. `write` is
    None only for an unchanged file that is not rewritten; its stat is then confirmed."""

    kind: FileKind
    write: PreparedWrite | None
    size: int = 0
    mtime_ns: int = 0


def file_outcome(
    source: str,
    uri: str,
    entry: FileStat,
    record: DocumentRecord | None,
    prepared: Prepared,
    *,
    fingerprint: str,
    full: bool,
    includes_changed: bool = False,
) -> FileOutcome:
    """Decide what the file `entry`, read as `prepared`, does to the document `record`
    (None: never indexed) under the pipeline `fingerprint`. `full` rewrites an unchanged
    document anyway; `includes_changed` (a file it includes changed) makes it changed."""
    key, listed_size, listed_mtime_ns = entry
    doc_id = doc_id_of(source, key)

    def failed(reason: str, size: int, mtime_ns: int, digest: str | None) -> FileOutcome:
        write: PreparedWrite = DocumentWrite(
            doc_id=doc_id,
            source=source,
            key=key,
            uri=uri,
            status="failed",
            size=size,
            mtime_ns=mtime_ns,
            content_hash=digest,
            fingerprint=fingerprint,
            error=reason,
        )
        return FileOutcome("failed", write)

    if prepared.size is None or prepared.mtime_ns is None:
        return failed(prepared.error or "unreadable", listed_size, listed_mtime_ns, None)
    size, mtime_ns, digest = prepared.size, prepared.mtime_ns, prepared.digest
    kind: FileKind
    if (
        record is not None
        and record.status in SETTLED
        and record.fingerprint == fingerprint
        and record.content_hash == digest
        and not includes_changed
    ):
        if not full:
            return FileOutcome("unchanged", None, size=size, mtime_ns=mtime_ns)
        kind = "unchanged"  # --full rewrites it anyway
    elif record is None or record.content_hash is None:
        kind = "added"
    else:
        kind = "changed"
    processed = prepared.processed
    if processed is None:
        return failed(prepared.error or "cannot be parsed", size, mtime_ns, digest)
    write: PreparedWrite = DocumentWrite(
        doc_id=doc_id,
        source=source,
        key=key,
        uri=uri,
        status="indexed",
        title=processed.title,
        size=size,
        mtime_ns=mtime_ns,
        content_hash=digest,
        fingerprint=fingerprint,
        chunks=processed.chunks,
        error=processed.warning,
        includes=processed.includes,
    )
    return FileOutcome(kind, write, size, mtime_ns)


def stat_unchanged(record: DocumentRecord, entry: FileStat, fingerprint: str) -> bool:
    """A listed file whose size and mtime are those it was indexed with, and may stand
    for its content (ragd.stores.records.stat_vouches): unchanged, without opening it.

    Listings only. A key hint means the watcher saw the file written, and a rewrite of
    the same size within one timestamp tick of the last (coarse clocks, FAT, network
    mounts) leaves both equal: hinted files are read and hashed instead.
    """
    same_stat = (record.size, record.mtime_ns) == (entry[1], entry[2])
    return same_stat and stat_vouches(record, fingerprint)


def known_hash(record: DocumentRecord | None, fingerprint: str, *, full: bool) -> str | None:
    """The hash that makes parsing a file unnecessary: its settled, same-recipe content."""
    if full or record is None or record.status not in SETTLED:
        return None
    return record.content_hash if record.fingerprint == fingerprint else None
