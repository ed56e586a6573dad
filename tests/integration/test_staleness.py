"""Stale hits are visible as stale: the CLI against real stores and the real model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ragd.config import load_config
from ragd.indexing.entries import EntryUpdate
from ragd.service.runtime import Runtime
from ragd.stores.jobs import JobQueue
from ragd.stores.manifest import Manifest
from ragd.stores.records import format_time
from tests.conftest import MODEL_DIR, write_config
from tests.integration.conftest import ragd_in_process, run_json

PAGES = {
    "alpha.md": "# Alpha\n\nAardvarks dig burrows at night.\n",
    "beta.md": "# Beta\n\nBadgers dig burrows by day.\n",
    "gamma.md": "# Gamma\n\nGophers dig burrows in gardens.\n",
    "delta.md": "# Delta\n\nDingoes never dig burrows.\n",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in PAGES.items():
        (root / name).write_text(text)
    yield root


def _stale_by_path(config: Path, *args: str) -> dict[str, list[str]]:
    body = run_json(config, "query", "dig burrows", "-k", "10", *args)
    return {hit["path"]: hit["stale_reasons"] for hit in body["results"]}


def test_an_edited_and_a_deleted_file_are_flagged_and_nothing_else(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    (corpus / "alpha.md").write_text("# Alpha\n\nAardvarks dig burrows at dawn now.\n")
    (corpus / "beta.md").unlink()

    flagged = _stale_by_path(config)

    assert flagged == {
        "alpha.md": ["source_changed"],
        "beta.md": ["source_deleted"],
        "gamma.md": [],
        "delta.md": [],
    }


def test_exclude_stale_returns_only_fresh_hits_and_counts_the_rest(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    (corpus / "alpha.md").write_text("# Alpha\n\nAardvarks dig burrows at dawn now.\n")

    body = run_json(config, "query", "dig burrows", "--exclude-stale")

    assert {hit["path"] for hit in body["results"]} == {"beta.md", "gamma.md", "delta.md"}
    assert body["excluded_stale"] == 1


def test_max_age_flags_unconfirmed_hits_until_a_rescan_confirms_them(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, corpus, extra='max_age = "10m"\n')
    run_json(config, "index")
    fresh_at_first = _stale_by_path(config)

    _confirmed_an_hour_ago(tmp_path / "data" / "state.db", "docs")
    aged = _stale_by_path(config)
    rescan = run_json(config, "index")
    fresh_again = _stale_by_path(config)

    assert set(map(tuple, fresh_at_first.values())) == {()}
    assert set(map(tuple, aged.values())) == {("max_age",)}
    assert rescan["chunks"]["embedded"] == 0 and rescan["documents"]["unchanged"] == 4
    assert set(map(tuple, fresh_again.values())) == {()}


def _confirmed_an_hour_ago(state: Path, source: str) -> None:
    """Date every confirmation of `source`'s documents an hour back, as though that long
    had passed since the pass that made them (no test waits out a max_age)."""
    an_hour_ago = format_time(datetime.now(UTC) - timedelta(hours=1))
    manifest = Manifest.open(state)
    try:
        documents = [(d.doc_id, d.size or 0, d.mtime_ns or 0) for d in manifest.documents(source)]
        manifest.confirm_unchanged(documents, checked_at=an_hour_ago)
        manifest.confirm_sources([source], checked_at=an_hour_ago)
    finally:
        manifest.close()


def test_a_model_change_flags_every_hit_fingerprint_until_re_indexed(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    other = tmp_path / "other-model"
    other.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "modules.json"):
        (other / name).write_bytes((MODEL_DIR / name).read_bytes())
    settings = json.loads((MODEL_DIR / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**settings, "normalize": False}))
    write_config(tmp_path, corpus, model=other)

    before = _stale_by_path(config, "--mode", "bm25")
    run_json(config, "index")
    after = _stale_by_path(config, "--mode", "bm25")

    assert set(map(tuple, before.values())) == {("fingerprint",)}
    assert set(map(tuple, after.values())) == {()}


def test_a_queued_webhook_delivery_flags_the_entrys_hits_pending(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "seed.md").write_text("# Seed\n\nA folder page.\n")
    config = write_config(
        tmp_path,
        corpus,
        extra='\n[[sources]]\nname = "cms"\ntype = "webhook"\nsecret_env = "UNUSED_HERE"\n',
    )
    runtime = Runtime.from_config(load_config(config))
    with runtime.indexer() as indexer:
        indexer.apply_entries(
            "cms",
            [
                EntryUpdate(
                    key="post-9",
                    uri="https://cms.example/post-9",
                    data=b"# Post\n\nQuokkas smile for photos.\n",
                )
            ],
        )
    assert _hit_reasons(config, "quokkas smile") == []

    queue = JobQueue(tmp_path / "data" / "state.db")
    queue.accept_delivery("cms", "msg-1", [("post-9", json.dumps({"event": "delete"}), None)])
    queue.close()

    assert _hit_reasons(config, "quokkas smile") == ["pending"]


def _hit_reasons(config: Path, text: str) -> list[str]:
    hit: dict[str, Any] = run_json(config, "query", text, "--mode", "bm25")["results"][0]
    return list(hit["stale_reasons"])


def test_status_numbers_match_the_manifest_and_check_follows_staleness(
    tmp_path: Path, corpus: Path
) -> None:
    (corpus / "broken.md").write_bytes(b"\x00binary")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    healthy = ragd_in_process(config, "status", "--check")
    (corpus / "alpha.md").write_text("# Alpha\n\nAardvarks dig burrows at dawn now.\n")
    (corpus / "beta.md").unlink()

    status = run_json(config, "status")
    stale_check = ragd_in_process(config, "status", "--check")
    listed = ragd_in_process(config, "status", "--stale")
    (corpus / "broken.md").unlink()
    run_json(config, "index")
    fixed_check = ragd_in_process(config, "status", "--check")

    source = status["sources"][0]
    assert healthy.returncode == 1  # the failed file alone is enough
    assert source["documents"] == 5 and source["indexed"] == 4 and source["failed"] == 1
    assert source["stale"] == 2
    assert source["stale_by_reason"] == {"source_changed": 1, "source_deleted": 1}
    assert {d["path"] for d in source["stale_documents"]} == {"alpha.md", "beta.md"}
    assert source["chunks"] == status["stores"]["manifest_chunks"] == 4
    assert stale_check.returncode == 1 and stale_check.stdout.startswith("RAGD CRITICAL")
    assert "docs:alpha.md\tsource_changed" in listed.stdout
    assert fixed_check.returncode == 0 and fixed_check.stdout.startswith("RAGD OK - 3 documents")
