"""Query filters: globs over document keys, and the one doc_id pattern every store applies."""

from __future__ import annotations

import re

import pytest

from ragd.errors import QueryRefused
from ragd.search.filters import QueryFilter, escape, glob_regex


@pytest.mark.parametrize(
    ("glob", "key", "matches"),
    [
        ("pages/common/*.md", "pages/common/tar.md", True),
        ("pages/*.md", "pages/common/tar.md", False),  # `*` stays within a directory
        ("pages/**/*.md", "pages/common/tar.md", True),
        ("**/tar.md", "tar.md", True),  # `**/` may match no directory
        ("**/tar.md", "pages/linux/tar.md", True),
        ("docs/**", "docs/en/docs/index.md", True),
        ("t?r.md", "tar.md", True),
        ("t?r.md", "t/r.md", False),
        ("a+b (1).md", "a+b (1).md", True),  # regex characters are literal
        ("a+b (1).md", "aab 1.md", False),
        ("tar.md", "tarxmd", False),  # `.` is a dot
    ],
)
def test_globs_match_whole_keys(glob: str, key: str, matches: bool) -> None:
    assert bool(re.fullmatch(glob_regex(glob), key)) is matches


def test_escaping_makes_every_metacharacter_literal() -> None:
    text = r"\.+*?()|[]{}^$#&-~ plain"

    assert re.fullmatch(escape(text), text)


def test_no_filter_has_no_pattern() -> None:
    assert QueryFilter().doc_pattern() is None


def test_sources_and_path_make_one_doc_id_pattern() -> None:
    pattern = QueryFilter(("docs", "my-blog"), "*.md").doc_pattern()

    assert pattern is not None
    assert re.fullmatch(pattern, "my-blog:post.md")
    assert re.fullmatch(pattern, "docs:index.md")
    assert not re.fullmatch(pattern, "wiki:index.md")
    assert not re.fullmatch(pattern, "docs:a/index.md")


def test_a_path_without_sources_matches_in_any_source() -> None:
    pattern = QueryFilter(path="guide/*").doc_pattern()

    assert pattern is not None and re.fullmatch(pattern, "any:guide/x.md")


@pytest.mark.parametrize("path", ["", "x" * 1001, "a\nb", "a\x00b", "a\udc80b"])
def test_an_unusable_path_is_refused(path: str) -> None:
    with pytest.raises(QueryRefused):
        QueryFilter(path=path)


def test_too_many_sources_are_refused() -> None:
    with pytest.raises(QueryRefused, match="at most 64"):
        QueryFilter(sources=tuple(f"s{i}" for i in range(65)))
