"""A kill while second-stage vectors are written is repaired by the next `ragd index`: the
real command with a crash plan (tests/integration/crashing_ragd.py), the shared ONNX
model, a dozen tldr pages. Afterwards the second stage's table holds exactly one row per
chunk, every chunk has its stored vector, and nothing was embedded twice for nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ragd.embedding.transformer import TransformerEmbedder
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore, second_stage_table
from tests.conftest import REPO, RERANK_MODEL_DIR, SHARED, write_config
from tests.integration.conftest import run_json

TLDR = SHARED / "corpora" / "tldr-pages.tar.gz"


def _pages(count: int) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with tarfile.open(TLDR) as archive:
        for member in archive:
            if member.isfile() and member.name.startswith("tldr/pages/common/"):
                handle = archive.extractfile(member)
                assert handle is not None
                found[member.name.rsplit("/", 1)[1]] = handle.read()
    return {name: found[name] for name in sorted(found)[:count]}


@pytest.fixture(scope="module")
def pages() -> dict[str, bytes]:
    return _pages(16)


def _config(tmp_path: Path, pages: dict[str, bytes]) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, data in list(pages.items())[:12]:
        (root / name).write_bytes(data)
    return write_config(tmp_path, root, rerank=RERANK_MODEL_DIR)


def _version_2(root: Path, pages: dict[str, bytes]) -> None:
    """Three pages edited, two deleted, four added."""
    names = sorted(p.name for p in root.glob("*.md"))
    for name in names[:3]:
        path = root / name
        path.write_bytes(path.read_bytes() + b"\n- Check the crash example:\n\n`crash --now`\n")
    for name in names[3:5]:
        (root / name).unlink()
    for name, data in list(pages.items())[12:]:
        (root / name).write_bytes(data)


def _crash(config: Path, fault: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    crashing = [sys.executable, "-m", "tests.integration.crashing_ragd", fault]
    return subprocess.run(
        [*crashing, "--config", str(config), "index"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def _assert_one_row_per_chunk(data: Path) -> None:
    manifest = ManifestReader.open(data / "state.db")
    try:
        chunks = manifest.chunk_ids()
        assert manifest.second_stage_chunk_ids() == chunks
        assert manifest.second_stage_missing_count() == 0
    finally:
        manifest.close()
    identity = TransformerEmbedder(str(RERANK_MODEL_DIR), is_local=True).identity
    table = VectorStore.open_readonly(data / "lancedb", name=second_stage_table(identity))
    assert table.chunk_ids() == chunks
    assert table.count() == len(chunks)  # no row twice


@pytest.mark.parametrize(
    ("fault", "state"),
    [
        ("after_second_stage", "a flush's second-stage rows written, the manifest not committed"),
        ("second_stage_rows", "a fill's rows written, their vectors not stored"),
    ],
)
def test_a_kill_while_second_stage_vectors_are_written_is_repaired(
    tmp_path: Path, pages: dict[str, bytes], fault: str, state: str
) -> None:
    config = _config(tmp_path, pages)
    first = run_json(config, "index")
    assert first["second_stage"]["pending"] == 0
    _version_2(tmp_path / "docs", pages)

    killed = _crash(config, fault)
    assert killed.returncode == -signal.SIGKILL, (fault, state, killed.stderr[-2000:])

    report = run_json(config, "index")
    assert report["second_stage"]["pending"] == 0, report
    _assert_one_row_per_chunk(tmp_path / "data")
