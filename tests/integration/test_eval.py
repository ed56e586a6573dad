"""`ragd eval` on fastapi-docs: a regression guard for retrieval quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import GOLD, REPO
from tests.integration.conftest import run_json, run_ragd

BASELINE = json.loads((REPO / "tests" / "retrieval_baseline.json").read_text())


@pytest.fixture(scope="module")
def report(indexed_fastapi: Path) -> dict[str, object]:
    result: dict[str, object] = run_json(indexed_fastapi, "eval", str(GOLD), "--mode", "all")
    return result


@pytest.mark.parametrize("metric", ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"])
def test_hybrid_retrieval_stays_at_or_above_the_committed_baseline(
    report: dict[str, dict[str, dict[str, dict[str, float]]]], metric: str
) -> None:
    measured = report["modes"]["hybrid"]["overall"][metric]

    assert measured >= BASELINE["modes"]["hybrid"][metric], f"{metric} fell to {measured}"


def test_hybrid_recall_at_5_is_at_least_each_single_retriever_for_every_kind(
    report: dict[str, dict[str, dict[str, dict[str, dict[str, float]]]]],
) -> None:
    modes = report["modes"]
    for kind, hybrid in modes["hybrid"]["by_kind"].items():
        for single in ("bm25", "vector"):
            assert hybrid["recall@5"] >= modes[single]["by_kind"][kind]["recall@5"], (kind, single)


def test_hybrid_abstains_on_most_negatives_and_few_answerable_questions(
    report: dict[str, dict[str, dict[str, dict[str, float]]]],
) -> None:
    hybrid = report["modes"]["hybrid"]

    assert hybrid["abstention"]["abstained"] >= 0.70
    assert hybrid["overall"]["wrongly_abstained"] <= 0.05


def test_a_gold_set_for_another_corpus_is_refused_loudly(
    indexed_fastapi: Path, tmp_path: Path
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

    result = run_ragd(indexed_fastapi, "eval", str(gold))

    assert result.returncode == 2
    assert "not in the index" in result.stderr and "pages/common/tar.md" in result.stderr


def test_every_miss_names_the_gold_rank_in_each_retriever(
    report: dict[str, dict[str, dict[str, list[dict[str, object]]]]],
) -> None:
    modes = report["modes"]
    misses = modes["hybrid"]["misses"]
    assert misses, "the gold set has hybrid misses to explain"
    for miss in misses:
        ranks = miss["retriever_ranks"]
        assert isinstance(ranks, dict)
        assert set(ranks) == {"bm25", "vector"}
        for mode in ("bm25", "vector"):
            # The same gold, ranked first by that retriever on its own, is not its miss.
            missed_there = {m["id"] for m in modes[mode]["misses"]}
            assert (ranks[mode] == 1) == (miss["id"] not in missed_there), (miss["id"], mode)


def test_the_text_report_lists_each_miss_with_its_ranks(indexed_fastapi: Path) -> None:
    result = run_ragd(indexed_fastapi, "eval", str(GOLD), "--mode", "hybrid")

    assert result.returncode == 0, result.stderr
    miss_lines = [line for line in result.stdout.splitlines() if line.startswith("  miss ")]
    assert miss_lines
    assert all("hybrid " in line and "bm25 " in line and "vector " in line for line in miss_lines)
