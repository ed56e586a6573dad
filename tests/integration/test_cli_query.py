"""`ragd query` and `ragd status` over an indexed fastapi-docs copy: the contracts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GOLD
from tests.integration.conftest import ragd_in_process, run_json, run_ragd

RESULT_KEYS = {
    "rank",
    "first_stage_rank",
    "second_stage_rank",
    "chunk_id",
    "doc_id",
    "source",
    "path",
    "uri",
    "page",
    "title",
    "heading_path",
    "text",
    "score",
    "bm25_rank",
    "vector_rank",
    "indexed_at",
    "stale",
    "stale_reasons",
}


def _gold(question_id: str) -> dict[str, Any]:
    for line in GOLD.read_text().splitlines():
        question: dict[str, Any] = json.loads(line)
        if question["id"] == question_id:
            return question
    raise KeyError(question_id)


def _answers(hit: dict[str, Any], question: dict[str, Any]) -> bool:
    """The gold rule of ../shared/eval/README.md."""
    return any(
        hit["path"] == gold["path"]
        and (gold["heading"] in hit["heading_path"] or gold["evidence"] in hit["text"])
        for gold in question["gold"]
    )


def test_query_json_follows_the_contract(indexed_fastapi: Path) -> None:
    body = run_json(indexed_fastapi, "query", "request body", "-k", "5")

    assert set(body) == {"query", "mode", "rerank", "abstained", "results"}
    assert body["mode"] == "hybrid"
    assert body["rerank"] is False  # the second stage is off in this index
    assert body["abstained"] is False
    assert len(body["results"]) == 5
    for rank, hit in enumerate(body["results"], start=1):
        assert set(hit) == RESULT_KEYS
        assert hit["rank"] == rank
        assert hit["doc_id"] == f"docs:{hit['path']}"
        assert hit["uri"].startswith("file://") and hit["uri"].endswith(hit["path"])
        assert hit["indexed_at"].endswith("Z")
        assert hit["stale"] is False and hit["stale_reasons"] == []
        assert hit["bm25_rank"] is not None or hit["vector_rank"] is not None
        assert not hit["text"].startswith(hit["title"] + " —")  # body only, no prefix
    scores = [hit["score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_heading_path_runs_from_the_title_heading_down(indexed_fastapi: Path) -> None:
    body = run_json(indexed_fastapi, "query", "Import Pydantic's BaseModel", "--mode", "bm25")

    hit = next(h for h in body["results"] if h["path"].endswith("tutorial/body.md"))
    assert hit["title"] == "Request Body"
    assert hit["heading_path"][0] == "Request Body"


@pytest.mark.parametrize("question_id", ["fa-028", "fa-001"])  # identifier, paraphrase
def test_hybrid_finds_the_gold_section_in_the_top_five(
    indexed_fastapi: Path, question_id: str
) -> None:
    question = _gold(question_id)

    body = run_json(indexed_fastapi, "query", question["query"], "-k", "5")

    assert any(_answers(hit, question) for hit in body["results"]), body["results"]


@pytest.mark.parametrize("mode", ["bm25", "vector"])
def test_single_retriever_modes_rank_with_their_own_retriever_only(
    indexed_fastapi: Path, mode: str
) -> None:
    body = run_json(indexed_fastapi, "query", "dependency injection", "--mode", mode, "-k", "3")

    other = "vector_rank" if mode == "bm25" else "bm25_rank"
    assert body["mode"] == mode
    assert [hit[f"{mode}_rank"] for hit in body["results"]] == [1, 2, 3]
    assert all(hit[other] is None for hit in body["results"])


def test_a_100_kb_query_is_refused_with_exit_code_2(indexed_fastapi: Path) -> None:
    result = ragd_in_process(indexed_fastapi, "query", "fastapi " * 12_800)

    assert result.returncode == 2
    assert "limit" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_deeply_nested_parentheses_do_not_kill_the_process(indexed_fastapi: Path) -> None:
    result = run_ragd(indexed_fastapi, "query", "(" * 5000 + "body" + ")" * 5000, "--json")

    assert result.returncode in (0, 2), result.stderr
    if result.returncode == 0:
        assert json.loads(result.stdout)["results"]


def test_a_query_of_only_punctuation_returns_normally(indexed_fastapi: Path) -> None:
    result = ragd_in_process(indexed_fastapi, "query", "?!.,;:()[]{}<>-+*/\\\"'", "--json")

    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr


def test_query_syntax_is_searched_as_words_not_obeyed(indexed_fastapi: Path) -> None:
    body = run_json(indexed_fastapi, "query", "chunk_id:* OR text:body AND", "--mode", "bm25")

    assert body["results"]  # the words are searched; no field query, no parse error


def test_status_reports_the_source_and_agreeing_stores(indexed_fastapi: Path) -> None:
    status = run_json(indexed_fastapi, "status")

    assert status["stores_agree"] is True
    source = status["sources"][0]
    assert source["name"] == "docs"
    assert source["documents"] == 155
    assert source["chunks"] == status["stores"]["manifest_chunks"]
    assert source["chunks"] == status["stores"]["lancedb_chunks"]
    assert source["chunks"] == status["stores"]["tantivy_chunks"]
    assert source["failed"] == 0 and source["stale"] == 0
    assert source["last_indexed_at"].endswith("Z")


def test_status_check_prints_one_line_and_exits_0_when_healthy(indexed_fastapi: Path) -> None:
    result = ragd_in_process(indexed_fastapi, "status", "--check")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("RAGD OK - 155 documents")
    assert len(result.stdout.strip().splitlines()) == 1


def test_status_text_gives_the_last_index_as_an_age(indexed_fastapi: Path) -> None:
    result = ragd_in_process(indexed_fastapi, "status")

    assert result.returncode == 0, result.stderr
    row = result.stdout.splitlines()[1].split()
    assert row[0] == "docs" and row[-1] == "ago"
    assert re.search(r"^last full scan: \d+ (s|min) ago;", result.stdout, re.MULTILINE)


def test_status_stale_says_so_when_no_document_is_stale(indexed_fastapi: Path) -> None:
    result = ragd_in_process(indexed_fastapi, "status", "--stale")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "no stale documents\n"


def test_query_text_says_plainly_when_it_abstains(indexed_fastapi: Path) -> None:
    question = ("how long should sourdough bread proof",)
    body = run_json(indexed_fastapi, "query", *question)
    printed = ragd_in_process(indexed_fastapi, "query", *question)

    assert body["abstained"] is True
    assert printed.stdout.splitlines()[0].startswith(
        "No confident answer (abstained): the documents may not answer this question."
    )


def test_query_text_gives_each_hit_its_age(indexed_fastapi: Path) -> None:
    printed = ragd_in_process(indexed_fastapi, "query", "request body", "-k", "2")

    assert printed.returncode == 0, printed.stderr
    ages = [line for line in printed.stdout.splitlines() if line.startswith("    docs:")]
    assert len(ages) == 2
    assert all(re.search(r"  indexed \d+ (s|min) ago$", line) for line in ages)


def test_query_without_an_index_says_what_to_do(tmp_path: Path) -> None:
    corpus = tmp_path / "empty-corpus"
    corpus.mkdir()
    from tests.conftest import write_config

    config = write_config(tmp_path, corpus)
    result = ragd_in_process(config, "query", "anything")

    assert result.returncode == 1
    assert "ragd index" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_bad_config_key_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[chunking]\nmax_char = 900\n[[sources]]\nname = "d"\ntype = "folder"\npath = "."\n'
    )

    result = ragd_in_process(config, "status")

    assert result.returncode == 2
    assert "max_char" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_expand_gives_each_hit_its_whole_section_as_context(indexed_fastapi: Path) -> None:
    plain = run_json(indexed_fastapi, "query", "dependencies with yield", "-k", "3")
    expanded = run_json(indexed_fastapi, "query", "dependencies with yield", "-k", "3", "--expand")

    assert all("context" not in hit for hit in plain["results"])
    assert [h["chunk_id"] for h in expanded["results"]] == [h["chunk_id"] for h in plain["results"]]
    for hit in expanded["results"]:
        assert hit["text"].strip()[:200] in hit["context"]
        assert len(hit["context"]) >= len(hit["text"].strip())


def test_expand_prints_the_section_in_the_text_output(indexed_fastapi: Path) -> None:
    result = ragd_in_process(
        indexed_fastapi, "query", "dependencies with yield", "-k", "1", "--expand"
    )

    assert result.returncode == 0, result.stderr
    hit = run_json(indexed_fastapi, "query", "dependencies with yield", "-k", "1", "--expand")
    last_line = hit["results"][0]["context"].strip().splitlines()[-1]
    assert f"    {last_line}" in result.stdout.splitlines()


def test_search_fusion_setting_switches_hybrid_to_reciprocal_rank_fusion(
    indexed_fastapi: Path, tmp_path: Path
) -> None:
    rrf_config = tmp_path / "rrf.toml"
    rrf_config.write_text('[search]\nfusion = "rrf"\n' + indexed_fastapi.read_text())

    convex = run_json(indexed_fastapi, "query", "request body", "-k", "3")
    rrf = run_json(rrf_config, "query", "request body", "-k", "3")

    # Convex: the best BM25 hit alone scores its weight, 1.0 (more if the vector side has
    # it too); RRF: at most 1.0/61 + 0.5/61 with k = 60.
    assert convex["results"][0]["score"] >= 1.0
    assert rrf["results"][0]["score"] <= 1.5 / 61


def test_query_context_prints_the_block_its_json_carries(indexed_fastapi: Path) -> None:
    args = ("query", "dependencies with yield", "-k", "4", "--context", "--max-chars", "3000")
    printed = ragd_in_process(indexed_fastapi, *args)
    body = run_json(indexed_fastapi, *args)

    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.rstrip("\n") == body["context"]
    assert body["context"].startswith("[1] ")
    assert sum(len(p["text"]) for p in body["passages"]) <= 3000
    assert [p["number"] for p in body["passages"]] == list(range(1, len(body["passages"]) + 1))
