"""The daemon's polls of remote sources: sitemaps, WordPress sites, CMS reconciles.

Owns running one poll of a source (ragd.sources.polling) on the scheduler's thread,
not the writer's: the listing and the fetches may take minutes, and meanwhile the
writer keeps applying file changes and webhooks. What a poll finds goes on the durable
queue as `entry` jobs, batch by batch, followed by a `polled` job that tells the
writer how the poll ended (a source that could not be listed reads as stale; nothing
is deleted). A poll cut short by a stop records nothing: the next one starts over.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping

from ragd.service.logs import get_logger
from ragd.sources.deliveries import Delivery, job_payload
from ragd.sources.polling import PollReport, poll
from ragd.sources.remote import RemoteSource
from ragd.stores.jobs import JobQueue
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import utc_now

log = get_logger("ragd.service.daemon.poller")


class Poller:
    """Polls the remote sources of one daemon, each when the scheduler says."""

    def __init__(
        self,
        sources: Mapping[str, RemoteSource],
        open_manifest: Callable[[], ManifestReader],
        queue: JobQueue,
        wake_writer: Callable[[], None],
        stop: threading.Event,
        *,
        threads: int = 4,
    ) -> None:
        self.sources = dict(sources)
        self._open_manifest = open_manifest
        self._queue = queue
        self._wake_writer = wake_writer
        self._stop = stop
        self._threads = threads
        self.last: dict[str, PollReport] = {}  # the last finished poll of each source
        # When the last poll that listed each source whole began: its last scan, to monitoring.
        self.last_listed: dict[str, str] = {}

    def poll(self, name: str) -> None:
        """Poll source `name` once (the scheduler never runs two polls of one source)."""
        try:
            report = self._poll(name)
        except Exception as exc:  # one poll's surprise must not end the next
            log.exception("poll_crashed", source=name, error=f"{type(exc).__name__}: {exc}")
            return
        self.last[name] = report
        if report.error is None and not report.interrupted:
            self.last_listed[name] = report.began_at
        fields = report.to_json()
        if report.error is not None:
            log.warning("poll_failed", **fields)
        else:
            log.info("poll_finished", **fields)

    def _poll(self, name: str) -> PollReport:
        began_at = utc_now()
        manifest = self._open_manifest()
        try:
            known = manifest.entry_versions(name)
        finally:
            manifest.close()

        def emit(deliveries: list[Delivery]) -> None:
            entries = [(d.entry_id, job_payload(d), d.version()) for d in deliveries]
            self._queue.enqueue_entries(name, entries)
            self._wake_writer()

        report = poll(
            self.sources[name],
            known,
            emit,
            began_at=began_at,
            threads=self._threads,
            stop=self._stop.is_set,
        )
        if not report.interrupted:
            outcome = {"began_at": began_at, "error": report.error, "unconfirmed": report.failed}
            self._queue.enqueue_polled(name, json.dumps(outcome))
            self._wake_writer()
        return report

    def to_json(self) -> dict[str, object]:
        """The last poll of each source, for the daemon's status."""
        return {name: report.to_json() for name, report in self.last.items()}
