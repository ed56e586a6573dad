"""The daemon's second stage: embedding new chunks' second-stage vectors in the background.

A change is searchable as soon as the writer has written its first-stage vectors (well
under a second); its second-stage vectors can take seconds per document. So they come
later, from this thread: it reads which chunks still lack one (its own read-only manifest
connection), embeds a small batch at low CPU priority (its own thread's niceness; the
model runs on this one thread), and hands the vectors to the writer, which writes them
between its jobs (ragd.service.daemon.writer). It waits for each hand-over to be written before
reading again, so nothing is embedded twice. Until then a chunk's hits are ranked by the
first stage.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future

from ragd.embedding import Embedder
from ragd.indexing.second_stage import Embedded, embed
from ragd.service.logs import get_logger
from ragd.stores.manifest_reader import ManifestReader

log = get_logger("ragd.service.second_stage")

# Texts per hand-over: a few seconds of embedding on one core, so a stop or a newly
# edited document waits little, and each write (a LanceDB commit) carries enough rows.
BATCH = 16
# Niceness of this thread: the writer and the queries come first.
NICENESS = 10
# How long it sleeps when nothing is missing, unless a commit wakes it sooner; and after a
# batch failed (the writer logged why), before it tries again.
IDLE_SECONDS = 30.0

HandOver = Callable[[Embedded], "Future[int]"]


class SecondStageFiller(threading.Thread):
    """Embeds missing second-stage vectors until told to stop."""

    def __init__(
        self,
        open_manifest: Callable[[], ManifestReader],
        embedder: Embedder,
        hand_over: HandOver,
        stop: threading.Event,
        *,
        batch: int = BATCH,
    ) -> None:
        super().__init__(name="ragd-second-stage", daemon=True)
        self._open_manifest = open_manifest
        self.embedder = embedder
        self.hand_over = hand_over
        self.stop = stop
        self.batch = batch
        self.wake = threading.Event()  # set after each commit: there may be new chunks
        self.embedded = 0
        self.busy = False
        self._after: tuple[str, int] | None = None  # where the last batch ended

    def run(self) -> None:
        with contextlib.suppress(OSError):  # not permitted, or not Linux: normal priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        try:
            manifest = self._open_manifest()
        except Exception as exc:
            log.exception("second_stage_stopped", error=str(exc))
            return
        try:
            while not self.stop.is_set():
                try:
                    worked = self._step(manifest)
                except Exception as exc:  # a bad batch or a busy database: try again later
                    log.exception("second_stage_step_failed", error=str(exc))
                    self._after = None
                    self.stop.wait(IDLE_SECONDS)
                    continue
                if not worked:
                    self.wake.wait(IDLE_SECONDS)
                    self.wake.clear()
        finally:
            manifest.close()

    def _step(self, manifest: ManifestReader) -> bool:
        """Embed and hand over one batch; False when nothing is missing."""
        work = manifest.second_stage_missing(self.batch, self._after)
        if not work and self._after is not None:
            self._after = None  # a sweep ended; chunks before it may be new since
            work = manifest.second_stage_missing(self.batch)
        if not work:
            return False
        self._after = work[-1].position
        self.busy = True
        try:
            embedded = embed(work, self.embedder)
        finally:
            self.busy = False
        written = self.hand_over(embedded)
        while not self.stop.is_set():
            try:
                rows = written.result(timeout=1.0)
            except TimeoutError:
                continue
            except Exception:  # the writer logged it; the same chunks come up again later
                self.stop.wait(IDLE_SECONDS)
                return True
            self.embedded += len(embedded.keys)
            log.info("second_stage_written", texts=len(embedded.keys), chunks=rows)
            break
        return True

    def to_json(self) -> dict[str, object]:
        """The second-stage section of the daemon status."""
        return {"alive": self.is_alive(), "busy": self.busy, "embedded": self.embedded}
