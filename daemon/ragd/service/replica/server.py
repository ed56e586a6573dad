"""`ragd serve --reader`: a read replica and its lifecycle.

Owns building a replica (the models loaded, the first generation fetched if one is
published, the HTTP socket bound), its refresh thread, which looks for a newer
generation every [storage] refresh_interval, and what its HTTP API answers
(`ReplicaBackend`, the `Backend` of ragd.service.http.api). A replica has no writer, no
watcher, no scheduler and no lock on anything: any number run beside one writer, each
with its own data_dir as a cache. Webhooks go to the writer; a replica refuses them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from ragd.adapters.object_store import object_store
from ragd.errors import ConfigError, UsageError
from ragd.search.results import QueryRequest
from ragd.service.access import Grant, scoped_status, serving_tokens
from ragd.service.daemon.notify import Notifier
from ragd.service.daemon.stopping import StopSignal
from ragd.service.http.api import create_app
from ragd.service.http.backend import timed_search
from ragd.service.http.gate import AccessGate
from ragd.service.http.metrics import Metrics, Snapshot
from ragd.service.http.page import status_page
from ragd.service.http.scrape import source_gauges
from ragd.service.http.server import HttpServer
from ragd.service.logs import get_logger
from ragd.service.mcp.endpoint import mcp_endpoint, ragd_server
from ragd.service.replica.generation import NotReady, ServedGeneration
from ragd.service.runtime import Runtime
from ragd.sources.cms.formats import WebhookRequest
from ragd.stores.replica import Replica

log = get_logger("ragd.replica")

STOP_TIMEOUT = 8.0
WATCHDOG_SECONDS = 5.0


@dataclass
class ReplicaBackend:
    """The HTTP API's backend over a replica's served generation."""

    runtime: Runtime
    served: ServedGeneration
    state: Any  # Callable[[], str]: "starting", "ok" or "stopping"

    def __post_init__(self) -> None:
        self.metrics = Metrics(self._snapshot, replica=self._replica_gauges)

    @property
    def max_body_bytes(self) -> int:
        return self.runtime.config.http.max_body_bytes

    def search(self, request: QueryRequest) -> Any:
        return timed_search(self.served.search, request, self.runtime, self.metrics)

    def context(self, request: QueryRequest, max_chars: int) -> Any:
        return self.served.context(request, max_chars).to_json()

    def status(self) -> dict[str, object]:
        current = self.served.current()
        report = current.runtime.status().to_json()
        report["replica"] = self.served.describe(datetime.now(UTC)) | {
            "state": self.state(),
            "pid": os.getpid(),
            "data_dir": str(self.runtime.data_dir.root.resolve()),
            "storage_uri": self.runtime.config.storage.uri,
        }
        return report

    def index(self, full: bool) -> dict[str, object]:
        raise UsageError("a read replica does not index: ask the writer's ragd serve")

    def serves(self, data_dir: str) -> bool:
        return Path(data_dir) == self.runtime.data_dir.root.resolve()

    def health(self) -> dict[str, object]:
        """ "ok" only while a generation is served: a load balancer sends no query to a
        replica that has none yet."""
        state = self.state()
        try:
            number = self.served.current().number
        except NotReady:
            return {"status": "starting" if state == "ok" else state, "generation": None}
        return {"status": state, "generation": number}

    def has_webhook_source(self, source: str) -> bool:
        return False

    def webhook(self, source: str, request: WebhookRequest) -> tuple[int, dict[str, Any]]:
        return 404, {"error": "this is a read replica: send webhooks to the writer"}

    def note_webhook(self, source: str, outcome: str, **fields: Any) -> None:
        """A replica counts no deliveries."""

    def metrics_text(self) -> bytes:
        return self.metrics.render()

    def status_page(self, grant: Grant) -> str:
        """The status page of the served generation (a replica has no writer events)."""
        readers = self.served.current().readers
        report = scoped_status(self.status(), grant)
        return status_page(readers, report, [], datetime.now(UTC))

    def _snapshot(self) -> Snapshot:
        now = datetime.now(UTC)
        try:
            readers = self.served.current().readers
        except NotReady:
            return Snapshot(sources={}, stores_agree=True, writer_alive=None)
        freshness = readers.freshness(now)
        manifest, lancedb, tantivy = readers.chunk_counts()
        return Snapshot(
            sources={
                name: source_gauges(source, now, scanned_at=source.checked_at, degraded=None)
                for name, source in freshness.items()
            },
            stores_agree=manifest == lancedb == tantivy,
            writer_alive=None,
        )

    def _replica_gauges(self) -> tuple[int, float] | None:
        try:
            generation = self.served.current().number
        except NotReady:
            return None
        return generation, self.served.lag_seconds(datetime.now(UTC))


class ReplicaServer:
    """Everything `ragd serve --reader` runs; use as a context manager."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        config = runtime.config
        if config.storage.uri is None:
            raise ConfigError(
                "ragd serve --reader needs the index on object storage",
                hint='set [storage] uri = "s3://bucket/prefix", as the writer has it',
            )
        self.runtime = runtime
        self.notifier = notifier or Notifier()
        self.state = "starting"
        self.stop = threading.Event()
        self._resources = contextlib.ExitStack()
        try:
            tokens = serving_tokens(config, os.environ)  # before anything is opened
            self.stopping = StopSignal()
            self._resources.callback(self.stopping.close)
            self._resources.enter_context(self.stopping.installed())
            replica = Replica(object_store(config.storage.uri), runtime.data_dir.replica)
            self.served = ServedGeneration(runtime, replica)
            self._resources.callback(self.served.close)
            runtime.embedder.embed([])  # load the models before the first query
            if runtime.second_stage is not None:
                runtime.second_stage.load()
            self.served.refresh()
            backend = ReplicaBackend(runtime, self.served, state=lambda: self.state)
            http = config.http
            mcp = mcp_endpoint(
                ragd_server(self.served, backend.status),
                host=http.host,
                port=http.port,
                max_body_bytes=http.max_body_bytes,
                max_connections=http.max_connections,
            )
            app = AccessGate(create_app(backend, mcp), tokens, backend.metrics.denied)
            self.http = HttpServer(app, http, closed=backend.metrics.connection_closed)
            self._resources.callback(self.http.close)
        except BaseException:
            self._resources.close()
            raise
        self._refresher = threading.Thread(
            target=self._refresh_loop, name="ragd-replica", daemon=True
        )

    def __enter__(self) -> ReplicaServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._resources.close()

    def serve(self) -> int:
        """Run until told to stop; returns the exit code."""
        self.http.start()
        self._refresher.start()
        self.state = "ok"
        self.notifier.ready()
        log.info(
            "serving_replica",
            listen=self.runtime.config.http.listen,
            storage=self.runtime.config.storage.uri,
            generation=self.served.describe(datetime.now(UTC))["generation"],
            pid=os.getpid(),
        )
        try:
            while not self.stopping.signalled:
                self.stopping.wait()
        finally:
            self.state = "stopping"
            self.notifier.stopping()
            self.stop.set()
            log.info("stopping")
            deadline = time.monotonic() + STOP_TIMEOUT
            self.http.begin_stop()
            self._refresher.join(max(0.1, deadline - time.monotonic()))
            self.http.join(max(0.1, deadline - time.monotonic()))
            log.info("stopped")
        return 0

    def _refresh_loop(self) -> None:
        """Look for a newer generation every refresh_interval; tell systemd's watchdog
        that the replica lives at least every WATCHDOG_SECONDS meanwhile."""
        every = self.runtime.config.storage.refresh_interval.total_seconds()
        due = time.monotonic() + every
        while not self.stop.wait(min(every, WATCHDOG_SECONDS)):
            self.notifier.watchdog()
            if time.monotonic() >= due:
                self.served.refresh()
                due = time.monotonic() + every
