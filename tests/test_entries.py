"""What a CMS entry delivery does to its document, decided without any store."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.entries import EntryOutcome, EntryUpdate, entry_outcome
from ragd.indexing.parse_guard import ParseGuard
from ragd.indexing.parsers import ReadInclude
from ragd.indexing.pipeline import Pipeline, ProcessedDocument
from ragd.stores.records import DocumentRecord, content_hash, doc_id_of

PIPELINE = Pipeline(ChunkSettings(300, 40), "fake-model")
BODY = b"# Pricing\n\nPlans start at ten euros a month.\n"


def indexed(data: bytes = BODY, title: str = "Pricing") -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id_of("cms", "pricing"),
        source="cms",
        key="pricing",
        uri="https://cms.example/pricing",
        title=title,
        size=len(data),
        mtime_ns=0,
        content_hash=content_hash(data),
        fingerprint=PIPELINE.fingerprint,
        status="indexed",
        error=None,
        first_seen_at="2026-11-30T10:00:00Z",
        indexed_at="2026-11-30T10:00:00Z",
        checked_at="2026-11-30T10:00:00Z",
        chunk_count=1,
    )


def outcome(
    update: EntryUpdate, record: DocumentRecord | None, applied: str | None = None
) -> EntryOutcome:
    return entry_outcome(
        "cms",
        update,
        record,
        applied_version=applied,
        pipeline=PIPELINE,
    )


UPDATE = EntryUpdate(key="pricing", uri="https://cms.example/pricing", data=BODY, version="2")


def test_a_new_entry_is_added_with_its_chunks_to_embed() -> None:
    result = outcome(UPDATE, None)

    assert result.kind == "added"
    assert result.write is not None and result.write.status == "indexed"
    assert result.write.title == "Pricing"
    assert result.write.entry_version == "2"
    assert len(result.write.chunks) >= 1
    assert "ten euros" in result.write.chunks[0].embed_text


def test_a_delivery_older_than_the_applied_one_is_ignored() -> None:
    assert outcome(replace(UPDATE, version="1"), indexed(), applied="2").kind == "ignored"


def test_a_delete_older_than_the_applied_update_is_ignored() -> None:
    # A reconcile's delete is dated when it began: a webhook's newer update outlives it.
    delete = replace(UPDATE, deleted=True, data=None, version="1")

    assert outcome(delete, indexed(), applied="2").kind == "ignored"


def test_the_same_content_recipe_and_title_is_unchanged_and_writes_nothing() -> None:
    result = outcome(UPDATE, indexed(), applied="1")

    assert result == EntryOutcome("unchanged", size=len(BODY))


def test_a_new_title_alone_changes_the_document() -> None:
    result = outcome(replace(UPDATE, title="Prices"), indexed())

    assert result.kind == "changed"
    assert result.write is not None and result.write.title == "Prices"


def test_a_delivered_title_labels_every_chunk_as_the_document_is_titled() -> None:
    # The labelled text is rebuilt from the document's title (the keyword index, the
    # second stage), so the chunks must carry the title the document is stored with.
    result = outcome(replace(UPDATE, title="Prices and plans"), None)

    assert result.write is not None and result.write.title == "Prices and plans"
    assert all(c.embed_text.startswith("Prices and plans") for c in result.write.chunks)


def test_deleting_an_unknown_entry_does_nothing_and_a_known_one_is_deleted() -> None:
    gone = replace(UPDATE, deleted=True, data=None)

    assert outcome(gone, None) == EntryOutcome("nothing")
    deleted = outcome(gone, indexed())
    assert deleted.kind == "deleted"
    assert deleted.write is not None and deleted.write.status == "deleted"


def test_a_failed_fetch_records_its_reason() -> None:
    result = outcome(replace(UPDATE, data=None, error="HTTP 503 from the CMS"), indexed())

    assert result.kind == "failed"
    assert result.write is not None and result.write.error == "HTTP 503 from the CMS"


def test_content_that_cannot_be_parsed_is_failed_with_its_hash() -> None:
    binary = b"\x00\x01 not text"
    result = outcome(replace(UPDATE, data=binary), indexed())

    assert result.kind == "failed"
    assert result.write is not None and result.write.content_hash == content_hash(binary)
    assert "binary" in (result.write.error or "")


@dataclass(frozen=True)
class Watching(Pipeline):
    """The test pipeline, recording what the guard file held at each parse."""

    guard_file: Path = Path("parsing")
    seen: list[str] = field(default_factory=list)

    def process(
        self,
        data: bytes,
        filename: str,
        doc_id: str,
        *,
        title: str | None = None,
        read_include: ReadInclude | None = None,
    ) -> ProcessedDocument:
        self.seen.append(self.guard_file.read_text())
        return super().process(data, filename, doc_id, title=title, read_include=read_include)


def watching(tmp_path: Path) -> Watching:
    return Watching(PIPELINE.chunking, "fake-model", guard_file=tmp_path / "parsing")


def guarded(
    tmp_path: Path, pipeline: Pipeline, update: EntryUpdate, record: DocumentRecord | None
) -> EntryOutcome:
    guard = ParseGuard(tmp_path / "parsing")
    return entry_outcome(
        "cms",
        update,
        record,
        applied_version=None,
        pipeline=pipeline,
        guard=guard,
    )


def test_content_that_failed_before_is_unchanged_and_not_parsed_again(tmp_path: Path) -> None:
    failed = indexed()._replace(status="failed", error="the parser crashed", chunk_count=0)
    pipeline = watching(tmp_path)

    again = guarded(tmp_path, pipeline, UPDATE, failed)
    edited = guarded(tmp_path, pipeline, replace(UPDATE, data=BODY + b"\nA yearly plan.\n"), failed)

    assert again == EntryOutcome("unchanged", size=len(BODY))
    assert edited.kind == "changed"
    assert len(pipeline.seen) == 1  # the edit alone


def test_the_parse_of_an_entry_is_named_in_the_guard_while_it_runs(tmp_path: Path) -> None:
    pipeline = watching(tmp_path)

    result = guarded(tmp_path, pipeline, UPDATE, None)

    assert result.kind == "added"
    assert json.loads(pipeline.seen[0])["doc_id"] == "cms:pricing"
    assert json.loads(pipeline.seen[0])["content_hash"] == content_hash(BODY)
    assert ParseGuard(tmp_path / "parsing").leftover() is None


def test_an_entry_whose_processing_raises_is_failed_with_the_error_as_its_reason() -> None:
    poisoned_title = replace(UPDATE, title="Half a pair \ud800")

    result = outcome(poisoned_title, None)

    assert result.kind == "failed"
    assert result.write is not None and result.write.status == "failed"
    assert result.write.error is not None and "UnicodeEncodeError" in result.write.error
    assert result.write.chunks == ()
