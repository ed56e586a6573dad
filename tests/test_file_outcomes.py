"""What reading a listed file does to its document, decided without any store."""

from __future__ import annotations

from ragd.errors import DocumentError
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.file_outcomes import FileOutcome, file_outcome, known_hash, stat_unchanged
from ragd.indexing.pipeline import Pipeline
from ragd.indexing.preparing import Prepared, prepare
from ragd.sources.folders import FileContent
from ragd.stores.records import DocumentRecord, content_hash, doc_id_of

PIPELINE = Pipeline(ChunkSettings(300, 40), "fake-model")
BODY = b"# Install\n\nRun the installer, then restart the shell.\n"
ENTRY = ("guide/install.md", len(BODY), 1_700_000_000_000_000_000)
URI = "file:///docs/guide/install.md"
# Checked long after the file's mtime, so its stat may stand for its content.
CHECKED_AT = "2026-11-30T10:00:00Z"


def indexed(data: bytes = BODY, **changes: object) -> DocumentRecord:
    record = DocumentRecord(
        doc_id=doc_id_of("docs", "guide/install.md"),
        source="docs",
        key=ENTRY[0],
        uri=URI,
        title="Install",
        size=len(data),
        mtime_ns=ENTRY[2],
        content_hash=content_hash(data),
        fingerprint=PIPELINE.fingerprint,
        status="indexed",
        error=None,
        first_seen_at=CHECKED_AT,
        indexed_at=CHECKED_AT,
        checked_at=CHECKED_AT,
        chunk_count=1,
    )
    return record._replace(**changes)  # type: ignore[arg-type]


def read(data: bytes = BODY, *, known: str | None = None) -> Prepared:
    file = (ENTRY[0], f"docs:{ENTRY[0]}", known, len(data))
    return prepare(file, PIPELINE, lambda key: FileContent(data, len(data), 42))


def unreadable(key: str) -> FileContent:
    raise DocumentError(f"{key}: permission denied")


def outcome(
    record: DocumentRecord | None, prepared: Prepared, *, full: bool = False
) -> FileOutcome:
    return file_outcome(
        "docs",
        URI,
        ENTRY,
        record,
        prepared,
        fingerprint=PIPELINE.fingerprint,
        full=full,
    )


def test_a_new_file_is_added_with_its_chunks_to_embed() -> None:
    result = outcome(None, read())

    assert result.kind == "added"
    assert result.write is not None and result.write.status == "indexed"
    assert result.write.doc_id == "docs:guide/install.md" and result.write.uri == URI
    assert (result.write.size, result.write.mtime_ns) == (len(BODY), 42)  # the read's stat
    assert len(result.write.chunks) >= 1
    assert "restart the shell" in result.write.chunks[0].embed_text


def test_the_same_bytes_under_the_same_recipe_are_unchanged_and_write_nothing() -> None:
    record = indexed()
    result = outcome(record, read(known=known_hash(record, PIPELINE.fingerprint, full=False)))

    assert (result.kind, result.write) == ("unchanged", None)
    assert (result.size, result.mtime_ns) == (len(BODY), 42)  # confirmed as read


def test_a_full_pass_rewrites_an_unchanged_file() -> None:
    result = outcome(indexed(), read(), full=True)

    assert result.kind == "unchanged"
    assert result.write is not None and result.write.chunks


def test_new_bytes_change_the_document() -> None:
    result = outcome(indexed(), read(BODY + b"\nAlso set PATH.\n"))

    assert result.kind == "changed"
    assert result.write is not None and "PATH" in " ".join(
        c.embed_text for c in result.write.chunks
    )


def test_a_new_pipeline_fingerprint_changes_the_same_bytes() -> None:
    result = outcome(indexed(fingerprint="an older recipe"), read())

    assert result.kind == "changed"


def test_an_unreadable_file_fails_with_the_listed_stat_and_no_hash() -> None:
    prepared = prepare((ENTRY[0], f"docs:{ENTRY[0]}", None, 0), PIPELINE, unreadable)
    result = outcome(indexed(), prepared)

    assert result.kind == "failed"
    assert result.write is not None and result.write.status == "failed"
    assert result.write.error is not None and "permission denied" in result.write.error
    assert (result.write.size, result.write.mtime_ns) == (ENTRY[1], ENTRY[2])
    assert result.write.content_hash is None


def test_content_that_cannot_be_parsed_fails_with_its_hash() -> None:
    data = b"\xff\xfe\x00binary"
    result = outcome(None, read(data))

    assert result.kind == "failed"
    assert result.write is not None and result.write.content_hash == content_hash(data)
    assert result.write.error


def test_only_a_settled_same_recipe_record_offers_a_known_hash() -> None:
    fingerprint = PIPELINE.fingerprint

    assert known_hash(indexed(), fingerprint, full=False) == content_hash(BODY)
    assert known_hash(indexed(), fingerprint, full=True) is None
    assert known_hash(indexed(status="pending"), fingerprint, full=False) is None
    assert known_hash(indexed(fingerprint="older"), fingerprint, full=False) is None
    assert known_hash(None, fingerprint, full=False) is None


def test_a_stat_stands_for_the_content_only_when_it_matches_and_vouches() -> None:
    fingerprint = PIPELINE.fingerprint
    racy = indexed(checked_at="2023-11-14T22:13:30Z")  # checked within a minute of the mtime

    assert stat_unchanged(indexed(), ENTRY, fingerprint) is True
    assert stat_unchanged(indexed(), (ENTRY[0], ENTRY[1] + 1, ENTRY[2]), fingerprint) is False
    assert stat_unchanged(racy, ENTRY, fingerprint) is False
