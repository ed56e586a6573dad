"""`ragd index` over a folder of real PDFs: indexed by page, bad ones failed with reasons."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ragd.config.sources import DEFAULT_INCLUDE
from tests.conftest import write_config
from tests.integration.conftest import run_json, run_ragd
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
