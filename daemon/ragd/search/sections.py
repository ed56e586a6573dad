"""Parent-section expansion: a hit's whole section as context, bounded.

A chunk is a window of its section; an answer often needs the paragraphs around it.
Given a section's chunks in order, this rebuilds the section's text (dropping the
overlap that windowing repeated at the start of each window) and caps it, keeping the
hit's own window in view. Pure functions; imports nothing from ragd.
"""

from __future__ import annotations

from collections.abc import Sequence

SEPARATOR = "\n\n"
# A window repeats at most `overlap` characters (default 120) of the one before it.
MAX_OVERLAP_CHARS = 1000
# Shorter matches are taken as coincidence (a window ending and the next starting with
# the same letter), not as repeated text.
MIN_OVERLAP_CHARS = 8


def _overlap(previous: str, following: str) -> int:
    """Length of the longest end of `previous` that `following` starts with."""
    longest = min(len(previous), len(following), MAX_OVERLAP_CHARS)
    for size in range(longest, MIN_OVERLAP_CHARS - 1, -1):
        if previous.endswith(following[:size]):
            return size
    return 0


def joined(windows: Sequence[str]) -> tuple[str, list[int]]:
    """The section made of `windows` (in order, the overlap each repeats dropped), and
    where each window starts in it."""
    pieces: list[str] = []
    starts: list[int] = []
    length = 0
    for index, window in enumerate(windows):
        cut = _overlap(windows[index - 1], window) if index else 0
        piece = window[cut:] if cut else (SEPARATOR + window if index else window)
        # A window's repeated start is already in the section, ending where it goes on.
        starts.append(length - cut if cut else length + len(piece) - len(window))
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces), starts


def around(whole: str, start: int, end: int, max_chars: int) -> str:
    """`whole` if it has at most `max_chars`, else the slice of `max_chars` centred on
    whole[start:end] and clamped to `whole` (inside the span, when it is the longer)."""
    if len(whole) <= max_chars:
        return whole
    begin = max(0, min(start - (max_chars - (end - start)) // 2, len(whole) - max_chars))
    return whole[begin : begin + max_chars]
