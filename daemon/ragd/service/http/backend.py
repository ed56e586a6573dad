"""What the HTTP API of `ragd serve` answers from: queries, status, webhooks and metrics.

Owns what the daemon answers besides its readers' queries (ragd.service.readers): the
status report with the daemon's own section, the webhook intake hand-off, and the
registry behind /metrics (ragd.service.http.scrape reads its snapshot). It implements the
`Backend` of `ragd.service.http.api` over the parts the lifecycle (`ragd.service.serve`)
builds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragd.adapters import allocator
from ragd.search.results import QueryRequest, SearchResponse
from ragd.search.status import StatusReport
from ragd.service.access import Grant, scoped_status, visible_events
from ragd.service.daemon.filler import SecondStageFiller
from ragd.service.daemon.intake import WebhookIntake
from ragd.service.daemon.poller import Poller
from ragd.service.daemon.scheduler import Scheduler
from ragd.service.daemon.writer import Writer
from ragd.service.http.metrics import Metrics
from ragd.service.http.page import status_page
from ragd.service.http.scrape import Scraper
from ragd.service.logs import get_logger
from ragd.service.readers import Readers
from ragd.service.runtime import Runtime
from ragd.sources.cms.formats import WebhookRequest
from ragd.sources.watcher import Watcher
from ragd.stores.jobs import JobQueue

log = get_logger("ragd.service")

# Every source name that is not configured counts under this one label, and logs cut a
# name to this length: names come from the request path, so a caller could otherwise
# grow /metrics and the log without bound.
UNKNOWN_SOURCE = "_unknown"
LOGGED_NAME_CHARS = 64

# A status read that disagrees while the writer is busy is retried this often, this far apart.
STATUS_RECHECKS = 3
STATUS_RECHECK_PAUSE = 0.25


def timed_search(
    search: Callable[[QueryRequest], SearchResponse],
    request: QueryRequest,
    runtime: Runtime,
    metrics: Metrics,
) -> Any:
    """Run a query in the configured mode unless it names one; its JSON. Its latency goes
    to ragd_query_seconds by mode."""
    chosen = replace(request, mode=request.mode or runtime.config.search.mode)
    started = time.perf_counter()
    result = search(chosen).to_json()
    metrics.query_seconds.labels(mode=chosen.mode).observe(time.perf_counter() - started)
    return result


@dataclass
class ServiceBackend:
    """The HTTP API's backend over the running daemon's parts."""

    runtime: Runtime
    readers: Readers
    queue: JobQueue
    writer: Writer
    watcher: Watcher
    scheduler: Scheduler
    webhooks: WebhookIntake
    filler: SecondStageFiller | None
    poller: Poller
    state: Callable[[], str]
    started: float
    publishing: Callable[[], dict[str, object] | None] = lambda: None

    def __post_init__(self) -> None:
        scraper = Scraper(
            self.runtime,
            self.readers,
            self.queue,
            self.writer.stats,
            self.writer.is_alive,
            self.watcher.health,
            self.poller.last_listed,
        )
        self.metrics = Metrics(scraper.snapshot)

    @property
    def max_body_bytes(self) -> int:
        return self.runtime.config.http.max_body_bytes

    def search(self, request: QueryRequest) -> Any:
        return timed_search(self.readers.search, request, self.runtime, self.metrics)

    def context(self, request: QueryRequest, max_chars: int) -> Any:
        return self.readers.context(request, max_chars).to_json()

    def status(self) -> dict[str, object]:
        # The daemon's counters first: the report, read after them, then holds at least
        # everything they count ("scan finished, queue empty" means the stores show it).
        daemon = {
            "state": self.state(),
            "pid": os.getpid(),
            "data_dir": str(self.runtime.data_dir.root.resolve()),
            "uptime_seconds": round(time.monotonic() - self.started, 1),
            "queue_depth": self.queue.depth(),
            "watcher": self.watcher.health().__dict__,
            "writer_alive": self.writer.is_alive(),
            "writer": self.writer.stats.to_json(),
            "lancedb_versions": self.readers.vectors.version_count(),
            "next_jobs": self.scheduler.next_runs(),
            "second_stage": None if self.filler is None else self.filler.to_json(),
            "polls": self.poller.to_json(),
            "publishing": self.publishing(),
        }
        report = self._settled_status().to_json()
        report["daemon"] = daemon
        allocator.trim()  # the report read every chunk id of three stores; they are free now
        return report

    def _settled_status(self) -> StatusReport:
        """The report; a disagreement seen while the writer works is checked again.

        The three stores are read one after another, so a batch written between the reads
        can look like a disagreement. A real one (a crash's leftovers, a broken store) is
        still there after the writer has moved on, and is reported.
        """
        # With every root watched, a change to a file is a queued job: only those files
        # are stat'ed (`build_status`), not every document's.
        watched = not self.watcher.health().unwatched_roots
        report = self.runtime.status(watched=watched)
        for _ in range(STATUS_RECHECKS):
            if report.agreement.agree or not self.writer.stats.busy:
                break
            time.sleep(STATUS_RECHECK_PAUSE)
            report = self.runtime.status(watched=watched)
        return report

    def index(self, full: bool) -> dict[str, object]:
        """`ragd index` beside the daemon: the writer's pass over every folder source, once
        what is queued is applied. Remote sources are polled on their own schedule, and
        second-stage vectors are embedded in the background (`pending` counts them)."""
        report = self.writer.request_pass(full=full).result()
        if self.filler is not None:
            coverage = self.readers.second_stage_coverage()
            report.second_pending = sum(total - done for done, total in coverage.values())
        return report.to_json()

    def serves(self, data_dir: str) -> bool:
        return Path(data_dir) == self.runtime.data_dir.root.resolve()

    def health(self) -> dict[str, object]:
        watcher = self.watcher.health()
        return {
            "status": self.state(),
            "writer_alive": self.writer.is_alive(),
            "degraded": bool(watcher.unwatched_roots) or not self.writer.is_alive(),
        }

    def has_webhook_source(self, source: str) -> bool:
        return self.webhooks.knows(source)

    def webhook(self, source: str, request: WebhookRequest) -> tuple[int, dict[str, Any]]:
        """Authenticate, validate and durably queue one delivery; (status, JSON body)."""
        outcome, answer = self.webhooks.accept(self.queue, source, request)
        if outcome in ("queued", "duplicate"):
            self.writer.wake.set()
        status, body = answer
        # An ignored delivery's reason is the CMS's word on why (a draft, an event or a
        # content type not indexed): without it the log cannot tell a misconfiguration.
        reason = {"reason": body["reason"]} if "reason" in body else {}
        self.note_webhook(
            source, outcome, status=status, delivery_id=body.get("delivery_id"), **reason
        )
        return answer

    def note_webhook(self, source: str, outcome: str, **fields: Any) -> None:
        """Count and log one delivery's outcome, under a bounded name."""
        label = source if self.webhooks.knows(source) else UNKNOWN_SOURCE
        self.metrics.webhook_deliveries.labels(source=label, outcome=outcome).inc()
        shown = source if len(source) <= LOGGED_NAME_CHARS else source[:LOGGED_NAME_CHARS] + "…"
        log.info("webhook_delivery", source=shown, outcome=outcome, **fields)

    def metrics_text(self) -> bytes:
        return self.metrics.render()

    def status_page(self, grant: Grant) -> str:
        """The status page from the same report as /v1/status, with the writer's events,
        of the grant's sources."""
        events = visible_events(self.writer.stats.recent_events(), grant)
        report = scoped_status(self.status(), grant)
        return status_page(self.readers, report, events, datetime.now(UTC))
