"""Reciprocal rank fusion as a pure function."""

from __future__ import annotations

import pytest

from ragd.fusion import reciprocal_rank_fusion


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
