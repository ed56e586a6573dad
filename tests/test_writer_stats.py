"""WriterStats: what the writer counts of each document, for the status and the watchdog."""

from __future__ import annotations

from ragd.indexing.batches import DocumentEvent
from ragd.service.daemon.writer import RECENT_EVENTS, WriterStats


def test_every_document_done_beats_the_heart_however_long_its_job() -> None:
    beats: list[None] = []
    stats = WriterStats(heartbeat=lambda: beats.append(None))

    for n in range(3):
        stats.on_document(DocumentEvent("indexed", f"docs:{n}.md"))
    stats.on_document(DocumentEvent("unchanged", "docs:same.md"))

    assert len(beats) == 4


def test_recent_events_keep_the_last_ones_newest_first_without_unchanged_documents() -> None:
    stats = WriterStats()

    for n in range(RECENT_EVENTS + 5):
        stats.on_document(DocumentEvent("indexed", f"docs:{n}.md"))
    stats.on_document(DocumentEvent("unchanged", "docs:same.md"))
    stats.on_document(DocumentEvent("failed", "docs:bad.md", reason="binary file"))

    events = stats.recent_events()
    assert len(events) == RECENT_EVENTS
    assert (events[0].action, events[0].doc_id, events[0].reason) == (
        "failed",
        "docs:bad.md",
        "binary file",
    )
    assert events[1].doc_id == f"docs:{RECENT_EVENTS + 4}.md"


def test_the_status_section_leaves_out_the_feed_and_the_heartbeat() -> None:
    section = WriterStats().to_json()

    assert "recent" not in section and "heartbeat" not in section
    assert section["documents_indexed"] == 0
