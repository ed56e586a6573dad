"""The pathspec adapter: its joined-regex fast path answers as pathspec's own matching does,
on patterns of every kind and on real corpus keys."""

from __future__ import annotations

import pathspec
import pytest

from ragd.adapters.pathspec import check_pattern, glob_matcher
from ragd.config.sources import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from tests.conftest import FASTAPI_DOCS

_PATTERN_SETS = [
    ("**/*.md",),
    ("**/*.md", "docs/**/*.html", "*.txt"),
    (".git/", "node_modules/", ".*/"),
    ("build", "/top-only.md", "a/**/b.md", "*.tmp"),
    ("**/*.md", "!keep/**"),  # a negation: pathspec itself decides
    (),
]
_KEYS = [
    "a.md",
    "docs/a.md",
    "docs/x/y.html",
    "docs/y.html",
    "notes.txt",
    "x/notes.txt",
    ".git/",
    "src/.git/",
    "node_modules/",
    "a/node_modules/",
    ".hidden/",
    "x/.cache/",
    "build",
    "x/build",
    "build/",
    "top-only.md",
    "x/top-only.md",
    "a/b.md",
    "a/x/y/b.md",
    "keep/a.md",
    "file.tmp",
    "dir.tmp/",
    "README",
    "ü/ä.md",
]


@pytest.mark.parametrize("patterns", _PATTERN_SETS)
def test_glob_matcher_agrees_with_pathspec_on_every_key(patterns: tuple[str, ...]) -> None:
    spec = pathspec.PathSpec.from_lines("gitwildmatch", patterns)
    matches = glob_matcher(patterns)

    assert [matches(k) for k in _KEYS] == [bool(spec.match_file(k)) for k in _KEYS]


def test_the_fast_path_answers_as_pathspec_on_a_real_corpus() -> None:
    keys = [p.relative_to(FASTAPI_DOCS).as_posix() for p in FASTAPI_DOCS.rglob("*")]
    for patterns in (
        DEFAULT_INCLUDE,
        DEFAULT_EXCLUDE,
        ("docs/en/**/*.md", "!docs/en/docs/tutorial/"),
    ):
        fast, public = glob_matcher(patterns), glob_matcher(patterns, fast=False)
        assert [fast(k) for k in keys] == [public(k) for k in keys]


def test_a_bad_pattern_is_refused_with_pathspecs_reason() -> None:
    with pytest.raises(ValueError):
        check_pattern("!")
