"""Parent-section expansion as pure functions: windows joined into a section, a section
cut to a budget around one span."""

from __future__ import annotations

from ragd.search.sections import around, joined


def test_windows_are_joined_as_paragraphs() -> None:
    assert joined(["one.", "two.", "three."])[0] == "one.\n\ntwo.\n\nthree."


def test_the_overlap_a_window_repeats_is_dropped() -> None:
    windows = ["First part. The repeated sentence.", "The repeated sentence.\n\nNew part."]

    assert joined(windows)[0] == "First part. The repeated sentence.\n\nNew part."


def test_a_short_coincidental_match_is_not_taken_for_overlap() -> None:
    assert joined(["ends with x", "x starts"])[0] == "ends with x\n\nx starts"


def test_each_window_starts_where_the_section_holds_it() -> None:
    windows = ["one.", "First part. The repeated sentence.", "The repeated sentence. New."]

    whole, starts = joined(windows)

    assert [whole[s : s + len(w)] for s, w in zip(starts, windows, strict=True)] == windows


def test_a_section_within_the_budget_is_kept_whole() -> None:
    assert around("abc", 1, 2, 3) == "abc"


def test_a_long_section_is_cut_around_the_span() -> None:
    whole = "a" * 100 + "b" * 20 + "c" * 100

    cut = around(whole, 100, 120, 60)

    assert len(cut) == 60
    assert "b" * 20 in cut


def test_the_cut_never_reaches_past_the_sections_ends() -> None:
    whole = "a" * 10 + "\n\n" + "b" * 100

    assert around(whole, 0, 10, 30) == "a" * 10 + "\n\n" + "b" * 18


def test_a_span_longer_than_the_budget_is_cut_inside_it() -> None:
    whole = "x" * 5 + "0123456789" * 5

    assert around(whole, 5, 55, 10) in whole[5:55]
