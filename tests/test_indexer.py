"""The write path with real stores on disk and a deterministic fake embedder."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from ragd.errors import LockedError
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import MAX_CHUNKS_PER_DOCUMENT, Pipeline, manifest_keyword_rows
from ragd.sources.folders import FileContent, FolderSource
from ragd.stores.agreement import IdDigest, compare_ids, compare_stores
from ragd.stores.data_dir import DataDir, WriterLock, WriterStores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import SKIPPED_LISTED, SkippedFiles, format_time
from ragd.stores.vectors import FIRST_STAGE, VectorRow, VectorStore
from tests.conftest import FakeEmbedder
from tests.test_keywords import _old_schema_index

DOC = """# Guide

Intro paragraph about the guide.

## Install

Run the installer and wait for the quokka to finish.

## Configure

Edit the settings file; every key is documented.
"""


class CountingFolder(FolderSource):
    """A folder source that counts reads, to prove unchanged files are not opened."""

    reads = 0

    def read(self, key: str) -> FileContent:
        CountingFolder.reads += 1
        return super().read(key)


class Harness:
    def __init__(self, tmp_path: Path, embedder: FakeEmbedder, max_chars: int = 900) -> None:
        self.root = tmp_path / "docs"
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = DataDir(tmp_path / "data")
        self.embedder = embedder
        self.max_chars = max_chars
        self.max_chunks = MAX_CHUNKS_PER_DOCUMENT

    def run(
        self,
        *,
        full: bool = False,
        stop: Callable[[], bool] | None = None,
        worker_min_files: int = 500,
    ) -> dict[str, object]:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            folder = CountingFolder("docs", self.root, ("**/*.md",))
            pipeline = Pipeline(
                ChunkSettings(self.max_chars, 120),
                self.embedder.identity,
                max_chunks=self.max_chunks,
            )
            indexer = Indexer(
                stores,
                [folder],
                pipeline,
                self.embedder,
                stop=stop,
                worker_min_files=worker_min_files,
            )
            return indexer.run(full=full).to_json()
        finally:
            stores.close()

    def sync(self, *, keys: Sequence[str] = (), trees: Sequence[str] = ()) -> dict[str, object]:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            folder = CountingFolder("docs", self.root, ("**/*.md",))
            pipeline = Pipeline(ChunkSettings(self.max_chars, 120), self.embedder.identity)
            indexer = Indexer(stores, [folder], pipeline, self.embedder)
            return indexer.sync("docs", keys=keys, trees=trees).to_json()
        finally:
            stores.close()

    def chunk_ids(self) -> set[str]:
        manifest = ManifestReader.open(self.data.manifest)
        try:
            return manifest.chunk_ids()
        finally:
            manifest.close()

    def bm25(self, query: str) -> list[tuple[str, float]]:
        return KeywordStore.open_readonly(self.data.tantivy).search(query, 5)

    def checked_at(self) -> dict[str, str | None]:
        manifest = ManifestReader.open(self.data.manifest)
        try:
            return {d.key: d.checked_at for d in manifest.documents()}
        finally:
            manifest.close()

    def agree(self) -> bool:
        stores = WriterStores(self.data, keyword_rows=manifest_keyword_rows)
        try:
            return compare_stores(
                stores.manifest, stores.vectors(self.embedder.dim), stores.keywords()
            ).agree
        finally:
            stores.close()


@pytest.fixture
def harness(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Harness]:
    CountingFolder.reads = 0
    yield Harness(tmp_path, fake_embedder)


def _docs(report: dict[str, object]) -> dict[str, int]:
    return report["documents"]  # type: ignore[return-value]


def _chunks(report: dict[str, object]) -> dict[str, int]:
    return report["chunks"]  # type: ignore[return-value]


def _written_an_hour_ago(root: Path) -> None:
    """Date every file back: a stat only stands for a file modified well before it was
    read (ragd.stores.records.RACY_SECONDS); tests otherwise write and index in one tick."""
    past = time.time_ns() - 3600 * 10**9
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(past, past))


def _rewrite_keeping_size_and_mtime(page: Path) -> None:
    """A same-size rewrite within one timestamp tick (coarse clocks, FAT, network mounts)."""
    before = page.stat()
    page.write_text(page.read_text().replace("quokka", "wombat"))
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_unchanged_files_are_not_even_read(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    _written_an_hour_ago(harness.root)
    harness.run()
    CountingFolder.reads = 0

    report = harness.run()

    assert CountingFolder.reads == 0
    assert _docs(report)["unchanged"] == 1
    assert _chunks(report)["embedded"] == 0


def test_only_the_files_written_just_before_a_pass_are_hashed_again_and_none_embedded(
    harness: Harness,
) -> None:
    (harness.root / "old.md").write_text(DOC)
    _written_an_hour_ago(harness.root)
    (harness.root / "new.md").write_text(DOC.replace("Guide", "New"))
    harness.run()
    CountingFolder.reads = 0

    report = harness.run()

    assert CountingFolder.reads == 1
    assert _docs(report)["unchanged"] == 2
    assert _chunks(report)["embedded"] == 0


def test_a_pass_finds_a_rewrite_that_kept_size_and_mtime_within_the_racy_window(
    harness: Harness,
) -> None:
    page = harness.root / "guide.md"
    page.write_text(DOC)
    harness.run()
    _rewrite_keeping_size_and_mtime(page)

    report = harness.run()

    assert _docs(report)["changed"] == 1
    assert harness.bm25("wombat")


@pytest.mark.parametrize("found", ["new", "unchanged"])
def test_a_pass_that_outlasts_the_racy_window_still_reads_again_what_was_written_as_it_began(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, found: str
) -> None:
    page = harness.root / "guide.md"
    page.write_text(DOC)
    if found == "unchanged":
        harness.run()
        os.utime(page)  # the same bytes, a new mtime: the next pass reads and hashes it
    # Every manifest write of this pass lands ten minutes after the pass began.
    ten_minutes_on = datetime.now(UTC) + timedelta(minutes=10)
    monkeypatch.setattr("ragd.stores.manifest.utc_now", lambda: format_time(ten_minutes_on))
    harness.run()
    monkeypatch.undo()
    _rewrite_keeping_size_and_mtime(page)

    report = harness.run()

    assert _docs(report)["changed"] == 1
    assert harness.bm25("wombat")


def test_once_hashed_well_after_its_last_write_a_file_is_passed_over_by_stat(
    harness: Harness,
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    _written_an_hour_ago(harness.root)
    harness.run()  # the stat changed: read, hashed, the same bytes
    CountingFolder.reads = 0

    harness.run()

    assert CountingFolder.reads == 0


def _three_pages_indexed_an_hour_after_their_last_write(harness: Harness) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (harness.root / name).write_text(DOC.replace("Guide", name))
    _written_an_hour_ago(harness.root)
    harness.run()
    CountingFolder.reads = 0


def test_an_unchanged_folder_is_passed_over_without_comparing_file_by_file(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_pages_indexed_an_hour_after_their_last_write(harness)

    def compare_file_by_file(*args: object) -> None:
        raise AssertionError("read every document's state")

    monkeypatch.setattr(Manifest, "file_states", compare_file_by_file)
    report = harness.run()

    assert _docs(report)["unchanged"] == 3
    assert CountingFolder.reads == 0


def test_a_file_deleted_after_an_unchanged_pass_is_deleted_by_the_next(
    harness: Harness,
) -> None:
    _three_pages_indexed_an_hour_after_their_last_write(harness)
    harness.run()
    (harness.root / "b.md").unlink()

    report = harness.run()

    assert _docs(report)["deleted"] == 1
    assert sorted(harness.checked_at()) == ["a.md", "c.md"]
    assert harness.agree()


def test_a_document_another_writer_removed_is_indexed_again(harness: Harness) -> None:
    _three_pages_indexed_an_hour_after_their_last_write(harness)
    other = sqlite3.connect(harness.data.manifest, isolation_level=None)
    other.execute("DELETE FROM documents WHERE key = 'b.md'")  # an older ragd, a hand repair
    other.close()

    report = harness.run()

    assert _docs(report)["added"] == 1
    assert CountingFolder.reads == 1
    assert harness.agree()


def test_a_no_op_pass_records_every_document_as_checked_again(harness: Harness) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (harness.root / name).write_text(DOC.replace("Guide", name))
    harness.run()
    before = harness.checked_at()

    harness.run()

    after = harness.checked_at()
    assert all(after[key] > stamp for key, stamp in before.items())  # type: ignore[operator]


def test_an_interrupted_pass_records_only_the_files_it_reached_as_checked(
    harness: Harness,
) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (harness.root / name).write_text(DOC.replace("Guide", name))
    _written_an_hour_ago(harness.root)
    harness.run()
    before = harness.checked_at()
    # A new file, listed last: an unchanged listing would be passed over whole.
    (harness.root / "d.md").write_text(DOC)
    polls = iter(range(100))

    report = harness.run(stop=lambda: next(polls) >= 3)  # polled per source, then per file

    after = harness.checked_at()
    assert report["interrupted"] is True
    assert [key for key in sorted(before) if after[key] != before[key]] == ["a.md", "b.md"]


def test_a_document_first_seen_after_a_complete_pass_is_not_checked_by_it(
    harness: Harness,
) -> None:
    (harness.root / "a.md").write_text(DOC)
    harness.run()
    manifest = Manifest.open(harness.data.manifest)
    try:
        manifest.mark_pending([("docs:new.md", "docs", "new.md", "file:///new.md", "pending")])
    finally:
        manifest.close()

    checked = harness.checked_at()

    assert checked["a.md"] is not None
    assert checked["new.md"] is None


def test_a_no_op_pass_rebuilds_a_keyword_index_another_version_wrote(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    shutil.rmtree(harness.data.tantivy)
    harness.data.tantivy.mkdir()
    _old_schema_index(harness.data.tantivy)

    harness.run()

    keywords = KeywordStore.open_readonly(harness.data.tantivy)
    assert len(keywords.search("quokka", 5)) == 1
    assert keywords.search("stale", 5) == []


def test_a_pass_prepared_by_a_worker_process_indexes_what_an_inline_pass_does(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    inline, worker = Harness(tmp_path / "a", fake_embedder), Harness(tmp_path / "b", fake_embedder)
    for harness in (inline, worker):
        for n in range(12):
            (harness.root / f"page-{n}.md").write_text(DOC.replace("quokka", f"quokka_{n}"))
        (harness.root / "binary.md").write_bytes(b"\x00\x01binary")

    expected = inline.run()
    calls = fake_embedder.calls
    report = worker.run(worker_min_files=1)

    assert fake_embedder.calls == calls  # the worker embedded every chunk
    assert _chunks(report)["embedded"] == _chunks(expected)["embedded"]
    assert _docs(report) == _docs(expected)
    assert worker.chunk_ids() == inline.chunk_ids()
    assert worker.agree()
    assert worker.bm25("quokka_7") == inline.bm25("quokka_7") != []  # identifier terms too


def test_a_touched_but_identical_file_is_hashed_and_not_re_embedded(harness: Harness) -> None:
    path = harness.root / "guide.md"
    path.write_text(DOC)
    harness.run()
    calls = harness.embedder.calls
    os.utime(path, ns=(1, 1))

    report = harness.run()

    assert _docs(report)["unchanged"] == 1
    assert harness.embedder.calls == calls


def test_editing_one_section_embeds_only_that_sections_chunk(harness: Harness) -> None:
    path = harness.root / "guide.md"
    path.write_text(DOC)
    harness.run()
    harness.embedder.texts.clear()
    path.write_text(DOC.replace("every key is documented", "every key has a default"))

    report = harness.run()

    assert _docs(report)["changed"] == 1
    assert _chunks(report)["embedded"] == 1
    assert _chunks(report)["reused"] == 2
    assert _chunks(report)["deleted"] == 1
    assert len(harness.embedder.texts) == 1 and "default" in harness.embedder.texts[0]


def test_identical_chunks_in_two_documents_are_embedded_once(harness: Harness) -> None:
    (harness.root / "a.md").write_text("# Same\n\nShared boilerplate text.\n")
    (harness.root / "b.md").write_text("# Same\n\nShared boilerplate text.\n")

    report = harness.run()

    assert _docs(report)["added"] == 2
    assert _chunks(report)["embedded"] == 1
    assert harness.agree()


def test_a_rename_re_uses_every_embedding(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    (harness.root / "guide.md").rename(harness.root / "handbook.md")

    report = harness.run()

    assert _docs(report)["added"] == 1 and _docs(report)["deleted"] == 1
    assert _chunks(report)["embedded"] == 0
    assert harness.agree()


def test_a_fingerprint_change_re_processes_every_document(tmp_path: Path) -> None:
    first = Harness(tmp_path, FakeEmbedder())
    (first.root / "guide.md").write_text(DOC)
    first.run()

    report = Harness(tmp_path, FakeEmbedder(identity="fake:v2")).run()

    assert _docs(report)["changed"] == 1
    assert _chunks(report)["embedded"] == 3


def test_a_failed_file_is_not_retried_until_it_changes(harness: Harness) -> None:
    path = harness.root / "blob.md"
    path.write_bytes(b"\x00\x01binary")
    _written_an_hour_ago(harness.root)
    first = harness.run()
    CountingFolder.reads = 0

    second = harness.run()

    assert _docs(first)["failed"] == 1 and _docs(first)["added"] == 0
    assert _docs(second)["failed"] == 0 and _docs(second)["unchanged"] == 1
    assert CountingFolder.reads == 0


def test_a_pending_document_is_read_again_though_its_stat_is_unchanged(
    harness: Harness,
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        stores.manifest.mark_for_redo(["docs:guide.md"])
    finally:
        stores.close()
    CountingFolder.reads = 0

    report = harness.run()

    assert CountingFolder.reads == 1
    assert _docs(report)["changed"] == 1
    assert _chunks(report)["embedded"] == 0  # same chunk texts: their vectors are re-used
    assert _docs(harness.run())["unchanged"] == 1


def test_a_document_that_turns_binary_loses_its_chunks(harness: Harness) -> None:
    path = harness.root / "guide.md"
    path.write_text(DOC)
    harness.run()
    path.write_bytes(b"\x00" * 64)

    report = harness.run()

    assert _docs(report)["failed"] == 1 and _docs(report)["changed"] == 0
    assert _chunks(report)["deleted"] == 3
    assert harness.agree()


def test_a_root_that_suddenly_lists_nothing_deletes_nothing(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    (harness.root / "guide.md").unlink()

    report = harness.run()

    assert _docs(report)["deleted"] == 0
    assert "listed no files" in report["errors"][0]  # type: ignore[index]


def test_a_crash_before_the_manifest_commit_is_repaired_on_the_next_run(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    (harness.root / "guide.md").write_text(DOC.replace("quokka", "wombat"))

    def crash(*_: object, **__: object) -> None:
        raise SystemExit("killed between the store writes and the manifest commit")

    monkeypatch.setattr("ragd.stores.manifest.Manifest.commit", crash)
    with pytest.raises(SystemExit):
        harness.run()
    monkeypatch.undo()
    assert not harness.agree()

    report = harness.run()

    assert report["reconciled"] is True
    assert _docs(report)["changed"] == 1
    assert harness.agree()


def test_stores_that_lost_their_manifest_are_reconciled_not_appended_to(
    harness: Harness,
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    for path in harness.data.root.glob("state.db*"):
        path.unlink()

    report = harness.run()

    assert report["reconciled"] is True
    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        assert stores.vectors(harness.embedder.dim).count() == 3
        assert len(stores.keywords().chunk_ids()) == 3
    finally:
        stores.close()
    assert harness.agree()


def test_a_second_writer_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    first = WriterLock(tmp_path / "writer.lock")
    first.acquire()
    try:
        with pytest.raises(LockedError, match=f"pid {os.getpid()}"):
            WriterLock(tmp_path / "writer.lock").acquire()
    finally:
        first.release()

    again = WriterLock(tmp_path / "writer.lock")
    again.acquire()
    again.release()


def test_a_hint_naming_a_file_twice_indexes_it_once(harness: Harness) -> None:
    (harness.root / "sub").mkdir()
    (harness.root / "sub" / "guide.md").write_text(DOC)
    harness.run()
    (harness.root / "sub" / "guide.md").write_text(DOC.replace("quokka", "wombat"))
    report = harness.sync(keys=["sub/guide.md", "sub/guide.md"], trees=["sub"])

    assert report["documents"]["changed"] == 1  # type: ignore[index]
    assert harness.agree()


def test_a_hint_reads_a_rewrite_that_kept_size_and_mtime(harness: Harness) -> None:
    page = harness.root / "guide.md"
    page.write_text(DOC)
    harness.run()
    _rewrite_keeping_size_and_mtime(page)

    report = harness.sync(keys=["guide.md"])

    assert report["documents"]["changed"] == 1  # type: ignore[index]
    assert harness.bm25("wombat")
    assert harness.agree()


def test_a_tree_hint_trusts_an_unchanged_stat(harness: Harness) -> None:
    (harness.root / "sub").mkdir()
    (harness.root / "sub" / "guide.md").write_text(DOC)
    _written_an_hour_ago(harness.root)
    harness.run()
    CountingFolder.reads = 0

    report = harness.sync(trees=["sub"])

    assert CountingFolder.reads == 0
    assert report["documents"]["unchanged"] == 1  # type: ignore[index]


def test_a_tree_hint_reads_a_file_indexed_right_after_it_was_written(harness: Harness) -> None:
    (harness.root / "sub").mkdir()
    page = harness.root / "sub" / "guide.md"
    page.write_text(DOC)
    harness.run()
    _rewrite_keeping_size_and_mtime(page)

    report = harness.sync(trees=["sub"])

    assert report["documents"]["changed"] == 1  # type: ignore[index]


def test_a_tree_hint_for_a_directory_that_moved_away_deletes_its_documents(
    harness: Harness,
) -> None:
    (harness.root / "sub").mkdir()
    (harness.root / "sub" / "guide.md").write_text(DOC)
    (harness.root / "keep.md").write_text(DOC)
    harness.run()
    (harness.root / "sub").rename(harness.root.parent / "elsewhere")
    report = harness.sync(trees=["sub"])

    assert report["documents"]["deleted"] == 1  # type: ignore[index]
    assert harness.agree()


def test_a_document_with_more_chunks_than_the_limit_fails_naming_the_setting(
    harness: Harness,
) -> None:
    harness.max_chunks = 2
    (harness.root / "guide.md").write_text(DOC)

    report = harness.run()

    assert _docs(report)["failed"] == 1
    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        record = stores.manifest.document("docs:guide.md")
    finally:
        stores.close()
    assert record is not None and record.error == (
        "too many chunks: the document makes 3, more than chunking.max_chunks_per_document (2)"
    )


def _skipped(harness: Harness) -> dict[str, SkippedFiles]:
    manifest = ManifestReader.open(harness.data.manifest)
    try:
        return manifest.skipped_files()
    finally:
        manifest.close()


def test_a_pass_records_the_symlinks_and_special_files_its_scan_skipped(
    harness: Harness, tmp_path: Path
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    (tmp_path / "elsewhere.md").write_text(DOC)
    (harness.root / "linked.md").symlink_to(tmp_path / "elsewhere.md")
    os.mkfifo(harness.root / "pipe.md")

    report = harness.run()

    assert _docs(report)["added"] == 1
    assert _skipped(harness) == {
        "docs": SkippedFiles(1, 1, (("linked.md", "symlink"), ("pipe.md", "fifo")))
    }


def test_skipped_files_are_all_counted_and_the_first_few_listed(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    for n in range(SKIPPED_LISTED + 5):
        (harness.root / f"link-{n:02d}.md").symlink_to(harness.root / "guide.md")

    harness.run()

    (skipped,) = _skipped(harness).values()
    assert skipped.symlinks == SKIPPED_LISTED + 5
    assert [key for key, _ in skipped.listed] == [f"link-{n:02d}.md" for n in range(SKIPPED_LISTED)]


def test_skipped_files_that_are_gone_are_forgotten_by_the_next_pass(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    (harness.root / "linked.md").symlink_to(harness.root / "guide.md")
    harness.run()

    (harness.root / "linked.md").unlink()
    harness.run()

    assert _skipped(harness) == {}


def test_a_pass_records_files_whose_names_are_not_utf8_as_skipped_and_escaped(
    harness: Harness,
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    with open(os.path.join(os.fsencode(harness.root), b"caf\xe9.md"), "wb") as latin1_name:
        latin1_name.write(DOC.encode())

    report = harness.run()

    assert _docs(report)["added"] == 1
    assert _skipped(harness) == {
        "docs": SkippedFiles(0, 0, (("caf\\xe9.md", "non-utf8-name"),), names=1)
    }


def test_a_skipped_record_kept_before_names_were_counted_reads_as_no_names(
    harness: Harness,
) -> None:
    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        stored = {"symlinks": 1, "special": 0, "listed": [["linked.md", "symlink"]]}
        stores.manifest.set_meta("skipped:docs", json.dumps(stored))
    finally:
        stores.close()

    assert _skipped(harness) == {"docs": SkippedFiles(1, 0, (("linked.md", "symlink"),))}


def test_chunks_committed_between_two_manifest_reads_are_in_flight_not_disagreement() -> None:
    before = {"a", "b"}  # then a batch replaced b with c, and the stores were read mid-way
    after = {"a", "c"}

    settled = compare_ids(before, {"a", "c"}, {"a", "b"}, listed_after=after)

    assert settled.agree
    assert settled.manifest_chunks == 2


def test_a_chunk_missing_from_both_manifest_reads_or_orphaned_is_still_reported() -> None:
    settled = compare_ids({"a", "b"}, {"a"}, {"a", "b", "z"}, listed_after={"a", "b"})

    assert not settled.agree
    assert settled.missing_from_lancedb == {"b"}
    assert settled.orphans_in_tantivy == {"z"}


def test_ids_in_any_order_have_one_digest_and_a_swapped_id_another() -> None:
    ids = [f"doc#{n}" for n in range(1000)]
    swapped = [*ids[:-1], "elsewhere#0"]

    assert IdDigest.of(ids) == IdDigest.of(reversed(ids))
    assert IdDigest.of(swapped) != IdDigest.of(ids)
    assert IdDigest.of(swapped).count == IdDigest.of(ids).count


def test_a_chunk_swapped_for_an_orphan_in_lancedb_is_reported_though_the_counts_agree(
    harness: Harness,
) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    stores = WriterStores(harness.data, keyword_rows=manifest_keyword_rows)
    try:
        vectors = stores.vectors(harness.embedder.dim)
        lost = sorted(vectors.chunk_ids())[0]
        vectors.delete_chunks([lost])
        vectors.upsert([VectorRow("orphan#0", "orphan", np.ones(harness.embedder.dim, np.float32))])

        found = compare_stores(stores.manifest, vectors, stores.keywords())
    finally:
        stores.close()

    assert found.lancedb_chunks == found.manifest_chunks == found.tantivy_chunks
    assert found.missing_from_lancedb == {lost}
    assert found.orphans_in_lancedb == {"orphan#0"}


def test_read_handles_opened_before_a_commit_agree_beside_the_writer(harness: Harness) -> None:
    (harness.root / "guide.md").write_text(DOC)
    harness.run()
    manifest = ManifestReader.open(harness.data.manifest)
    vectors = VectorStore.open_readonly(harness.data.lancedb, name=FIRST_STAGE)
    keywords = KeywordStore.open_readonly(harness.data.tantivy)
    (harness.root / "guide.md").write_text(DOC.replace("quokka", "wombat"))
    harness.run()  # a commit after the handles were opened: they show the chunks it replaced

    try:
        found = compare_stores(manifest, vectors, keywords, writer_running=True)
    finally:
        manifest.close()

    assert found.agree


def test_a_file_the_writer_gave_up_on_is_failed_and_read_again_by_the_next_pass(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text(DOC)
    stores = WriterStores(DataDir(tmp_path / "data"), keyword_rows=manifest_keyword_rows)
    try:
        folder = FolderSource("docs", root, ("**/*.md",))
        pipeline = Pipeline(ChunkSettings(900, 120), fake_embedder.identity)
        indexer = Indexer(stores, [folder], pipeline, fake_embedder)
        indexer.run()

        indexer.record_failure("docs", "a.md", "failed 5 times: OSError: I/O error")
        failed = stores.manifest.document("docs:a.md")
        again = indexer.run().to_json()["documents"]
        indexed = stores.manifest.document("docs:a.md")
    finally:
        stores.close()

    assert failed is not None and (failed.status, failed.chunk_count) == ("failed", 0)
    assert failed.error == "failed 5 times: OSError: I/O error"
    assert again["added"] == 1  # type: ignore[index]
    assert indexed is not None and indexed.status == "indexed"
