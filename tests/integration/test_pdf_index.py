"""`ragd index` over a folder of real PDFs: indexed by page, bad ones failed with reasons."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ragd.config.sources import DEFAULT_INCLUDE
from tests.conftest import write_config
from tests.integration.conftest import run_json, run_ragd
from tests.integration.daemon import Served, small_root, wait_until
from tests.pdfs import text_pdf

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pdf"


def test_a_folder_of_pdfs_is_indexed_and_bad_pdfs_fail_with_reasons(tmp_path: Path) -> None:
    root = tmp_path / "manuals"
    root.mkdir()
    for pdf in FIXTURES.glob("*.pdf"):
        shutil.copy(pdf, root)
    aenum = (FIXTURES / "aenum.pdf").read_bytes()
    (root / "truncated.pdf").write_bytes(aenum[: len(aenum) // 2])
    config = write_config(tmp_path, root, include=DEFAULT_INCLUDE)

    report = run_ragd(config, "index", "--json")
    status = run_json(config, "status")
    hits = run_json(config, "query", "enumerations can be pickled and unpickled", "--mode", "bm25")

    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["documents"]["added"] == 2
    reasons = {d["path"]: d["error"] for d in status["sources"][0]["failed_documents"]}
    assert reasons == {
        "matplotlib-logo-encrypted.pdf": "encrypted PDF (a password is needed to read it)",
        "matplotlib-logo.pdf": "no text layer (image-only PDF)",
        "truncated.pdf": "not a readable PDF (corrupt or not a PDF)",
    }
    top = hits["results"][0]
    assert top["path"] == "aenum.pdf"
    assert "Enumerations can be pickled and unpickled" in top["text"]
    assert "\x0c" not in top["text"] and "\x00" not in top["text"]


def test_editing_one_page_re_embeds_only_that_pages_chunks(tmp_path: Path) -> None:
    root = tmp_path / "manuals"
    root.mkdir()
    pages = [["Install", "Run the installer."], ["It asks nothing."], ["Usage", "Call it."]]
    outline = [("Install", 0), ("Usage", 2)]
    (root / "guide.pdf").write_bytes(text_pdf(pages, outline=outline))
    config = write_config(tmp_path, root, include=("**/*.pdf",))
    first = run_json(config, "index")
    pages[1] = ["It asks where the quokkas live."]
    (root / "guide.pdf").write_bytes(text_pdf(pages, outline=outline))

    second = run_json(config, "index")

    assert first["chunks"]["embedded"] == 3
    assert second["documents"]["changed"] == 1
    assert second["chunks"]["embedded"] == 1


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(") ")[2].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].startswith("Z")
    except FileNotFoundError:
        return False


def test_the_daemons_pdf_reader_process_ends_when_the_daemon_stops(tmp_path: Path) -> None:
    manuals = tmp_path / "manuals"
    manuals.mkdir()
    shutil.copy(FIXTURES / "aenum.pdf", manuals)
    source = f'\n[[sources]]\nname = "manuals"\ntype = "folder"\npath = "{manuals}"\n'
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 2), extra_sources=source)
    daemon.start().wait_ready()
    try:
        daemon.wait_scanned()
        assert daemon.paths_for("enumerations can be pickled and unpickled")[0] == "aenum.pdf"
        assert daemon.process is not None
        readers = [
            pid
            for pid in _children(daemon.process.pid)
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert len(readers) == 1
    finally:
        daemon.stop()
    assert wait_until(lambda: not _running(readers[0]), 10)
