"""Listing and reading folder sources."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.errors import DocumentError, SourceError
from ragd.sources.folders import FolderSource, Listing, shown_key


def _source(root: Path, **kwargs: object) -> FolderSource:
    include = kwargs.pop("include", ("**/*.md",))
    return FolderSource("docs", root, include, **kwargs)  # type: ignore[arg-type]


def test_listing_selects_by_include_and_exclude_with_posix_keys(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "top.md").write_text("x")
    (tmp_path / "a" / "b" / "deep.md").write_text("x")
    (tmp_path / "a" / "notes.txt").write_text("x")
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "wip.md").write_text("x")

    listing = _source(tmp_path, exclude=("drafts/",)).scan()

    assert [f[0] for f in listing.files] == ["a/b/deep.md", "top.md"]


_TREE_NAMES = ("a", ".hidden", "node_modules", "docs", "x.md")
_EXCLUDES = (
    "docs/",
    ".*/",
    "node_modules/",
    "*.md",
    "a/x.md",
    "!docs/",
    "!a/x.md",
    "docs/*.md",
    "**/x.md/",
    "a/**",
    "x.md",
    ".hidden",
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directories two deep named from _TREE_NAMES, each holding x.md, y.txt and .z.md."""
    root = tmp_path_factory.mktemp("tree")
    dirs = (
        [root]
        + [root / a for a in _TREE_NAMES]
        + [root / a / b for a in _TREE_NAMES for b in _TREE_NAMES]
    )
    for directory in dirs:
        directory.mkdir(exist_ok=True)
    for directory in dirs:
        for name in ("x.md", "y.txt", ".z.md"):
            if not (directory / name).exists():
                (directory / name).write_text("x")
    return root


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(_EXCLUDES), max_size=4))
def test_a_scan_lists_the_selected_files_below_directories_not_excluded(
    tree: Path, exclude: list[str]
) -> None:
    source = _source(tree, include=("**/*.md", "*.txt"), exclude=tuple(exclude))
    expected = []
    for directory, _, names in os.walk(tree):
        rel = Path(directory).relative_to(tree).as_posix()
        parts = [] if rel == "." else rel.split("/")
        if any(source.excludes_dir("/".join(parts[: n + 1])) for n in range(len(parts))):
            continue
        expected += [k for k in ("/".join([*parts, n]) for n in names) if source.selects(k)]

    assert [f[0] for f in source.scan().files] == sorted(expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_EXCLUDES), max_size=4))
def test_a_file_or_a_subtree_is_selected_exactly_when_a_scan_from_the_root_lists_it(
    tree: Path, exclude: list[str]
) -> None:
    """What a watcher hint checks (one key, one directory) agrees with the full scan."""
    source = _source(tree, include=("**/*.md", "*.txt"), exclude=tuple(exclude))
    listed = [f[0] for f in source.scan().files]
    for directory, _, names in os.walk(tree):
        rel = Path(directory).relative_to(tree).as_posix()
        base = "" if rel == "." else rel + "/"
        for key in (base + name for name in names):
            assert source.selects(key) == (key in listed), key
        if base:
            below = [k for k in listed if k.startswith(base)]
            assert [f[0] for f in source.scan(rel).files] == below, rel


def test_a_negation_below_an_excluded_directory_re_includes_nothing(tmp_path: Path) -> None:
    (tmp_path / "docs" / "a").mkdir(parents=True)
    (tmp_path / "docs" / "a" / "x.md").write_text("x")
    source = _source(tmp_path, exclude=("docs/", "!docs/a/"))  # as git reads it too

    assert source.scan().files == []
    assert source.scan("docs/a").files == []
    assert not source.selects("docs/a/x.md")
    assert not source.descends("docs/a")


def test_symlinks_to_files_and_directories_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("x")
    (root / "real.md").write_text("x")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "dir").symlink_to(outside)
    (root / "loop").symlink_to(root)

    listing = _source(root).scan()

    assert [f[0] for f in listing.files] == ["real.md"]
    assert sorted(listing.skipped) == [
        ("dir", "symlink"),
        ("link.md", "symlink"),
        ("loop", "symlink"),
    ]
    assert listing.skipped_symlinks == 3


def test_fifos_and_sockets_are_skipped_and_named_by_kind(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.md"))
    try:
        listing = _source(tmp_path).scan()
    finally:
        sock.close()

    assert listing.files == []
    assert sorted(listing.skipped) == [("pipe.md", "fifo"), ("sock.md", "socket")]
    assert listing.skipped_special == 2


def test_skipped_entries_the_patterns_would_not_select_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("x")
    (tmp_path / "logo.png").symlink_to(tmp_path / "real.md")  # not an included name
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "nowhere")
    (tmp_path / "drafts").symlink_to(tmp_path)  # a directory the scan would not enter
    os.mkfifo(tmp_path / "pipe.txt")

    listing = _source(tmp_path, exclude=("drafts/",)).scan()

    assert listing.skipped == []


def test_files_whose_names_are_not_utf8_are_skipped_and_shown_escaped(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    os.mkdir(os.path.join(root, b"d\xe9"))
    for name in (b"caf\xe9.md", b"d\xe9/menu.md", b"logo\xff.png"):  # the .png is not selected
        with open(os.path.join(root, name), "wb") as file:
            file.write(b"x")
    (tmp_path / "real.md").write_text("x")

    listing = _source(tmp_path).scan()

    assert [f[0] for f in listing.files] == ["real.md"]
    assert sorted(listing.skipped) == [
        ("caf\\xe9.md", "non-utf8-name"),
        ("d\\xe9/menu.md", "non-utf8-name"),
    ]
    assert listing.skipped_names == ["caf\\xe9.md", "d\\xe9/menu.md"]
    assert listing.skipped_special == 0


def test_a_shown_key_is_the_key_unless_its_name_is_not_utf8() -> None:
    assert shown_key("café/guide.md") == "café/guide.md"
    assert shown_key(os.fsdecode(b"caf\xe9.md")) == "caf\\xe9.md"
    assert shown_key("lone\ud800.md") == "lone\\ud800.md"  # no file name decodes to one


def test_reading_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")

    with pytest.raises(DocumentError, match="not a regular file"):
        _source(tmp_path).read("pipe.md")


def test_reading_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "target.md").write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "target.md")

    with pytest.raises(DocumentError):
        _source(tmp_path).read("link.md")


def test_a_file_over_the_size_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 5000)

    with pytest.raises(DocumentError, match="5000 bytes; the limit is 4096"):
        _source(tmp_path, max_file_bytes=4096).read("big.md")


@pytest.mark.parametrize("size", [0, 1, 4095, 300_000])
def test_a_file_is_read_whole_with_the_stat_of_what_was_read(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "a.md").write_bytes(data)

    content = _source(tmp_path).read("a.md")

    assert content.data == data and content.size == size


def _stat_claiming(size: int) -> object:
    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((*st[:6], size, *st[7:]))

    return fstat


def test_a_file_that_grew_after_its_stat_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(200_000)
    (tmp_path / "a.md").write_bytes(data)
    monkeypatch.setattr(os, "fstat", _stat_claiming(10))

    assert _source(tmp_path).read("a.md").data == data


def test_a_file_that_grew_past_the_limit_after_its_stat_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_bytes(b"x" * 5000)
    monkeypatch.setattr(os, "fstat", _stat_claiming(10))

    with pytest.raises(DocumentError, match="grew past the limit of 4096"):
        _source(tmp_path, max_file_bytes=4096).read("a.md")


def test_a_vanished_file_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="vanished"):
        _source(tmp_path).read("gone.md")


def test_a_missing_root_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot open root"):
        _source(tmp_path / "nope").scan()


def test_a_listing_does_not_vouch_for_keys_under_unreadable_directories() -> None:
    listing = Listing(unreadable_dirs=["locked"])

    assert not listing.covers("locked/a.md")
    assert listing.covers("lockedout.md")
    assert listing.covers("open/a.md")


def test_uri_is_a_file_url_of_the_path(tmp_path: Path) -> None:
    for key in ("a b/c.md", "100%/é #?.md", "x;y=[z]~!.md"):
        assert _source(tmp_path).uri_for(key) == (tmp_path / key).as_uri()
    assert _source(Path("/")).uri_for("a b.md") == "file:///a%20b.md"
