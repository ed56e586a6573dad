"""A daemon's writer thread over real stores and a real job queue, run in this process:
the queue drained by the same Writer `ragd serve` runs, without HTTP around it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ragd.embedding import Embedder
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.service.daemon.notify import Notifier
from ragd.service.daemon.writer import Writer, WriterStats
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.jobs import JobQueue
from ragd.stores.records import DocumentRecord
from tests.conftest import FakeEmbedder


class QuietHost:
    """A WriterHost that compacts as it is told and hears nothing else."""

    def __init__(self, compact: Callable[[], None]) -> None:
        self.compact = compact

    def committed(self) -> None:
        pass

    def second_stage_written(self) -> None:
        pass

    def between_commits(self) -> None:
        pass

    def writer_exited(self) -> None:
        pass


class WriterHarness:
    """A writer over webhook sources (`cms` unless named), running until `close`."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        compact: Callable[[], None] = lambda: None,
        retry_base: float = 0.05,
        max_attempts: int = 3,
        embedder: Embedder | None = None,
        sources: frozenset[str] = frozenset({"cms"}),
    ) -> None:
        self.stores = WriterStores(DataDir(tmp_path / "data"), keyword_rows=manifest_keyword_rows)
        embedder = embedder or FakeEmbedder()
        indexer = Indexer(
            self.stores,
            [],
            Pipeline(ChunkSettings(900, 120), embedder.identity),
            embedder,
            other_sources=sources,
        )
        self.queue = JobQueue.beside(self.stores.manifest)
        self.stats = WriterStats()
        self.stop = threading.Event()
        self.writer = Writer(
            indexer,
            self.queue,
            Notifier({}),
            self.stop,
            stats=self.stats,
            host=QuietHost(compact),
            max_attempts=max_attempts,
            retry_base=retry_base,
        )

    def entries(self, *contents: tuple[str, str], version: str | None = None) -> None:
        """Queue one delivery of entries (key, markdown content), as the intake does."""
        payloads = [(key, json.dumps({"event": "upsert", "content": c})) for key, c in contents]
        rows = [(key, payload, version) for key, payload in payloads]
        self.queue.accept_delivery("cms", f"d-{time.monotonic_ns()}", rows)

    def start(self) -> None:
        if not self.writer.is_alive():
            self.writer.start()

    def run_until_idle(self, timeout: float = 30) -> None:
        """Start the writer if need be, and wait until it has done every queued job."""
        self.start()
        self.writer.wake.set()  # as the daemon does on every enqueue
        deadline = time.monotonic() + timeout
        while self.queue.depth() or self.stats.busy:
            assert time.monotonic() < deadline, "the queue did not drain"
            time.sleep(0.02)

    def document(self, key: str, source: str = "cms") -> DocumentRecord | None:
        return self.stores.manifest.document(f"{source}:{key}")

    def close(self) -> None:
        self.stop.set()
        self.writer.wake.set()
        if self.writer.is_alive():
            self.writer.join(10)
        self.queue.close()
        self.stores.close()
