"""A poll applied on the spot: what `ragd index` does with each remote source.

Owns running one poll (ragd.sources.polling) with the one writer's Indexer as its
sink: each batch the poll hands on is applied as entry updates at once (the daemon
queues them instead, ragd.service.daemon.poller), and how the poll ended is recorded in the
manifest (a source that could not be listed reads as stale; nothing is deleted).
"""

from __future__ import annotations

from ragd.indexing.entries import entry_update
from ragd.indexing.indexer import Indexer
from ragd.indexing.report import IndexReport
from ragd.sources.deliveries import Delivery
from ragd.sources.polling import PollReport, poll
from ragd.sources.remote import RemoteSource
from ragd.stores.records import utc_now


def apply_poll(
    indexer: Indexer, source: RemoteSource, *, threads: int = 4
) -> tuple[IndexReport, PollReport]:
    """Poll `source` once and apply what changed; (what the index did, what the poll
    found). A listing that failed is the report's error; a page that could not be
    fetched is a warning (its document keeps what it had)."""
    began_at = utc_now()
    applied = IndexReport()

    def emit(deliveries: list[Delivery]) -> None:
        nonlocal applied
        updates = [entry_update(source.name, d) for d in deliveries]
        applied = applied.combined(indexer.apply_entries(source.name, updates))

    polled = poll(
        source,
        indexer.manifest.entry_versions(source.name),
        emit,
        began_at=began_at,
        threads=threads,
        stop=indexer.should_stop,
    )
    if not polled.interrupted:
        indexer.manifest.record_poll(
            source.name, began_at=began_at, error=polled.error, unconfirmed=polled.failed
        )
    applied.unchanged += polled.unchanged
    applied.interrupted = applied.interrupted or polled.interrupted
    if polled.error is not None:
        applied.errors.append(polled.error)
    applied.skipped.extend(f"{source.name}:{error}" for error in polled.errors)
    return applied, polled
