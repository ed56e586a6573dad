"""SIGKILL in the middle of `ragd index`, then run again: the stores agree, no duplicates."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from ragd.stores.keywords import KeywordStore
from ragd.stores.vectors import VectorStore
from tests.conftest import SHARED, write_config
from tests.integration.conftest import run_json

TLDR = SHARED / "corpora" / "tldr-pages.tar.gz"


def _unpack_common_pages(target: Path) -> Path:
    with tarfile.open(TLDR) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("tldr/pages/common/")]
        archive.extractall(target, members=members, filter="data")
    return target / "tldr" / "pages" / "common"


def _indexed_documents(state_db: Path) -> int:
    try:
        with sqlite3.connect(f"{state_db.as_uri()}?mode=ro", uri=True) as conn:
            return int(
                conn.execute("SELECT COUNT(*) FROM documents WHERE status = 'indexed'").fetchone()[
                    0
                ]
            )
    except sqlite3.Error:
        return 0


def _kill_midway(config: Path, state_db: Path, total: int) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ragd", "--config", str(config), "index"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if 0 < _indexed_documents(state_db) < total:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the index run finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_sigkill_midway_then_rerun_leaves_the_stores_in_agreement(tmp_path: Path) -> None:
    corpus = _unpack_common_pages(tmp_path / "corpus")
    total = len(list(corpus.glob("*.md")))
    config = write_config(tmp_path, corpus)
    data = tmp_path / "data"

    _kill_midway(config, data / "state.db", total)
    report = run_json(config, "index")
    status = run_json(config, "status")

    vectors = VectorStore.open_readonly(data / "lancedb")
    keywords = KeywordStore.open_readonly(data / "tantivy")
    assert report["reconciled"] is True
    assert status["stores_agree"] is True, status["stores"]
    assert status["sources"][0]["documents"] == total
    assert status["sources"][0]["pending"] == 0
    assert vectors.count() == len(vectors.chunk_ids()) == status["stores"]["manifest_chunks"]
    assert keywords.count() == len(keywords.chunk_ids()) == status["stores"]["manifest_chunks"]
