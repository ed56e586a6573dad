"""Reciprocal rank fusion as a pure function."""

from __future__ import annotations

import pytest

from ragd.search.fusion import convex_fusion, reciprocal_rank_fusion


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
