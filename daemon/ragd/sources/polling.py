"""One poll of a remote source: list it, compare, fetch what changed, hand it on.

Owns running a poll end to end over a `RemoteSource` (ragd.sources.remote): the listing
(a listing that fails, or that names nothing while documents are indexed, deletes
nothing and is reported as the source's error), the plan against the versions the
manifest applied, the fetches of new and changed entries on a few threads (the source's
HTTP client holds the per-host limit), and handing the results on in batches through
`emit`, deletes first. An entry a source that `confirms_deletes` no longer lists is
fetched, and deleted only if the source says it is gone, with the poll's start as the
delete's version: an entry updated after that (a webhook that came while the poll ran)
is newer, and the delete does not undo it. A sitemap's deletes carry no version (it has
no webhooks to race, and a page it lists again must come back whatever its lastmod).
What `emit` does with the results (queue them for the daemon's writer, or apply them in
`ragd index`) is the caller's; so is recording how the poll ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime

from ragd.errors import RagdError, SourceError
from ragd.sources.deliveries import Delivery
from ragd.sources.remote import Known, Listed, RemoteSource, plan_poll
from ragd.sources.webhooks import WebhookRejected

EMIT_EVERY = 32  # entries per batch handed on: the daemon's writer applies them as they come
MAX_ERRORS_KEPT = 10

Emit = Callable[[list[Delivery]], None]


@dataclass
class PollReport:
    """How one poll went. `error` set: the source could not be listed (nothing deleted);
    `failed` lists the keys whose fetch failed (their documents keep what they had)."""

    source: str
    began_at: str
    listed: int = 0
    fetched: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error: str | None = None
    interrupted: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "listed": self.listed,
            "fetched": self.fetched,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "failed": len(self.failed),
            "errors": self.errors,
            "error": self.error,
            "interrupted": self.interrupted,
            "seconds": round(self.seconds, 3),
        }


def poll(
    source: RemoteSource,
    known: Mapping[str, tuple[str | None, str]],
    emit: Emit,
    *,
    began_at: str,
    threads: int = 4,
    stop: Callable[[], bool] | None = None,
) -> PollReport:
    """Poll `source` once. `known` is the manifest's view of its documents (key ->
    (version applied, first seen at): ManifestReader.entry_versions)."""
    started = time.monotonic()
    report = PollReport(source.name, began_at)
    try:
        listed = source.listing()
    except SourceError as exc:
        report.error = str(exc)
    except Exception as exc:  # a reader's surprise is this source's failure, not the poll's
        report.error = f"source '{source.name}': internal error: {type(exc).__name__}"
    if report.error is not None:
        report.seconds = time.monotonic() - started
        return report
    report.listed = len(listed)
    if not listed and known:
        report.error = (
            f"source '{source.name}' listed no entries but {len(known)} documents are "
            "indexed; nothing was deleted"
        )
    versions = {key: Known(version, seen) for key, (version, seen) in known.items()}
    plan = plan_poll(listed, versions, began_at=began_at)
    report.unchanged = len(plan.unchanged)
    as_of = datetime.fromisoformat(began_at) if source.confirms_deletes else None
    fetch = plan.fetch
    if source.confirms_deletes:
        fetch = fetch + [Listed(key, None, "") for key in plan.delete]
    elif plan.delete:
        emit([Delivery("delete", key) for key in plan.delete])
        report.deleted += len(plan.delete)
    _fetch_all(source, fetch, emit, report, threads, stop or (lambda: False), as_of)
    report.seconds = time.monotonic() - started
    return report


def _fetch_all(
    source: RemoteSource,
    items: list[Listed],
    emit: Emit,
    report: PollReport,
    threads: int,
    stop: Callable[[], bool],
    as_of: datetime | None,
) -> None:
    batch: list[Delivery] = []
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="ragd-poll") as pool:
        waiting: dict[Future[Delivery | None], Listed] = {}
        queue = iter(items)
        for item in queue:  # keep a few fetches in flight, no more: a stop is prompt
            if stop():
                report.interrupted = True
                break
            waiting[pool.submit(source.fetch, item)] = item
            if len(waiting) >= 2 * threads:
                break
        while waiting:
            done, _ = wait(waiting, return_when=FIRST_COMPLETED)
            for future in done:
                item = waiting.pop(future)
                _collect(future, item, batch, report, as_of)
                if not stop() and (following := next(queue, None)) is not None:
                    waiting[pool.submit(source.fetch, following)] = following
            if len(batch) >= EMIT_EVERY:
                emit(batch)
                batch = []
            if stop() and not report.interrupted:
                report.interrupted = True
    if batch:
        emit(batch)


def _collect(
    future: Future[Delivery | None],
    item: Listed,
    batch: list[Delivery],
    report: PollReport,
    as_of: datetime | None,
) -> None:
    try:
        delivery = future.result()
    except (RagdError, WebhookRejected) as exc:
        _failed(report, item.key, str(exc))
        return
    except Exception as exc:  # one entry's surprise must not end the poll
        _failed(report, item.key, f"internal error: {type(exc).__name__}")
        return
    if delivery is None:  # the source says it is gone
        batch.append(Delivery("delete", item.key, updated_at=as_of))
        report.deleted += 1
        return
    batch.append(delivery)
    report.fetched += 1


def _failed(report: PollReport, key: str, reason: str) -> None:
    report.failed.append(key)
    if len(report.errors) < MAX_ERRORS_KEPT:
        report.errors.append(f"{key}: {reason[:300]}")
