"""Where a document's includes are looked for, and which may be read, under a real root."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.sources import includes
from ragd.sources.includes import IncludeRoot, candidates, include_digest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs" / "en" / "docs").mkdir(parents=True)
    (root / "docs_src").mkdir()
    (root / "docs_src" / "app.py").write_text("app = 1\n")
    (tmp_path / "secret.txt").write_text("quokka\n")
    return root


def test_an_include_is_tried_beside_its_document_then_in_each_directory_above() -> None:
    assert candidates("docs/en/docs", "../../docs_src/app.py") == [
        "docs/docs_src/app.py",
        "docs_src/app.py",
    ]


def test_a_leading_slash_means_the_source_root() -> None:
    assert candidates("docs/en", "/docs_src/app.py") == ["docs_src/app.py"]


def test_a_path_that_climbs_out_of_the_root_is_never_tried() -> None:
    assert candidates("docs", "../../../etc/passwd") == []


def test_an_include_resolves_from_an_ancestor_directory(root: Path) -> None:
    read = IncludeRoot(str(root)).for_document("docs/en/docs/page.md")

    assert read("../../docs_src/app.py") == b"app = 1\n"


def test_a_symlink_out_of_the_root_is_not_read(root: Path) -> None:
    (root / "docs_src" / "secret.txt").symlink_to(root.parent / "secret.txt")

    assert IncludeRoot(str(root)).read("docs_src/secret.txt") is None


def test_a_symlink_inside_the_root_is_read(root: Path) -> None:
    (root / "docs" / "app.py").symlink_to(root / "docs_src" / "app.py")

    assert IncludeRoot(str(root)).read("docs/app.py") == b"app = 1\n"


def test_a_file_over_the_size_limit_is_not_read(root: Path) -> None:
    (root / "big.txt").write_bytes(b"x" * (includes.MAX_INCLUDE_BYTES + 1))

    assert IncludeRoot(str(root)).read("big.txt") is None


def test_a_document_reads_a_bounded_number_of_includes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(includes, "MAX_INCLUDES", 2)
    read = IncludeRoot(str(root)).for_document("page.md")

    assert [read("docs_src/app.py") for _ in range(3)] == [b"app = 1\n", b"app = 1\n", None]


def test_every_key_looked_up_is_recorded_with_what_it_gave(root: Path) -> None:
    read = IncludeRoot(str(root)).for_document("docs/en/docs/page.md")
    read("../../docs_src/app.py")

    assert read.digests() == (
        ("docs/docs_src/app.py", ""),
        ("docs_src/app.py", include_digest(b"app = 1\n")),
    )
