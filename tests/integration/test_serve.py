"""`ragd serve` as a real subprocess: watching, re-indexing, lifecycle, sd_notify."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore
from tests.integration.daemon import NotifySocket, Served, small_root, wait_until


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(tmp_path, small_root(tmp_path / "docs"))
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_new_edited_and_deleted_files_reach_queries_without_a_command(
    served: Served, tmp_path: Path
) -> None:
    page = tmp_path / "docs" / "zebra.md"

    page.write_text("# Zebra crossings\n\nPlatypus wranglers cross here.\n")
    wait_until(lambda: served.paths_for("platypus wranglers") == ["zebra.md"], 10)
    page.write_text("# Zebra crossings\n\nNarwhal herders cross here now.\n")
    wait_until(lambda: served.paths_for("narwhal herders") == ["zebra.md"], 10)
    assert served.paths_for("platypus wranglers") == []
    page.unlink()
    wait_until(lambda: served.paths_for("narwhal herders") == [], 10)


def test_the_daemon_writes_through_the_lancedb_its_searches_load(
    served: Served, tmp_path: Path
) -> None:
    # A second engine for the same format (lance, installed with the `ray` extra) would
    # cost ~33 MiB at 125k chunks for nothing.
    (tmp_path / "docs" / "zebra.md").write_text("# Zebra crossings\n\nPlatypus wranglers.\n")
    wait_until(lambda: served.paths_for("platypus wranglers") == ["zebra.md"], 10)
    assert served.process is not None

    mapped = Path(f"/proc/{served.process.pid}/maps").read_text()

    lancedb_library = _native_library("lancedb._lancedb")
    assert lancedb_library in mapped
    assert f"{Path(lancedb_library).parents[1] / 'lance'}/" not in mapped


def _native_library(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    return spec.origin


def _indexed_text(served: Served, word: str) -> str | None:
    results = served.query(word)["results"]
    return results[0]["text"] if results else None


def test_an_atomic_save_re_indexes_once_with_the_final_content(
    served: Served, tmp_path: Path
) -> None:
    page = tmp_path / "docs" / "atomic.md"
    temp = tmp_path / "docs" / ".atomic.md.tmp"
    final = "# Atomic\n\nQuetzal feathers, final version.\n"

    temp.write_text("# Atomic\n\nQuetzal feathers, half writ")
    with temp.open("a") as handle:
        handle.write("ten")  # a partial write must never be what gets indexed
    temp.write_text(final)
    os.replace(temp, page)

    wait_until(lambda: _indexed_text(served, "quetzal") == "Quetzal feathers, final version.", 10)
    time.sleep(1.5)  # longer than the debounce: a second re-index would have happened
    assert len(served.events("document_indexed", doc_id="docs:atomic.md")) == 1


def test_a_vim_style_save_re_indexes_once_with_the_final_content(
    served: Served, tmp_path: Path
) -> None:
    page = tmp_path / "docs" / "vim.md"
    page.write_text("# Vim\n\nOcelot notes, first draft.\n")
    wait_until(lambda: _indexed_text(served, "ocelot") is not None, 10)
    before = len(served.events("document_indexed", doc_id="docs:vim.md"))

    backup = tmp_path / "docs" / "vim.md~"
    page.rename(backup)  # vim: move the original aside,
    page.write_text("# Vim\n\nOcelot notes, second draft.\n")  # write anew,
    backup.unlink()  # then drop the backup

    wait_until(lambda: _indexed_text(served, "ocelot") == "Ocelot notes, second draft.", 10)
    time.sleep(1.5)
    assert len(served.events("document_indexed", doc_id="docs:vim.md")) == before + 1


def test_a_directory_moved_out_and_back_is_removed_then_re_added_without_embedding(
    served: Served, tmp_path: Path
) -> None:
    base = served.status()["sources"][0]["documents"]
    bulk = tmp_path / "docs" / "bulk"
    bulk.mkdir()
    for n in range(200):
        (bulk / f"page-{n:03}.md").write_text(f"# Page {n}\n\nYak shaving item {n} of many.\n")
    wait_until(lambda: served.status()["sources"][0]["documents"] == base + 200, 60)
    embedded = served.wait_idle()["daemon"]["writer"]["chunks_embedded"]

    outside = tmp_path / "outside"
    bulk.rename(outside)
    wait_until(lambda: served.status()["sources"][0]["documents"] == base, 30)
    outside.rename(bulk)
    wait_until(lambda: served.status()["sources"][0]["documents"] == base + 200, 60)

    status = served.wait_idle()
    assert status["daemon"]["writer"]["chunks_embedded"] == embedded
    # A fresh reader may trail the writer's last commit briefly (Tantivy reloads on a timer).
    wait_until(lambda: served.status()["stores_agree"], 5)
    assert served.paths_for("yak shaving item 117")[0] == "bulk/page-117.md"


def test_a_second_serve_on_the_same_data_dir_exits_2(served: Served, tmp_path: Path) -> None:
    second = Served(tmp_path, tmp_path / "docs")
    try:
        second.start()
        assert second.wait_exit(30) == 2
        assert "another ragd process" in second.log_text()
    finally:
        second.stop()


def _tldr_root(target: Path, files: int) -> Path:
    import tarfile

    from tests.conftest import SHARED

    with tarfile.open(SHARED / "corpora" / "tldr-pages.tar.gz") as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("tldr/pages/common/")]
        archive.extractall(target, members=members[:files], filter="data")
    return target / "tldr" / "pages" / "common"


def test_sigterm_during_a_scan_interrupts_it_and_exits_0(tmp_path: Path) -> None:
    daemon = Served(tmp_path, _tldr_root(tmp_path / "corpus", 4000))
    try:
        daemon.start().wait_ready()
        wait_until(lambda: daemon.events("document_indexed"), 60)

        daemon.signal(signal.SIGTERM)
        code = daemon.wait_exit(30)  # systemd's TimeoutStopSec: it would be killed then

        assert code == 0
        assert not daemon.events("scan_finished")  # it really was stopped mid-scan
        assert daemon.events("scan_interrupted")
    finally:
        daemon.stop()


def test_sigkill_while_indexing_then_restart_recovers_with_agreeing_stores(
    tmp_path: Path,
) -> None:
    root = _tldr_root(tmp_path / "corpus", 3000)
    first = Served(tmp_path, root)
    try:
        first.start().wait_ready()
        wait_until(lambda: first.events("document_indexed"), 60)
        first.signal(signal.SIGKILL)
        first.wait_exit(10)
    finally:
        first.stop()

    second = Served(tmp_path, root)
    try:
        status = second.start().wait_ready().wait_scanned(180)
        assert status["stores_agree"] is True, status["stores"]
        assert status["sources"][0]["documents"] == len(list(root.glob("*.md")))
        assert status["sources"][0]["pending"] == 0
    finally:
        second.stop()


def _unchanged_listing(data: Path) -> str | None:
    manifest = ManifestReader.open(data / "state.db")
    try:
        fingerprint = next(manifest.documents()).fingerprint
        assert fingerprint is not None
        return manifest.unchanged_listing("docs", fingerprint)
    finally:
        manifest.close()


def test_changes_made_while_stopped_are_found_though_the_listing_was_known_unchanged(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", 20)
    an_hour_ago = time.time_ns() - 3600 * 10**9
    for page in root.glob("*.md"):  # old enough for every stat to vouch for its page
        os.utime(page, ns=(an_hour_ago, an_hour_ago))
    first = Served(tmp_path, root)
    try:
        first.start().wait_ready().wait_scanned()
    finally:
        first.stop()
    assert _unchanged_listing(tmp_path / "data") is not None  # a rescan could pass over all
    edited, deleted = sorted(root.glob("*.md"))[:2]
    edited.write_text("# Okapi\n\nOkapi herders gather here.\n")
    deleted.unlink()

    second = Served(tmp_path, root)
    try:
        status = second.start().wait_ready().wait_scanned()
        assert second.paths_for("okapi herders") == [edited.name]
        assert status["sources"][0]["documents"] == 19
        assert status["stores_agree"] is True
    finally:
        second.stop()


def test_sd_notify_ready_watchdog_and_stopping(tmp_path: Path) -> None:
    systemd = NotifySocket()
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 5), env=systemd.env)
    try:
        daemon.start()
        systemd.receive_until("READY=1", 60)
        systemd.receive_until("WATCHDOG=1", 10)
        daemon.signal(signal.SIGTERM)
        systemd.receive_until("STOPPING=1", 10)
        assert daemon.wait_exit(10) == 0
    finally:
        daemon.stop()
        systemd.close()


def test_http_query_with_expand_returns_each_hits_section(served: Served) -> None:
    status, body = served.post(
        "/v1/query",
        json.dumps({"query": "path parameters", "k": 3, "expand": True}).encode(),
        {"Content-Type": "application/json"},
    )

    assert status == 200
    assert body["results"]
    for hit in body["results"]:
        assert hit["text"].strip()[:200] in hit["context"]


def test_http_expand_must_be_true_or_false(served: Served) -> None:
    status, body = served.post(
        "/v1/query",
        json.dumps({"query": "path parameters", "expand": "yes"}).encode(),
        {"Content-Type": "application/json"},
    )

    assert status == 400
    assert body == {"error": "'expand' must be true or false"}


def test_scheduled_compaction_prunes_vectors_that_watch_events_left_behind(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", files=5)
    daemon = Served(
        tmp_path, root, schedule='[schedule]\ncompact_interval = "2s"\ncleanup_older_than = "1s"\n'
    )
    daemon.start().wait_ready()
    try:
        daemon.wait_scanned()
        page = root / "zebra.md"
        for n in range(5):  # each version's vector stays cached until something prunes it
            page.write_text(f"# Zebra\n\nVersion {n} of a page about zebra crossings.\n")
            version = f"Version {n} "  # waited for before the loop moves on
            wait_until(lambda: version in (_indexed_text(daemon, "zebra") or ""), 10)  # noqa: B023

        def pruned() -> int:
            events = [json.loads(line) for line in daemon.log_text().splitlines() if "{" in line]
            return sum(
                e.get("vectors_pruned", 0) for e in events if e.get("event") == "manifest_compacted"
            )

        wait_until(lambda: pruned() >= 4, 20)  # versions 0-3, over however many compactions
    finally:
        daemon.stop()


def test_a_stop_leaves_one_lancedb_version_after_a_compaction(tmp_path: Path) -> None:
    root = small_root(tmp_path / "docs", files=5)
    # A compaction every 4 s whose cleanup keeps ten minutes of versions for readers.
    schedule = '[schedule]\ncompact_interval = "4s"\ncleanup_older_than = "10m"\n'
    daemon = Served(tmp_path, root, schedule=schedule)
    daemon.start().wait_ready()
    try:
        daemon.wait_scanned()
        for n in range(5):
            (root / f"page-{n}.md").write_text(f"# Page {n}\n\nAbout narwhal {n}.\n")
        wait_until(lambda: len(daemon.paths_for("narwhal")) == 5, 15)
        daemon.wait_idle()
        written = len(daemon.events("document_indexed"))
        compactions = len(daemon.events("compacted"))
        wait_until(lambda: len(daemon.events("compacted")) > compactions, 15)
        assert len(daemon.events("document_indexed")) == written  # compacted after the edits
        time.sleep(1.2)  # the compaction's versions are older than a stop keeps
        versions = VectorStore.open_readonly(tmp_path / "data" / "lancedb").version_count()
        assert versions > 1

        daemon.signal(signal.SIGTERM)
        assert daemon.wait_exit(30) == 0
    finally:
        daemon.stop()

    assert daemon.events("versions_dropped", tables=["chunks"])
    left = VectorStore.open_readonly(tmp_path / "data" / "lancedb")
    assert left.version_count() == 1
    assert len(left.chunk_ids()) == written_chunks(tmp_path / "data" / "state.db")


def written_chunks(manifest_path: Path) -> int:
    manifest = ManifestReader.open(manifest_path)
    try:
        return manifest.chunk_count()
    finally:
        manifest.close()


def test_a_busy_port_stops_serve_before_it_indexes_anything(tmp_path: Path) -> None:
    daemon = Served(tmp_path, small_root(tmp_path / "docs"))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", daemon.port))
        holder.listen()
        code = daemon.start().wait_exit(60)
    daemon.stop()
    assert code != 0
    assert f"cannot listen on 127.0.0.1:{daemon.port}" in daemon.log_text()
    assert not daemon.events("document_indexed")
    manifest = ManifestReader.open(tmp_path / "data" / "state.db")
    try:
        assert list(manifest.documents()) == []
    finally:
        manifest.close()


def test_an_edit_to_an_included_file_no_pattern_selects_reaches_its_includers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / "docs_src").mkdir(parents=True)
    code = root / "docs_src" / "body.py"
    code.write_text("class Item:\n    platypus_wranglers: int\n")
    (root / "docs").mkdir()
    (root / "docs" / "body.md").write_text("# Body\n\nDeclare it.\n\n{* ../docs_src/body.py *}\n")
    daemon = Served(tmp_path, root)
    daemon.start().wait_ready()
    try:
        daemon.wait_scanned()
        assert daemon.paths_for("platypus_wranglers") == ["docs/body.md"]

        code.write_text("class Item:\n    narwhal_herders: int\n")

        wait_until(lambda: daemon.paths_for("narwhal_herders") == ["docs/body.md"], 10)
        assert daemon.paths_for("platypus_wranglers") == []
    finally:
        daemon.stop()
