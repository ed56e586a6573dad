"""The parse guard's file: named while a parse runs, read back after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragd.indexing.parse_guard import CRASHED, ParseGuard, Parsing

DOCUMENT = Parsing(
    doc_id="docs:guide.md",
    source="docs",
    key="guide.md",
    uri="file:///docs/guide.md",
    size=120,
    mtime_ns=1_700_000_000_000_000_000,
    content_hash="ab" * 32,
    fingerprint="recipe-1",
)


def test_the_file_names_the_document_only_while_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "parsing"
    guard = ParseGuard(path)

    with guard.parsing(DOCUMENT):
        assert json.loads(path.read_text())["doc_id"] == "docs:guide.md"

    assert path.read_text() == ""
    assert guard.leftover() is None


def test_a_python_exception_while_parsing_clears_the_file(tmp_path: Path) -> None:
    guard = ParseGuard(tmp_path / "parsing")

    with pytest.raises(ValueError), guard.parsing(DOCUMENT):
        raise ValueError("the parser refused it")

    assert guard.leftover() is None


def test_a_process_that_died_parsing_leaves_a_failed_write_with_the_content_hash(
    tmp_path: Path,
) -> None:
    path = tmp_path / "parsing"
    parsing = ParseGuard(path).parsing(DOCUMENT)
    parsing.__enter__()  # and never left: the process died here (kept alive, so not closed)

    write = ParseGuard(path).leftover()

    assert write is not None
    assert (write.doc_id, write.source, write.key, write.uri) == (
        "docs:guide.md",
        "docs",
        "guide.md",
        "file:///docs/guide.md",
    )
    assert (write.status, write.error) == ("failed", CRASHED)
    assert (write.size, write.mtime_ns) == (DOCUMENT.size, DOCUMENT.mtime_ns)
    assert (write.content_hash, write.fingerprint) == (DOCUMENT.content_hash, "recipe-1")
    assert write.chunks == ()


def test_a_cleared_file_leaves_nothing(tmp_path: Path) -> None:
    guard = ParseGuard(tmp_path / "parsing")
    parsing = guard.parsing(DOCUMENT)
    parsing.__enter__()

    guard.clear()

    assert guard.leftover() is None
    parsing.__exit__(None, None, None)


@pytest.mark.parametrize("text", ['{"doc_id": "docs:guide.md", "sour', "[]", "{}"])
def test_a_file_cut_short_or_foreign_is_ignored(tmp_path: Path, text: str) -> None:
    path = tmp_path / "parsing"
    path.write_text(text)

    assert ParseGuard(path).leftover() is None


def test_without_a_path_nothing_is_written_or_found(tmp_path: Path) -> None:
    guard = ParseGuard(None)

    with guard.parsing(DOCUMENT):
        pass

    assert guard.leftover() is None
    assert guard.for_files("docs", str, "recipe-1") is None
    assert list(tmp_path.iterdir()) == []
