"""Fusion and second-stage re-scoring as pure functions."""

from __future__ import annotations

import pytest

from ragd.search.fusion import (
    Fused,
    convex_fusion,
    reciprocal_rank_fusion,
    rescore,
    second_stage_share,
)


def test_an_item_both_retrievers_agree_on_outranks_items_only_one_found() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "vector": ["d", "c", "e"]})

    assert fused[0].item == "c"
    assert fused[0].ranks == {"bm25": 3, "vector": 2}


def test_scores_follow_the_rrf_formula_with_k_60() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a"], "vector": ["b", "a"]})

    scores = {f.item: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 61)


def test_weights_scale_each_list() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a"], "vector": ["b"]}, weights={"vector": 2.0})

    assert [f.item for f in fused] == ["b", "a"]


def test_ties_break_deterministically_by_best_rank_then_id() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["x", "y"], "vector": ["y", "x"]})

    assert [f.item for f in fused] == ["x", "y"]


def test_an_id_listed_twice_by_one_retriever_counts_once() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a", "a", "b"]})

    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[1].ranks == {"bm25": 3}


def test_empty_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion({"bm25": [], "vector": []}) == []


def test_convex_scores_are_weighted_shares_of_each_lists_best_score() -> None:
    fused = convex_fusion(
        {"bm25": [("a", 10.0), ("b", 5.0)], "vector": [("b", 0.8), ("c", 0.4)]},
        weights={"bm25": 1.0, "vector": 0.5},
    )

    scores = {f.item: f.score for f in fused}
    assert scores == pytest.approx({"a": 1.0, "b": 0.5 + 0.5, "c": 0.25})
    assert [f.item for f in fused] == ["a", "b", "c"]  # a and b tie; a sorts first by id
    assert fused[1].ranks == {"bm25": 2, "vector": 1}


def test_convex_fusion_keeps_a_clear_bm25_lead_that_rrf_gives_away() -> None:
    # BM25 is sure of "a" (far ahead of its runner-up); the vector list barely prefers "b".
    bm25 = [("a", 12.0), ("b", 3.0), ("c", 2.9)]
    vector = [("b", 0.81), ("c", 0.80), ("a", 0.79)]

    convex = convex_fusion({"bm25": bm25, "vector": vector})
    rrf = reciprocal_rank_fusion({"bm25": [i for i, _ in bm25], "vector": [i for i, _ in vector]})

    assert convex[0].item == "a"
    assert rrf[0].item == "b"


def test_convex_ties_break_on_best_rank_then_id_and_duplicates_count_once() -> None:
    fused = convex_fusion({"bm25": [("b", 1.0), ("a", 1.0), ("b", 1.0)]})

    assert [(f.item, f.score) for f in fused] == [("b", 1.0), ("a", 1.0)]


def test_a_list_without_a_positive_score_adds_ranks_but_no_score() -> None:
    fused = convex_fusion({"bm25": [("a", 2.0)], "vector": [("a", -0.2), ("b", -0.5)]})

    assert [(f.item, f.score) for f in fused] == [("a", 1.0), ("b", 0.0)]
    assert fused[0].ranks == {"bm25": 1, "vector": 1}


def test_the_second_stages_share_falls_as_keywords_cover_more_of_the_query() -> None:
    shares = [second_stage_share(c) for c in (0.0, 0.3, 0.5, 0.8)]

    assert shares == sorted(shares, reverse=True)
    assert shares[0] == 1.0 and shares[-1] == 0.0
    assert second_stage_share(0.5, weight=0.0) == 0.0


def _fused(*items: tuple[str, float]) -> list[Fused]:
    return [Fused(item, score, {"bm25": n}) for n, (item, score) in enumerate(items, start=1)]


def test_rescoring_with_no_share_keeps_the_first_stages_order() -> None:
    first = _fused(("a", 1.0), ("b", 0.8), ("c", 0.5))

    rescored = rescore(first, {"a": 0.1, "b": 0.9, "c": 0.5}, share=0.0)

    assert [r.item for r in rescored] == ["a", "b", "c"]
    assert [r.second_rank for r in rescored] == [3, 1, 2]


def test_rescoring_with_a_full_share_follows_the_second_stage() -> None:
    first = _fused(("a", 1.0), ("b", 0.8), ("c", 0.5))

    rescored = rescore(first, {"a": 0.1, "b": 0.9, "c": 0.5}, share=1.0)

    assert [r.item for r in rescored] == ["b", "c", "a"]
    assert [r.first_rank for r in rescored] == [2, 3, 1]


def test_scores_mix_each_stages_share_of_its_best() -> None:
    rescored = rescore(_fused(("a", 2.0), ("b", 1.0)), {"a": 0.4, "b": 0.8}, share=0.5)

    assert {r.item: r.score for r in rescored} == pytest.approx(
        {"a": 0.5 * 1.0 + 0.5 * 0.5, "b": 0.5 * 0.5 + 0.5 * 1.0}
    )


def test_a_candidate_without_a_second_score_is_ranked_by_the_first_stage() -> None:
    rescored = rescore(_fused(("a", 1.0), ("b", 0.6)), {"a": 0.2}, share=1.0)

    by_item = {r.item: r for r in rescored}
    assert by_item["b"].score == pytest.approx(0.6)  # its first-stage ratio, for both parts
    assert by_item["b"].second_rank is None
    assert by_item["a"].score == pytest.approx(1.0)
