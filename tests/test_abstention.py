"""The abstention rule as a pure function."""

from __future__ import annotations

from ragd.abstention import Evidence, agreement, is_weak


def test_agreement_counts_top_hits_both_retrievers_ranked_in_their_top_10() -> None:
    ranks = [(1, 2), (3, None), (4, 11), (2, 2)]

    assert agreement(ranks) == 1  # the 4th hit is past the top 3


def test_no_agreement_is_weak_evidence() -> None:
    assert is_weak(Evidence(agreement=0, bm25_per_term=9.0))


def test_a_low_bm25_score_per_term_is_weak_evidence() -> None:
    assert is_weak(Evidence(agreement=3, bm25_per_term=0.9))


def test_agreement_with_a_strong_bm25_match_is_not_weak() -> None:
    assert not is_weak(Evidence(agreement=1, bm25_per_term=2.0))
