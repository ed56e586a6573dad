"""Manifest.commit: what settling a batch of document writes leaves in state.db."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragd.stores.manifest import Manifest
from ragd.stores.records import ChunkRecord, DocId, DocumentWrite, utc_now


@pytest.fixture
def manifest(tmp_path: Path) -> Iterator[Manifest]:
    opened = Manifest.open(tmp_path / "state.db")
    yield opened
    opened.close()


def _indexed(doc_id: str, *texts: str) -> DocumentWrite[ChunkRecord]:
    chunks = tuple(
        ChunkRecord(f"{doc_id}#{n}", doc_id, n, ("Guide",), text, f"key-{text}")
        for n, text in enumerate(texts)
    )
    source, key = doc_id.split(":")
    return DocumentWrite(
        DocId(doc_id),
        source,
        key,
        f"file:///{key}",
        "indexed",
        "Guide",
        10,
        1,
        "h1",
        "fp",
        None,
        chunks,
    )


def test_a_document_written_again_keeps_when_it_was_first_seen(manifest: Manifest) -> None:
    manifest.commit([_indexed("docs:a.md", "one")], checked_at=utc_now())
    first = manifest.document("docs:a.md")

    manifest.commit([_indexed("docs:a.md", "two", "three")], checked_at=utc_now())
    again = manifest.document("docs:a.md")

    assert first is not None and again is not None
    assert again.first_seen_at == first.first_seen_at
    assert again.indexed_at is not None and again.indexed_at > (first.indexed_at or "")
    assert [c.text for c in manifest.chunks_of("docs:a.md")] == ["two", "three"]


def test_a_failed_write_keeps_the_time_of_the_last_good_index(manifest: Manifest) -> None:
    manifest.commit([_indexed("docs:a.md", "one")], checked_at=utc_now())
    indexed_at = manifest.document("docs:a.md").indexed_at  # type: ignore[union-attr]

    failed = replace(_indexed("docs:a.md"), status="failed", error="cannot be parsed")
    manifest.commit([failed], checked_at=utc_now())

    record = manifest.document("docs:a.md")
    assert record is not None
    assert (record.status, record.error) == ("failed", "cannot be parsed")
    assert record.indexed_at == indexed_at
    assert manifest.chunks_of("docs:a.md") == []


def test_a_deleted_write_removes_the_document_and_its_chunks_only(manifest: Manifest) -> None:
    manifest.commit(
        [_indexed("docs:a.md", "one"), _indexed("docs:b.md", "two")], checked_at=utc_now()
    )

    manifest.commit([replace(_indexed("docs:a.md"), status="deleted")], checked_at=utc_now())

    assert manifest.document("docs:a.md") is None
    assert manifest.chunk_ids() == {"docs:b.md#0"}


def test_a_document_written_twice_in_one_commit_is_refused(manifest: Manifest) -> None:
    with pytest.raises(ValueError, match="once per call"):
        manifest.commit(
            [_indexed("docs:a.md", "one"), _indexed("docs:a.md", "two")], checked_at=utc_now()
        )

    assert manifest.document("docs:a.md") is None
