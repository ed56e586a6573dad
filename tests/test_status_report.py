"""The status report at scale: its counts are whole, its lists bounded, and what it reads
of the manifest comes from indexes, so its cost follows what it reports rather than how
many documents the index holds."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.search.status import SourceInfo, StatusReport, build_status
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_report import ManifestReport
from ragd.stores.records import doc_id_of
from ragd.stores.vectors import VectorStore
from tests.conftest import FakeEmbedder
from tests.test_metrics_gauges import Index


@pytest.fixture
def index(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Index]:
    built = Index(tmp_path, fake_embedder)
    built.run()
    yield built


def _build(index: Index, manifest: ManifestReport, **options: Any) -> StatusReport:
    return build_status(
        manifest,
        VectorStore.open_readonly(index.data.lancedb),
        KeywordStore.open_readonly(index.data.tantivy),
        sources=_sources(index),
        fingerprint=index.fingerprint,
        **options,
    )


def _report(index: Index, *, watched: bool = False, list_limit: int = 100) -> StatusReport:
    manifest = ManifestReport.open(index.data.manifest)
    try:
        return _build(index, manifest, watched=watched, list_limit=list_limit)
    finally:
        manifest.close()


def _sources(index: Index) -> list[SourceInfo]:
    return [SourceInfo(name, "folder", "", policy) for name, policy in index.policies().items()]


def _docs(report: StatusReport) -> dict[str, object]:
    return next(s.to_json() for s in report.sources if s.name == "docs")


def test_lists_name_at_most_the_limit_while_counts_stay_whole(index: Index) -> None:
    for key in ("alpha.md", "beta.md", "gamma.md"):
        (index.root / key).write_text("# Changed\n\nNew words.\n")

    docs = _docs(_report(index, list_limit=2))

    assert docs["stale"] == 3
    assert docs["stale_by_reason"] == {"source_changed": 3}
    assert docs["stale_documents"] == [
        {"path": "alpha.md", "reasons": ["source_changed"], "indexed_at": _at(index, "alpha.md")},
        {"path": "beta.md", "reasons": ["source_changed"], "indexed_at": _at(index, "beta.md")},
    ]
    assert docs["failed"] == 1


def test_a_report_without_a_watcher_stats_every_file(index: Index) -> None:
    (index.root / "beta.md").write_text("# Beta\n\nEdited while nothing watched.\n")
    (index.root / "gamma.md").unlink()

    docs = _docs(_report(index, watched=False))

    assert docs["stale_by_reason"] == {"source_changed": 1, "source_deleted": 1}


def test_a_watched_report_stats_only_the_files_a_change_is_queued_for(index: Index) -> None:
    (index.root / "beta.md").write_text("# Beta\n\nEdited, and the watcher saw it.\n")
    (index.root / "gamma.md").write_text("# Gamma\n\nEdited, not yet reported.\n")
    index.queue(("path", "beta.md"))

    docs = _docs(_report(index, watched=True))

    assert docs["stale_by_reason"] == {"pending": 1, "source_changed": 1}
    assert docs["stale_documents"] == [
        {
            "path": "beta.md",
            "reasons": ["source_changed", "pending"],
            "indexed_at": _at(index, "beta.md"),
        }
    ]


def test_a_document_stale_for_several_reasons_counts_once(index: Index) -> None:
    (index.root / "beta.md").write_text("# Beta\n\nEdited.\n")
    index.queue(("path", "beta.md"))

    docs = _docs(_report(index))

    assert docs["stale"] == 1
    assert docs["stale_by_reason"] == {"pending": 1, "source_changed": 1}


def _document_work(index: Index) -> int:
    """SQLite's virtual machine steps spent on statements over the documents table while
    a daemon's report (watched) is built."""
    manifest = ManifestReport.open(index.data.manifest)
    current, steps = [""], Counter[str]()

    def tick() -> int:
        steps[current[0]] += 1
        return 0

    try:
        manifest._conn.set_trace_callback(lambda sql: current.__setitem__(0, sql))
        manifest._conn.set_progress_handler(tick, 1)
        _build(index, manifest, watched=True)
    finally:
        manifest.close()
    return sum(n for sql, n in steps.items() if "documents" in sql)


def test_the_reports_work_does_not_grow_with_documents_it_has_nothing_to_say_of(
    index: Index,
) -> None:
    index.queue(("path", "alpha.md"), ("tree", "guide"))
    before = _document_work(index)
    conn = sqlite3.connect(index.data.manifest)
    with conn:  # 5,000 more fresh documents, as the one of alpha.md
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
            "INSERT INTO documents SELECT 'docs:more/' || i || '.md', source, 'more/' || i || "
            "'.md', uri, title, size, mtime_ns, content_hash, fingerprint, status, error, "
            "first_seen_at, indexed_at, checked_at, chunk_count "
            "FROM documents, n WHERE key = 'alpha.md'"
        )
    conn.close()

    after = _document_work(index)

    assert after < before + 2_000  # a pass over 5,000 index entries is ~30,000 steps


def _at(index: Index, key: str) -> str:
    conn = sqlite3.connect(index.data.manifest)
    try:
        row = conn.execute("SELECT indexed_at FROM documents WHERE key = ?", (key,)).fetchone()
    finally:
        conn.close()
    return str(row[0])


def test_the_state_counts_the_triggers_keep_equal_a_count_of_the_rows(index: Index) -> None:
    (index.root / "alpha.md").write_text("# Alpha\n\nOne.\n\n## Two\n\nTwo.\n")
    (index.root / "beta.md").unlink()
    (index.root / "broken.md").write_text("# Broken\n\nMended.\n")
    index.run()
    manifest = Manifest.open(index.data.manifest)
    manifest.mark_pending([(doc_id_of("docs", "gamma.md"), "docs", "gamma.md", "u", "pending")])
    manifest.close()

    conn = sqlite3.connect(index.data.manifest)
    try:
        kept = conn.execute(
            "SELECT source, status, NULLIF(fingerprint, ''), documents, chunks "
            "FROM document_states WHERE documents > 0"
        ).fetchall()
        counted = conn.execute(
            "SELECT source, status, fingerprint, COUNT(*), SUM(chunk_count) FROM documents "
            "GROUP BY source, status, fingerprint"
        ).fetchall()
    finally:
        conn.close()
    assert sorted(kept) == sorted(counted)
    assert ("docs", "pending", index.fingerprint, 1, 1) in kept
