"""The staleness gauges of /metrics: counted from a real manifest on disk, they say what
`ragd status` says, reason by reason, without visiting every document."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.entries import EntryUpdate
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.search.freshness import SourceFreshness, measure_freshness
from ragd.search.staleness import REASONS, SourcePolicy, stale_reasons
from ragd.search.status import SourceInfo, build_status
from ragd.service.daemon.writer import WriterStats
from ragd.service.http.metrics import Metrics, Snapshot, SourceGauges
from ragd.service.http.scrape import WRITER_STALL_SECONDS, watcher_degraded, writer_alive
from ragd.sources.folders import FolderSource
from ragd.sources.watcher import WatchHealth
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.jobs import JobQueue
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_counts import ManifestCounts
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_report import ManifestReport
from ragd.stores.manifest_schema import SCHEMA_VERSION
from ragd.stores.records import ChunkRecord, DocumentWrite, doc_id_of, format_time
from ragd.stores.vectors import VectorStore
from tests.conftest import FakeEmbedder
from tests.faults import FaultPlan

PAGES = {
    "alpha.md": "# Alpha\n\nAardvarks dig burrows at night.\n",
    "beta.md": "# Beta\n\nBadgers dig burrows by day.\n",
    "gamma.md": "# Gamma\n\nGophers dig burrows in gardens.\n",
    "guide/delta.md": "# Delta\n\nDingoes never dig burrows.\n",
    "guide/epsilon.md": "# Epsilon\n\nEchidnas dig for ants.\n",
}
DAY = timedelta(days=1)


class Index:
    """A folder source indexed into real stores under tmp_path, and a webhook source."""

    def __init__(self, tmp_path: Path, embedder: FakeEmbedder) -> None:
        self.root = tmp_path / "docs"
        for key, text in PAGES.items():
            (self.root / key).parent.mkdir(parents=True, exist_ok=True)
            (self.root / key).write_text(text)
        (self.root / "broken.md").write_bytes(b"\x00binary")  # fails: not text
        self.data = DataDir(tmp_path / "data")
        self.embedder = embedder
        self.folder = FolderSource("docs", self.root, ("**/*.md",))
        self.pipeline = Pipeline(ChunkSettings(900, 120), embedder.identity)
        self.fingerprint = self.pipeline.fingerprint

    def indexer(self, stores: WriterStores) -> Indexer:
        return Indexer(stores, [self.folder], self.pipeline, self.embedder, other_sources={"cms"})

    def run(self) -> None:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            indexer = self.indexer(stores)
            indexer.run()
            page = b"# Post\n\nQuokkas smile for photos.\n"
            indexer.apply_entries(
                "cms", [EntryUpdate("post-1", "https://cms.example/1", data=page)]
            )
        finally:
            stores.close()

    def queue(self, *jobs: tuple[str, str]) -> None:
        """Queue watch events, as the daemon's watcher does: (kind, key) of source docs."""
        queue = JobQueue(self.data.manifest)
        try:
            queue.enqueue_many(
                ("path" if kind == "path" else "tree", "docs", key) for kind, key in jobs
            )
        finally:
            queue.close()

    def policies(self, max_age: timedelta = 365 * DAY) -> dict[str, SourcePolicy]:
        return {"docs": SourcePolicy(max_age, self.folder), "cms": SourcePolicy(max_age)}

    def measure(
        self, *, now: datetime | None = None, **policy: timedelta
    ) -> dict[str, SourceFreshness]:
        counts = ManifestCounts.open(self.data.manifest)
        try:
            return measure_freshness(
                counts,
                self.policies(**policy),
                fingerprint=self.fingerprint,
                now=now or datetime.now(UTC),
            )
        finally:
            counts.close()

    def status_reasons(self) -> dict[str, dict[str, int]]:
        """stale_by_reason per source as `ragd status` reports it, every reason present."""
        manifest = ManifestReport.open(self.data.manifest)
        try:
            report = build_status(
                manifest,
                VectorStore.open_readonly(self.data.lancedb),
                KeywordStore.open_readonly(self.data.tantivy),
                sources=[
                    SourceInfo(name, "folder", "", policy)
                    for name, policy in self.policies().items()
                ],
                fingerprint=self.fingerprint,
            )
        finally:
            manifest.close()
        return {s.name: dict.fromkeys(REASONS, 0) | s.stale_by_reason for s in report.sources}


@pytest.fixture
def index(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Index]:
    built = Index(tmp_path, fake_embedder)
    built.run()
    yield built


def _reasons(found: dict[str, SourceFreshness]) -> dict[str, dict[str, int]]:
    return {name: source.stale_by_reason for name, source in found.items()}


# -- the counts against the status report -------------------------------------------------


def test_a_fresh_index_has_no_stale_document_and_counts_its_failure(index: Index) -> None:
    found = index.measure()

    assert _reasons(found) == index.status_reasons()
    assert set(found["docs"].stale_by_reason.values()) == {0}
    assert (found["docs"].documents, found["docs"].failed) == (6, 1)
    assert (found["cms"].documents, found["cms"].failed) == (1, 0)
    assert found["docs"].chunks == 5 and found["cms"].chunks == 1


def test_changes_the_watcher_queued_count_as_ragd_status_counts_them(index: Index) -> None:
    (index.root / "alpha.md").write_text("# Alpha\n\nAardvarks dig burrows at dawn now.\n")
    (index.root / "beta.md").unlink()
    (index.root / "guide" / "delta.md").write_text("# Delta\n\nDingoes dig after all.\n")
    index.queue(("path", "alpha.md"), ("path", "beta.md"), ("tree", "guide"))

    found = index.measure()

    assert _reasons(found) == index.status_reasons()
    assert found["docs"].stale_by_reason == {
        "source_changed": 2,
        "source_deleted": 1,
        "pending": 2,  # the path jobs; a directory's event names none of its files
        "max_age": 0,
        "fingerprint": 0,
    }


def test_another_pipeline_makes_every_served_document_stale_by_fingerprint(index: Index) -> None:
    index.fingerprint = "another-model"

    found = index.measure()

    assert _reasons(found) == index.status_reasons()
    assert found["docs"].stale_by_reason["fingerprint"] == 5  # the failed one is not served
    assert found["cms"].stale_by_reason["fingerprint"] == 1


def test_a_source_whose_last_poll_failed_is_stale_by_max_age_throughout(index: Index) -> None:
    manifest = Manifest.open(index.data.manifest)
    try:
        manifest.record_poll(
            "cms", began_at=format_time(datetime.now(UTC)), error="timed out", unconfirmed=()
        )
    finally:
        manifest.close()

    found = index.measure()

    assert _reasons(found) == index.status_reasons()
    assert found["cms"].stale_by_reason["max_age"] == 1


def test_an_edit_no_watch_event_reported_counts_only_once_one_is_queued(index: Index) -> None:
    # The bound of the cheap count: ragd status stats every file, a scrape only those a
    # change is known for. An unwatched root shows as ragd_watcher_degraded instead.
    (index.root / "gamma.md").write_text("# Gamma\n\nGophers moved to the hills.\n")

    unreported = index.measure()
    index.queue(("path", "gamma.md"))
    reported = index.measure()

    assert index.status_reasons()["docs"]["source_changed"] == 1
    assert unreported["docs"].stale_by_reason["source_changed"] == 0
    assert reported["docs"].stale_by_reason["source_changed"] == 1


class _QueuedMidScrape(ManifestCounts):
    """A scrape during which the watcher queues an edit: just after the pending count."""

    queue: Index

    def queued_changes(self) -> dict[str, int]:
        found = super().queued_changes()
        self.queue.queue(("path", "gamma.md"))
        return found


def test_a_watch_event_queued_during_a_scrape_is_counted_whole_or_not_at_all(
    index: Index,
) -> None:
    (index.root / "gamma.md").write_text("# Gamma\n\nGophers moved to the hills.\n")
    counts = _QueuedMidScrape.open(index.data.manifest)
    assert isinstance(counts, _QueuedMidScrape)
    counts.queue = index
    try:
        during = measure_freshness(
            counts, index.policies(), fingerprint=index.fingerprint, now=datetime.now(UTC)
        )
    finally:
        counts.close()
    after = index.measure()

    # Both of the edit's counts, or neither: never the change found and its job unseen.
    assert (
        during["docs"].stale_by_reason["source_changed"],
        during["docs"].stale_by_reason["pending"],
    ) == (0, 0)
    assert (
        after["docs"].stale_by_reason["source_changed"],
        after["docs"].stale_by_reason["pending"],
    ) == (1, 1)


def test_no_more_files_are_stated_than_the_budget(index: Index) -> None:
    for key in ("alpha.md", "beta.md", "gamma.md"):
        (index.root / key).write_text(f"# {key}\n\nRewritten.\n")
    index.queue(("path", "alpha.md"), ("path", "beta.md"), ("path", "gamma.md"))
    counts = ManifestCounts.open(index.data.manifest)
    try:
        found = measure_freshness(
            counts,
            index.policies(),
            fingerprint=index.fingerprint,
            now=datetime.now(UTC),
            stat_budget=2,
        )
    finally:
        counts.close()

    assert found["docs"].stale_by_reason["source_changed"] == 2  # a lower bound of 3
    assert found["docs"].stale_by_reason["pending"] == 3  # counted in SQL, never bounded


# -- confirmations: max_age and the oldest ----------------------------------------------------

BASE = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def dated(tmp_path: Path) -> Iterator[Path]:
    """A manifest whose documents were first seen and confirmed at known times, and whose
    source's last complete scan began at BASE."""
    path = tmp_path / "state.db"
    manifest = Manifest.open(path)
    rows = {  # key: (first seen, confirmed), relative to BASE
        "old.md": (-10 * DAY, -10 * DAY),
        "checked.md": (-10 * DAY, timedelta(hours=-1)),
        "yesterday.md": (-DAY, -DAY),
        "after-scan.md": (timedelta(hours=1), timedelta(hours=1)),
        "failed.md": (-10 * DAY, -10 * DAY),
    }
    writes: list[DocumentWrite[ChunkRecord]] = [
        DocumentWrite(
            doc_id_of("docs", key),
            "docs",
            key,
            f"file:///{key}",
            "failed" if key == "failed.md" else "indexed",
            fingerprint="fp",
            error="not text" if key == "failed.md" else None,
        )
        for key in rows
    ]
    manifest.mark_pending((w.doc_id, w.source, w.key, w.uri, "pending") for w in writes)
    manifest.commit(writes, checked_at=format_time(BASE))
    # A new file whose write has begun: first seen after the scan, never indexed.
    manifest.mark_pending([("docs:new.md", "docs", "new.md", "file:///new.md", "pending")])
    manifest.confirm_sources(["docs"], checked_at=format_time(BASE))
    manifest.close()
    conn = sqlite3.connect(path)
    with conn:
        for key, (seen, confirmed) in rows.items():
            conn.execute(
                "UPDATE documents SET first_seen_at = ?, checked_at = ?, indexed_at = ? "
                "WHERE doc_id = ?",
                (
                    format_time(BASE + seen),
                    format_time(BASE + confirmed),
                    format_time(BASE + seen),
                    f"docs:{key}",
                ),
            )
        conn.execute(
            "UPDATE documents SET first_seen_at = ? WHERE doc_id = 'docs:new.md'",
            (format_time(BASE + timedelta(hours=2)),),
        )
    conn.close()
    yield path


def _by_the_rule(path: Path, now: datetime, max_age: timedelta) -> tuple[int, str | None]:
    """max_age documents and the oldest confirmation, document by document, as `ragd
    status` finds them (ragd.search.staleness on every record)."""
    manifest = ManifestReader.open(path)
    try:
        served = [d for d in manifest.documents() if d.status in ("indexed", "pending")]
    finally:
        manifest.close()
    policy = SourcePolicy(max_age)
    stale = Counter(
        r for d in served for r in stale_reasons(d, policy=policy, fingerprint="fp", now=now)
    )
    confirmed = [d.checked_at or d.indexed_at for d in served]
    return stale["max_age"], min((c for c in confirmed if c), default=None)


@pytest.mark.parametrize(
    "after",
    [timedelta(hours=1), timedelta(hours=23), DAY + timedelta(minutes=30), 3 * DAY, 30 * DAY],
)
def test_max_age_and_the_oldest_confirmation_follow_the_staleness_rule(
    dated: Path, after: timedelta
) -> None:
    now = BASE + after
    counts = ManifestCounts.open(dated)
    try:
        found = measure_freshness(counts, {"docs": SourcePolicy(DAY)}, fingerprint="fp", now=now)
    finally:
        counts.close()

    expected_stale, expected_oldest = _by_the_rule(dated, now, DAY)
    assert found["docs"].stale_by_reason["max_age"] == expected_stale
    assert found["docs"].oldest_confirmed_at == expected_oldest == format_time(BASE)
    assert found["docs"].checked_at == format_time(BASE)


def test_a_recent_scan_leaves_only_the_never_indexed_document_unconfirmed(dated: Path) -> None:
    counts = ManifestCounts.open(dated)
    try:
        # The scan at BASE vouches for all seen before it; the new file was never indexed.
        assert counts.unconfirmed("docs", format_time(BASE - timedelta(hours=23))) == 1
        assert counts.unconfirmed("docs", format_time(BASE + timedelta(minutes=30))) == 4
    finally:
        counts.close()


# -- cost: indexes, not rows ------------------------------------------------------------------


def test_every_scrape_query_reads_an_index_rather_than_the_rows(index: Index) -> None:
    index.queue(("path", "alpha.md"), ("tree", "guide"))
    statements: list[str] = []
    counts = ManifestCounts.open(index.data.manifest)
    try:
        counts._conn.set_trace_callback(statements.append)
        measure_freshness(
            counts, index.policies(), fingerprint=index.fingerprint, now=datetime.now(UTC)
        )
        counts._conn.set_trace_callback(None)
        plans = {
            sql: [row[3] for row in counts._conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            for sql in statements
            if sql.lstrip().upper().startswith("SELECT")
        }
    finally:
        counts.close()

    table_scans = {
        sql: steps
        for sql, steps in plans.items()
        for step in steps
        if step.split()[:2] in (["SCAN", t] for t in ("documents", "d", "chunks", "c"))
        and "COVERING INDEX" not in step
    }
    assert len(plans) >= 8
    assert table_scans == {}


@pytest.fixture
def schema_2(index: Index) -> Path:
    """The index's manifest as a ragd before schema 3 left it: no chunk counts, no
    counting or report indexes, no state counts."""
    path = index.data.manifest
    conn = sqlite3.connect(path)
    with conn:
        for name in (
            "documents_by_state",
            "documents_by_confirmation",
            "documents_by_indexed_at",
            "documents_noted",
        ):
            conn.execute(f"DROP INDEX {name}")
        for name in ("insert_counts_state", "delete_counts_state", "update_counts_state"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE document_states")
        conn.execute("ALTER TABLE documents DROP COLUMN chunk_count")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    return path


def test_a_manifest_from_before_schema_3_reads_the_same(index: Index, schema_2: Path) -> None:
    found = index.measure()

    assert (found["docs"].documents, found["docs"].chunks) == (6, 5)
    assert _reasons(found) == index.status_reasons()


def test_the_first_writer_after_an_upgrade_counts_every_documents_chunks(
    index: Index, schema_2: Path
) -> None:
    Manifest.open(schema_2).close()

    conn = sqlite3.connect(schema_2)
    counts = dict(conn.execute("SELECT key, chunk_count FROM documents"))
    indexes = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    assert counts == {key: 1 for key in PAGES} | {"broken.md": 0, "post-1": 1}
    assert {"documents_by_state", "documents_by_confirmation"} <= indexes
    assert version == str(SCHEMA_VERSION)


# -- the exposition ---------------------------------------------------------------------------


def _samples(snapshot: Snapshot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = Metrics(lambda: snapshot).render().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _gauges(**overrides: object) -> SourceGauges:
    fields: dict[str, object] = {
        "documents": 10,
        "chunks": 40,
        "failed": 1,
        "stale_by_reason": {"source_changed": 2, "pending": 3},
        "oldest_unconfirmed_age": 90.5,
        "last_scan": 1_780_000_000.0,
        "watcher_degraded": False,
    }
    return SourceGauges(**(fields | overrides))  # type: ignore[arg-type]


def test_every_source_shows_every_reason_and_only_the_sources_it_knows() -> None:
    snapshot = Snapshot(
        sources={
            "docs": _gauges(),
            "cms": _gauges(stale_by_reason={}, last_scan=None, watcher_degraded=None),
        },
        queue_depth=0,
        index_lag_seconds=0.0,
        chunks_embedded=0,
        chunks_reused=0,
        watch_overflows=0,
        stores_agree=False,
        writer_alive=True,
    )

    samples = _samples(snapshot)

    stale = {labels: v for (name, labels), v in samples.items() if name == "ragd_documents_stale"}
    assert set(stale) == {
        (("reason", reason), ("source", source)) for reason in REASONS for source in ("docs", "cms")
    }
    assert stale[(("reason", "source_changed"), ("source", "docs"))] == 2
    assert stale[(("reason", "max_age"), ("source", "cms"))] == 0
    assert samples[("ragd_documents_failed", (("source", "docs"),))] == 1
    assert samples[("ragd_oldest_unconfirmed_age_seconds", (("source", "docs"),))] == 90.5
    assert samples[("ragd_last_scan_timestamp_seconds", (("source", "docs"),))] == 1_780_000_000
    assert ("ragd_last_scan_timestamp_seconds", (("source", "cms"),)) not in samples
    assert samples[("ragd_watcher_degraded", (("source", "docs"),))] == 0
    assert ("ragd_watcher_degraded", (("source", "cms"),)) not in samples
    assert samples[("ragd_stores_agree", ())] == 0
    assert samples[("ragd_writer_alive", ())] == 1


# -- the daemon's health ----------------------------------------------------------------------


def test_the_writer_is_alive_while_its_thread_runs_and_its_loop_goes_round() -> None:
    now = datetime.now(UTC)
    recent = WriterStats(last_active_at=format_time(now - timedelta(seconds=5)))
    silent = WriterStats(
        last_active_at=format_time(now - timedelta(seconds=WRITER_STALL_SECONDS + 1))
    )

    assert writer_alive(True, recent, now)
    assert not writer_alive(False, recent, now)  # the thread ended
    assert not writer_alive(True, silent, now)  # stuck in one job


def test_a_root_is_degraded_when_unwatched_or_when_events_were_lost_since_its_scan() -> None:
    scan = format_time(BASE)
    before, after = (
        format_time(BASE - timedelta(minutes=5)),
        format_time(BASE + timedelta(minutes=5)),
    )
    root = "/srv/docs"

    assert not watcher_degraded(WatchHealth(True, 0, ()), root, scan)
    assert watcher_degraded(WatchHealth(True, 0, (root,)), root, scan)
    assert not watcher_degraded(WatchHealth(True, 0, ("/srv/other",)), root, scan)
    assert watcher_degraded(WatchHealth(False, 0, ()), root, scan)  # the observer died
    assert watcher_degraded(WatchHealth(True, 1, (), last_overflow_at=after), root, scan)
    assert not watcher_degraded(WatchHealth(True, 1, (), last_overflow_at=before), root, scan)
    assert watcher_degraded(WatchHealth(True, 1, (), last_overflow_at=before), root, None)


def test_a_fault_plan_holds_the_writer_s_queue_while_its_pause_file_exists(
    tmp_path: Path,
) -> None:
    pause = tmp_path / "writer.held"
    manifest = Manifest.open(tmp_path / "state.db")
    queue = JobQueue.beside(manifest)
    queue.enqueue("scan")
    writers = FaultPlan(pause_file=pause)(queue)

    free = [job.kind for job in writers.take()]
    pause.touch()
    held = writers.take()
    pause.unlink()
    released = [job.kind for job in writers.take()]

    assert (free, held, released) == (["scan"], [], ["scan"])
    assert FaultPlan()(queue) is queue  # no pause file: the queue itself
    queue.close()
    manifest.close()
