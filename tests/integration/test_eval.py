"""`ragd eval` on both gold sets: a regression guard for retrieval quality.

Both corpora are indexed with the first stage: fastapi-docs (2,781 chunks) and tldr-pages'
7,425 English pages. Each first-stage figure must stay at or above
`tests/retrieval_baseline.json`. The baseline's second-stage figures take the ONNX model
minutes to embed a whole corpus on 2 cores, so `python bench/retrieval.py --check` guards
them; tests/integration/test_second_stage.py runs `ragd eval` with the second stage on a
few pages.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GOLD, REPO, SHARED, write_config
from tests.integration.conftest import copy_corpus, ragd_in_process, run_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
BASELINE = json.loads((REPO / "tests" / "retrieval_baseline.json").read_text())
TLDR_GOLD = SHARED / "eval" / "tldr-pages.jsonl"
TLDR_ARCHIVE = SHARED / "corpora" / "tldr-pages.tar.gz"
METRICS = ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"]

Report = dict[str, Any]


@pytest.fixture(scope="module")
def fastapi_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fastapi")
    config = write_config(base, copy_corpus(base / "fastapi-docs"))
    run_json(config, "index")
    return config


@pytest.fixture(scope="module")
def fastapi_report(fastapi_config: Path) -> Report:
    report: Report = run_json(fastapi_config, "eval", str(GOLD), "--mode", "all")
    return report


@pytest.fixture(scope="module")
def tldr_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The English tldr pages, as an operator indexes them for English questions."""
    base = tmp_path_factory.mktemp("tldr")
    with tarfile.open(TLDR_ARCHIVE) as archive:
        archive.extractall(base, filter="data")
    config = write_config(base, base / "tldr", include=("pages/**/*.md",))
    run_json(config, "index")
    return config


@pytest.fixture(scope="module")
def tldr_report(tldr_config: Path) -> Report:
    report: Report = run_json(tldr_config, "eval", str(TLDR_GOLD), "--mode", "all")
    return report


def _first_stage(mode: str) -> bool:
    return not mode.endswith("+rerank")  # bench/retrieval.py --check guards the others


def _baseline_cases() -> list[tuple[str, str, str]]:
    return [
        (corpus, mode, metric)
        for corpus, expected in BASELINE.items()
        for mode in expected["modes"]
        if _first_stage(mode)
        for metric in METRICS
    ]


@pytest.mark.parametrize(("corpus", "mode", "metric"), _baseline_cases())
def test_retrieval_stays_at_or_above_the_committed_baseline(
    fastapi_report: Report, tldr_report: Report, corpus: str, mode: str, metric: str
) -> None:
    report = {"fastapi-docs": fastapi_report, "tldr-pages": tldr_report}[corpus]
    measured = report["modes"][mode]["overall"][metric]

    assert measured >= BASELINE[corpus]["modes"][mode][metric], f"{corpus} {mode} {metric}"


def test_every_mode_is_reported_per_kind(fastapi_report: Report) -> None:
    modes = fastapi_report["modes"]

    assert list(modes) == ["bm25", "vector", "hybrid"]
    for mode in modes.values():
        assert set(mode["by_kind"]) == {"identifier", "jargon", "paraphrase"}


def test_without_the_second_stage_there_is_no_rerank_mode(tldr_report: Report) -> None:
    assert list(tldr_report["modes"]) == ["bm25", "vector", "hybrid"]


def test_hybrid_recall_at_5_is_at_least_each_single_retriever_for_every_kind(
    fastapi_report: Report, tldr_report: Report
) -> None:
    for report in (fastapi_report, tldr_report):
        modes = report["modes"]
        for kind, hybrid in modes["hybrid"]["by_kind"].items():
            for single in ("bm25", "vector"):
                assert hybrid["recall@5"] >= modes[single]["by_kind"][kind]["recall@5"], kind


def _abstention_cases() -> list[tuple[str, str]]:
    return [
        (corpus, mode)
        for corpus, expected in BASELINE.items()
        for mode in expected["abstention"]
        if _first_stage(mode)
    ]


@pytest.mark.parametrize(("corpus", "mode"), _abstention_cases())
def test_abstention_stays_within_the_committed_baseline(
    fastapi_report: Report, tldr_report: Report, corpus: str, mode: str
) -> None:
    report = {"fastapi-docs": fastapi_report, "tldr-pages": tldr_report}[corpus]["modes"][mode]
    expected = BASELINE[corpus]["abstention"][mode]

    assert report["abstention"]["abstained"] >= expected["negatives_abstained"]
    assert report["overall"]["wrongly_abstained"] <= expected["answerable_abstained"]


def test_a_gold_set_for_another_corpus_is_refused_loudly(
    fastapi_config: Path, tmp_path: Path
) -> None:
    gold = tmp_path / "other.jsonl"
    gold.write_text(
        json.dumps(
            {
                "id": "x",
                "query": "tar",
                "kind": "identifier",
                "gold": [{"path": "pages/common/tar.md", "heading": "tar", "evidence": ""}],
            }
        )
        + "\n"
    )

    result = ragd_in_process(fastapi_config, "eval", str(gold))

    assert result.returncode == 2
    assert "not in the index" in result.stderr and "pages/common/tar.md" in result.stderr


def test_every_miss_names_the_gold_rank_in_each_retriever(fastapi_report: Report) -> None:
    modes = fastapi_report["modes"]
    misses = modes["hybrid"]["misses"]
    assert misses, "the gold set has hybrid misses to explain"
    for miss in misses:
        ranks = miss["retriever_ranks"]
        assert set(ranks) == {"bm25", "vector"}
        for mode in ("bm25", "vector"):
            # The same gold, ranked first by that retriever on its own, is not its miss.
            missed_there = {m["id"] for m in modes[mode]["misses"]}
            assert (ranks[mode] == 1) == (miss["id"] not in missed_there), (miss["id"], mode)


def test_the_text_report_lists_each_miss_with_its_ranks(fastapi_config: Path) -> None:
    result = ragd_in_process(fastapi_config, "eval", str(GOLD), "--mode", "hybrid")

    assert result.returncode == 0, result.stderr
    miss_lines = [line for line in result.stdout.splitlines() if line.startswith("  miss ")]
    assert miss_lines
    assert all("hybrid " in line and "bm25 " in line for line in miss_lines)


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_the_page_titled_with_the_command_wins_its_task(tldr_config: Path, mode: str) -> None:
    # Pages that merely mention tar outnumber tar's own; its title counts for it.
    body = run_json(tldr_config, "query", "tar extract", "--mode", mode, "-k", "3")

    assert body["results"][0]["path"] == "pages/common/tar.md"
