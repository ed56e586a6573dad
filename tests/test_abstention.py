"""The abstention rule and its signals, as pure functions."""

from __future__ import annotations

import math

import pytest

from ragd.search.abstention import (
    LOW_COVERAGE,
    MIN_MARGIN,
    NAMED_COVERAGE,
    Evidence,
    coverage,
    idf,
    is_weak,
    margin,
    unknown_names,
    word_forms,
)

CORPUS = {"hog", "flag", "tar", "archive", "extract"}
VOCABULARY = {"hog", "flag", "tonight", "backup", "how", "do", "i"}


def test_idf_is_tantivys_bm25_idf() -> None:
    assert idf(100, 1) == pytest.approx(math.log(1 + 99.5 / 1.5))


def test_coverage_is_the_top_score_over_the_sum_of_the_terms_idfs() -> None:
    most = idf(1000, 10) + idf(1000, 100)

    assert coverage(most / 2, 1000, [10, 100]) == pytest.approx(0.5)


def test_a_query_without_terms_covers_nothing() -> None:
    assert coverage(3.0, 1000, []) == 0.0


def test_word_forms_strip_suffixes_and_doubled_consonants() -> None:
    assert {"hog", "hogg"} <= word_forms("hogging")
    assert "flag" in word_forms("flagged")
    assert "empty" in word_forms("emptied")


def test_a_name_the_corpus_never_uses_is_unknown() -> None:
    found = unknown_names(["how", "do", "wevtutil"], CORPUS.__contains__, VOCABULARY.__contains__)

    assert found == ("wevtutil",)


def test_an_ordinary_word_absent_from_the_corpus_is_not_a_name() -> None:
    assert unknown_names(["tonight"], CORPUS.__contains__, VOCABULARY.__contains__) == ()


def test_an_inflection_of_a_known_word_is_not_a_name() -> None:
    assert unknown_names(["hogging", "flagged"], CORPUS.__contains__, lambda _: False) == ()


def test_terms_with_digits_are_values_not_names() -> None:
    assert unknown_names(["db01", "11pm"], CORPUS.__contains__, lambda _: False) == ()


def test_margin_is_the_best_over_the_median_of_the_pool() -> None:
    assert margin(0.9, [0.9, 0.5, 0.4]) == pytest.approx(0.4)
    assert margin(0.9, [0.9, 0.6, 0.5, 0.4]) == pytest.approx(0.35)
    assert margin(0.9, []) is None


def test_an_unknown_name_in_a_poorly_covered_query_abstains() -> None:
    assert is_weak(Evidence(NAMED_COVERAGE - 0.01, ("wevtutil",), margin=0.5))


def test_an_unknown_name_in_a_well_covered_query_does_not() -> None:
    # A pasted command with a flag the pages spell differently (`tar xzvf`).
    assert not is_weak(Evidence(NAMED_COVERAGE + 0.3, ("xzvf",), margin=0.1))


def test_low_coverage_with_no_hit_standing_out_abstains() -> None:
    assert is_weak(Evidence(LOW_COVERAGE - 0.05, (), margin=MIN_MARGIN - 0.05))


def test_low_coverage_with_a_hit_standing_out_does_not() -> None:
    # A paraphrase: few shared words, and the model finds one passage far above the rest.
    assert not is_weak(Evidence(LOW_COVERAGE - 0.05, (), margin=MIN_MARGIN + 0.1))


def test_low_coverage_with_nothing_to_compare_abstains() -> None:
    assert is_weak(Evidence(LOW_COVERAGE - 0.05, (), margin=None))


def test_a_well_covered_query_does_not_abstain() -> None:
    assert not is_weak(Evidence(LOW_COVERAGE + 0.2, (), margin=0.0))
