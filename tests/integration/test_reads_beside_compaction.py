"""Every read answers while ragd maintains itself: real `ragd serve` processes compacting
and cleaning up LanceDB every couple of seconds under a stream of edits, asked queries,
contexts and status reports all the while.

tests/test_reads_beside_cleanup.py pins the cause down on one table; these check the whole
daemon, and a replica reading the versions the writer cleans up (on a real S3 server).
"""

from __future__ import annotations

import itertools
import threading
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import storage_section
from tests.integration.daemon import Served, small_root, wait_until

# Compaction every 2 s whose cleanup drops versions older than 1 s: hundreds of times the
# production rate (6 h and 10 min), so that reads meet cleanups many times in a run.
SCHEDULE = '[schedule]\ncompact_interval = "2s"\ncleanup_older_than = "1s"\n'
RUN_SECONDS = 14.0
QUESTIONS = ("path parameters", "request body", "query parameters with types", "dependencies")


class Editing(threading.Thread):
    """Rewrites a few pages in turn, one every 0.2 s, until stopped."""

    def __init__(self, root: Path) -> None:
        super().__init__(name="editing", daemon=True)
        self.pages = [root / f"churn-{n}.md" for n in range(4)]
        self.stop = threading.Event()
        self.edits = 0

    def run(self) -> None:
        for n in itertools.count():
            if self.stop.wait(0.2):
                return
            page = self.pages[n % len(self.pages)]
            page.write_text(f"# Churn {n}\n\nRevision {n} of a page about path parameters.\n")
            self.edits += 1


def _reads(served: Served) -> list[tuple[str, Callable[[], Any]]]:
    """One of each read, by name."""
    return [
        ("hybrid query", lambda: served.query(QUESTIONS[0], mode="hybrid")),
        ("vector query", lambda: served.query(QUESTIONS[1], mode="vector")),
        ("bm25 query", lambda: served.query(QUESTIONS[2], mode="bm25")),
        ("context", lambda: served.post_json("/v1/context", {"query": QUESTIONS[3]})),
        ("status", served.status),
    ]


def _read_through(served: Served, seconds: float) -> tuple[int, list[str]]:
    """Every read in turn, back to back, for `seconds`: (reads made, failures)."""
    failures: list[str] = []
    made = 0
    deadline = time.monotonic() + seconds
    for name, read in itertools.cycle(_reads(served)):
        if time.monotonic() > deadline:
            break
        made += 1
        try:
            read()
        except (OSError, ValueError, AssertionError) as exc:  # HTTPError is an OSError
            body = exc.read()[:300] if isinstance(exc, urllib.error.HTTPError) else b""
            failures.append(f"{name}: {exc} {body!r}")
    return made, failures


def _compactions(served: Served) -> int:
    return len(served.events("compacted"))


def test_the_daemon_answers_every_read_while_it_compacts_and_cleans_up(tmp_path: Path) -> None:
    daemon = Served(tmp_path, small_root(tmp_path / "docs", files=10), schedule=SCHEDULE)
    daemon.start().wait_ready()
    editing = Editing(tmp_path / "docs")
    try:
        daemon.wait_scanned()
        before = _compactions(daemon)
        editing.start()
        made, failures = _read_through(daemon, RUN_SECONDS)
    finally:
        editing.stop.set()
        daemon.stop()

    assert failures == []
    assert made > 100
    assert _compactions(daemon) - before >= 4
    assert editing.edits > 40


def test_a_replica_answers_every_read_while_the_writer_cleans_up_what_it_read(
    tmp_path: Path, s3_uri: str
) -> None:
    docs = small_root(tmp_path / "docs", files=10)
    storage = storage_section(s3_uri, "1s")
    writer = Served(tmp_path / "writer", docs, schedule=SCHEDULE, sections=storage)
    reader = Served(tmp_path / "reader", docs, sections=storage, reader=True)
    editing = Editing(docs)
    try:
        writer.start().wait_ready()
        writer.wait_scanned()
        reader.start().wait_ready()
        first = reader.status()["replica"]["generation"]
        before = _compactions(writer)
        editing.start()
        made, failures = _read_through(reader, RUN_SECONDS)
        editing.stop.set()
        # The reader moved on through generations the writer published and pruned.
        wait_until(lambda: reader.status()["replica"]["generation"] > first + 3, 30)
    finally:
        editing.stop.set()
        for served in (writer, reader):
            served.stop()

    assert failures == []
    assert made > 100
    assert _compactions(writer) - before >= 4
    assert reader.events("replica_refresh_failed") == []
