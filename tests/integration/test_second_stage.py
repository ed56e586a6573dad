"""The second stage through the real `ragd` command and a real `ragd serve`, with the shared
ONNX model: queries use it and say so, `--no-rerank` is the first stage alone, a model
change re-embeds that model's vectors only, and the daemon fills vectors after an edit
without embedding unchanged chunks again."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.stores.manifest_reader import ManifestReader
from tests.conftest import MODEL_DIR, RERANK_MODEL_DIR
from tests.integration.conftest import run_json, run_ragd
from tests.integration.daemon import Served, small_root, wait_until


def _config(workdir: Path, root: Path, *, model: Path = MODEL_DIR, rerank: str) -> Path:
    """A config for one folder source; `rerank` is the [rerank] table's body."""
    config = workdir / "config.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{workdir / "data"}"\n\n'
        f'[embedding]\nmodel = "{model}"\n\n'
        f"[rerank]\n{rerank}\n\n"
        f'[[sources]]\nname = "docs"\ntype = "folder"\npath = "{root}"\n'
    )
    return config


def _with_env(config: Path, *args: str, **env: str) -> Any:
    result = run_ragd(config, *args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def reranked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight tutorial pages indexed with the second stage, its model named by the
    environment (the config names the production default, a hub id, offline here)."""
    base = tmp_path_factory.mktemp("reranked")
    config = _config(base, small_root(base / "docs", 8), rerank="enabled = true")
    report = _with_env(config, "index", RAGD_RERANK_MODEL=str(RERANK_MODEL_DIR))
    assert report["second_stage"]["embedded"] > 0
    assert report["second_stage"]["pending"] == 0
    return config


def _query(config: Path, *args: str) -> Any:
    return _with_env(config, "query", *args, RAGD_RERANK_MODEL=str(RERANK_MODEL_DIR))


def test_a_query_uses_the_second_stage_and_each_hit_says_its_ranks(reranked: Path) -> None:
    body = _query(reranked, "send data from the client to the API in the request")

    assert body["rerank"] is True
    assert body["results"]
    for hit in body["results"]:
        assert isinstance(hit["first_stage_rank"], int)
        assert isinstance(hit["second_stage_rank"], int)
    assert any(h["first_stage_rank"] != h["rank"] for h in body["results"])  # it re-ranked


def test_no_rerank_gives_the_first_stage_ranking(reranked: Path, tmp_path: Path) -> None:
    question = "send data from the client to the API in the request"
    without = _query(reranked, question, "--no-rerank")
    # The same stores, read with the second stage switched off in the config.
    off = tmp_path / "off.toml"
    off.write_text(reranked.read_text().replace("enabled = true", "enabled = false"))
    first_stage_only = run_json(off, "query", question)

    assert without["rerank"] is False
    assert [h["second_stage_rank"] for h in without["results"]] == [None] * len(without["results"])
    assert [h["chunk_id"] for h in without["results"]] == [
        h["chunk_id"] for h in first_stage_only["results"]
    ]


def test_status_reports_second_stage_coverage_per_source(reranked: Path) -> None:
    status = _with_env(reranked, "status", RAGD_RERANK_MODEL=str(RERANK_MODEL_DIR))

    (source,) = status["sources"]
    assert source["second_stage"]["coverage"] == 1.0
    assert source["second_stage"]["vectors"] == source["chunks"]
    assert status["second_stage"]["model"].startswith("dir:minilm-l6-v2-onnx-int8:")


def _same_output_other_identity(model: Path, target: Path, file: str) -> Path:
    """A copy of a model whose `file` differs by a trailing newline: another identity, the
    same vectors."""
    shutil.copytree(model, target)
    changed = target / file
    changed.chmod(0o644)
    changed.write_text(changed.read_text() + "\n")
    return target


def test_eval_measures_the_second_stage_as_a_mode_of_its_own(
    reranked: Path, tmp_path: Path
) -> None:
    gold = tmp_path / "gold.jsonl"
    questions = [
        ("q1", "Can I send a JSON payload with a GET request?", "paraphrase", "body.md"),
        ("q2", "run work after returning a response", "paraphrase", "background-tasks.md"),
        ("q3", "BackgroundTasks add_task", "identifier", "background-tasks.md"),
    ]
    headings = {"body.md": "Request Body", "background-tasks.md": "Background Tasks"}
    gold.write_text(
        "".join(
            json.dumps(
                {"id": i, "query": q, "kind": k, "gold": [{"path": p, "heading": headings[p]}]}
            )
            + "\n"
            for i, q, k, p in questions
        )
    )

    report = _with_env(
        reranked, "eval", str(gold), "--mode", "all", RAGD_RERANK_MODEL=str(RERANK_MODEL_DIR)
    )

    modes = report["modes"]
    assert list(modes) == ["bm25", "vector", "hybrid", "hybrid+rerank"]
    reranked_mode = modes["hybrid+rerank"]
    assert set(reranked_mode["by_kind"]) == {"paraphrase", "identifier"}
    assert reranked_mode["overall"]["recall@5"] == 1.0  # three easy questions, eight pages


def test_changing_one_model_re_embeds_only_that_models_vectors(tmp_path: Path) -> None:
    root = small_root(tmp_path / "docs", 3)
    second_a = _same_output_other_identity(RERANK_MODEL_DIR, tmp_path / "second-a", "config.json")
    second_b = _same_output_other_identity(
        RERANK_MODEL_DIR, tmp_path / "second-b", "sentence_bert_config.json"
    )
    first_b = _same_output_other_identity(MODEL_DIR, tmp_path / "first-b", "config.json")
    config = _config(tmp_path, root, rerank=f'model = "{second_a}"')
    first = run_json(config, "index")
    chunks = first["chunks"]["embedded"]
    assert first["second_stage"]["embedded"] == chunks > 0

    config = _config(tmp_path, root, rerank=f'model = "{second_b}"')
    second_changed = run_json(config, "index")

    assert second_changed["chunks"] == {"embedded": 0, "reused": chunks, "deleted": 0}
    assert second_changed["second_stage"]["embedded"] == chunks

    config = _config(tmp_path, root, model=first_b, rerank=f'model = "{second_b}"')
    first_changed = run_json(config, "index")

    assert first_changed["chunks"]["embedded"] == chunks
    assert first_changed["second_stage"] == {"embedded": 0, "reused": chunks, "pending": 0}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 4), rerank=RERANK_MODEL_DIR)
    daemon.start().wait_ready()
    yield daemon
    daemon.stop()


def _chunk_texts(served: Served, key: str) -> set[str]:
    manifest = ManifestReader.open(served.workdir / "data" / "state.db")
    try:
        return {c.text for c in manifest.chunks_of(f"docs:{key}")}
    finally:
        manifest.close()


def _filled(served: Served) -> dict[str, Any] | None:
    status = served.status()
    second = status["sources"][0]["second_stage"]
    return status if second["chunks"] and second["pending"] == 0 else None


def test_the_daemon_fills_second_stage_vectors_after_an_edit_without_embedding_the_rest(
    served: Served, tmp_path: Path
) -> None:
    before = wait_until(lambda: _filled(served), 180, interval=0.5)
    embedded = before["daemon"]["writer"]["second_stage_embedded"]
    assert embedded == before["sources"][0]["chunks"]  # each chunk's text, once

    page = next(iter(sorted((tmp_path / "docs").glob("*.md"))))
    texts_before = _chunk_texts(served, page.name)
    page.write_text(page.read_text() + "\n\nA paragraph about quokka migration.\n")
    wait_until(lambda: served.paths_for("quokka migration")[:1] == [page.name], 10)

    def more_embedded() -> dict[str, Any] | None:
        status = _filled(served)
        if status and status["daemon"]["writer"]["second_stage_embedded"] > embedded:
            return status
        return None

    after = wait_until(more_embedded, 120, interval=0.5)
    new_texts = _chunk_texts(served, page.name) - texts_before
    # Only the chunks the edit changed reach the second-stage model again.
    assert 0 < len(new_texts) < len(texts_before)
    assert after["daemon"]["writer"]["second_stage_embedded"] == embedded + len(new_texts)
    hits = served.query("quokka migration", mode="hybrid")
    assert hits["rerank"] is True
    assert hits["results"][0]["path"] == page.name
    assert hits["results"][0]["second_stage_rank"] is not None
