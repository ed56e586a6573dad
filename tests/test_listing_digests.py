"""Listing digests: the manifest's one-value summary of a source in which nothing changed."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ragd.stores.manifest import Manifest
from ragd.stores.records import ChunkRecord, DocId, DocumentWrite, listing_digest, utc_now

LONG_AGO = 1_600_000_000 * 10**9  # an mtime in 2020: its stat vouches for it


@pytest.fixture
def manifest(tmp_path: Path) -> Iterator[Manifest]:
    opened = Manifest.open(tmp_path / "state.db")
    yield opened
    opened.close()


def _settled(doc_id: str, size: int = 10, mtime_ns: int = LONG_AGO) -> DocumentWrite[ChunkRecord]:
    source, key = doc_id.split(":")
    return DocumentWrite(
        DocId(doc_id), source, key, f"file:///{key}", "indexed", "Guide", size, mtime_ns, "h", "fp"
    )


def _remembered(manifest: Manifest, *writes: DocumentWrite[ChunkRecord]) -> None:
    manifest.commit(list(writes), checked_at=utc_now())
    for source in {w.source for w in writes}:
        assert manifest.remember_unchanged_listing(source, "fp")


def test_the_remembered_digest_is_that_of_the_listing_of_every_documents_stat(
    manifest: Manifest,
) -> None:
    _remembered(manifest, _settled("docs:b.md", 20), _settled("docs:a.md", 10))

    assert manifest.unchanged_listing("docs", "fp") == listing_digest(
        [("a.md", 10, LONG_AGO), ("b.md", 20, LONG_AGO)]
    )


def test_no_digest_is_remembered_while_a_stat_cannot_vouch_for_its_document(
    manifest: Manifest,
) -> None:
    just_written = _settled("docs:b.md", mtime_ns=LONG_AGO * 2)  # in 2070: racily clean
    manifest.commit([_settled("docs:a.md"), just_written], checked_at=utc_now())

    assert not manifest.remember_unchanged_listing("docs", "fp")
    assert manifest.unchanged_listing("docs", "fp") is None


def test_a_digest_holds_only_for_the_pipeline_it_was_remembered_under(
    manifest: Manifest,
) -> None:
    _remembered(manifest, _settled("docs:a.md"))

    assert manifest.unchanged_listing("docs", "another fingerprint") is None


CHANGES: dict[str, Callable[[Manifest], None]] = {
    "a new document": lambda m: m.commit([_settled("docs:c.md")], checked_at=utc_now()),
    "a rewrite": lambda m: m.commit([_settled("docs:a.md", 11)], checked_at=utc_now()),
    "a deletion": lambda m: m.commit(
        [replace(_settled("docs:a.md"), status="deleted")], checked_at=utc_now()
    ),
    "a confirmed stat": lambda m: m.confirm_unchanged(
        [("docs:a.md", 10, LONG_AGO + 1)], checked_at=utc_now()
    ),
    "a pending write": lambda m: m.mark_pending(
        [("docs:a.md", "docs", "a.md", "file:///a.md", "pending")]
    ),
    "a redo": lambda m: m.mark_for_redo(["docs:a.md"]),
}


@pytest.mark.parametrize("change", CHANGES)
def test_any_change_to_a_document_forgets_the_digest_of_its_source_alone(
    manifest: Manifest, change: str
) -> None:
    _remembered(manifest, _settled("docs:a.md"), _settled("docs:b.md"), _settled("wiki:a.md"))
    wiki = manifest.unchanged_listing("wiki", "fp")

    CHANGES[change](manifest)

    assert manifest.unchanged_listing("docs", "fp") is None
    assert manifest.unchanged_listing("wiki", "fp") == wiki is not None


def test_a_change_by_another_writer_forgets_the_digest_too(
    manifest: Manifest, tmp_path: Path
) -> None:
    _remembered(manifest, _settled("docs:a.md"), _settled("docs:b.md"))

    # An older ragd, or a repair by hand: SQL that knows nothing of listing digests.
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    other.execute("DELETE FROM documents WHERE doc_id = 'docs:a.md'")
    other.close()

    assert manifest.unchanged_listing("docs", "fp") is None


_keys = st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]), min_size=1)
_listings = st.dictionaries(_keys, st.tuples(st.integers(0, 2**40), st.integers(-(2**70), 2**70)))


@given(_listings, _listings)
@example({"a": (1, 1), "bc": (1, 1)}, {"ab": (1, 1), "c": (1, 1)})  # a key boundary moved
@example({"a": (1, 2)}, {"a": (2, 1)})  # size and mtime swapped
@example({"a": (1, 2), "b": (3, 4)}, {"a": (1, 3), "b": (2, 4)})  # a value moved over
def test_two_listings_have_the_same_digest_exactly_when_they_are_the_same(
    first: dict[str, tuple[int, int]], second: dict[str, tuple[int, int]]
) -> None:
    def listing(files: dict[str, tuple[int, int]]) -> list[tuple[str, int, int]]:
        return [(key, size, mtime) for key, (size, mtime) in sorted(files.items())]

    same = listing_digest(listing(first)) == listing_digest(listing(second))

    assert same == (listing(first) == listing(second))
