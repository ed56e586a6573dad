"""Parent-section expansion as a pure function."""

from __future__ import annotations

from ragd.search.sections import section_text


def test_windows_are_joined_as_paragraphs() -> None:
    assert section_text(["one.", "two.", "three."], 1, 1000) == "one.\n\ntwo.\n\nthree."


def test_the_overlap_a_window_repeats_is_dropped() -> None:
    windows = ["First part. The repeated sentence.", "The repeated sentence.\n\nNew part."]

    assert section_text(windows, 0, 1000) == "First part. The repeated sentence.\n\nNew part."


def test_a_short_coincidental_match_is_not_taken_for_overlap() -> None:
    assert section_text(["ends with x", "x starts"], 0, 1000) == "ends with x\n\nx starts"


def test_a_long_section_is_capped_around_the_hits_window() -> None:
    windows = ["a" * 100, "b" * 20, "c" * 100]

    context = section_text(windows, 1, 60)

    assert len(context) == 60
    assert "b" * 20 in context


def test_the_cap_never_reaches_past_the_sections_ends() -> None:
    windows = ["a" * 10, "b" * 100]

    assert section_text(windows, 0, 30) == "a" * 10 + "\n\n" + "b" * 18
