"""The abstention rule as a pure function."""

from __future__ import annotations

from ragd.search.abstention import Evidence, agreement, is_weak


def test_agreement_counts_ids_both_retrievers_rank_in_their_top_10() -> None:
    bm25 = ["a", "b", "c"] + [f"x{i}" for i in range(7)] + ["d"]
    vector = ["c", "d", "a", "e"]

    assert agreement(bm25, vector) == 2  # a and c; d is 11th in the BM25 list


def test_lists_sharing_nothing_have_no_agreement() -> None:
    assert agreement(["a", "b"], ["c"]) == 0


def test_no_agreement_is_weak_evidence() -> None:
    assert is_weak(Evidence(agreement=0, bm25_per_term=9.0))


def test_a_low_bm25_score_per_term_is_weak_evidence() -> None:
    assert is_weak(Evidence(agreement=3, bm25_per_term=0.9))


def test_agreement_with_a_strong_bm25_match_is_not_weak() -> None:
    assert not is_weak(Evidence(agreement=1, bm25_per_term=2.0))
