"""What `ragd` prints for people: ages instead of timestamps, abstentions in words, skipped
files, the stale list, and the one-line verdict of `ragd status --check`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ragd.cli.text import query_text, stale_text, status_text, verdict
from ragd.search.ages import relative_time
from ragd.search.results import Hit, SearchResponse
from ragd.stores.records import ChunkRecord, DocumentRecord, doc_id_of

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
GENERATED = "2026-12-02T12:00:00.000000Z"


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        ("2026-12-02T11:59:59.400000Z", "just now"),
        ("2026-12-02T11:59:18.000000Z", "42 s ago"),
        ("2026-12-02T11:57:00.000000Z", "3 min ago"),
        ("2026-12-02T11:00:00.500000Z", "59 min ago"),
        ("2026-12-02T09:30:00.000000Z", "2 h ago"),
        ("2026-11-27T12:00:00.000000Z", "5 d ago"),
    ],
)
def test_relative_time_counts_whole_units_back_from_now(moment: str, text: str) -> None:
    assert relative_time(moment, NOW) == text


def test_relative_time_of_a_time_to_come_says_in() -> None:
    assert relative_time("2026-12-02T12:57:00.000000Z", NOW) == "in 57 min"


def test_relative_time_of_no_time_is_never() -> None:
    assert relative_time(None, NOW) == "never"


def _source(name: str = "docs", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "documents": 2,
        "chunks": 7,
        "failed": 0,
        "warnings": 0,
        "empty": 0,
        "stale": 0,
        "last_indexed_at": "2026-12-02T11:57:00.000000Z",
        "failed_documents": [],
        "warned_documents": [],
        "empty_documents": [],
        "stale_by_reason": {},
        "stale_documents": [],
        "skipped": {"symlinks": 0, "special": 0, "files": []},
        **fields,
    }


def _report(*sources: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "generated_at": GENERATED,
        "stores_agree": True,
        "stores": {"agree": True, "manifest_chunks": 7, "lancedb_chunks": 7, "tantivy_chunks": 7},
        "last_full_scan_at": "2026-12-02T10:00:00.000000Z",
        "queue_depth": 0,
        "index_lag_seconds": 0.0,
        "documents": sum(s["documents"] for s in sources),
        "stale": sum(s["stale"] for s in sources),
        "failed": sum(s["failed"] for s in sources),
        "sources": list(sources),
        **fields,
    }


def _daemon(**fields: Any) -> dict[str, Any]:
    return {
        "pid": 4321,
        "state": "ok",
        "uptime_seconds": 90.0,
        "queue_depth": 0,
        "lancedb_versions": 3,
        "writer_alive": True,
        "watcher": {"watching": True, "overflows": 0, "unwatched_roots": []},
        "next_jobs": {"rescan": "2026-12-02T12:57:00.000000Z"},
        "polls": {},
        **fields,
    }


def test_status_text_gives_ages_counted_to_when_the_report_was_made() -> None:
    text = status_text(_report(_source(), daemon=_daemon()))

    assert text.splitlines()[1].split()[-3:] == ["3", "min", "ago"]
    assert "last full scan: 2 h ago" in text
    assert "next jobs: rescan in 57 min" in text
    assert "2026-12-02T" not in text


def test_status_text_names_each_job_the_writer_gave_up_newest_first_with_its_reason() -> None:
    dropped = [
        {"at": "2026-12-02T11:50:00.000000Z", "kind": "compact", "source": "", "key": "",
         "reason": "failed 5 times: OSError: disk full"},
        {"at": "2026-12-02T11:58:00.000000Z", "kind": "tree", "source": "docs", "key": "api",
         "reason": "failed 5 times: OSError: I/O error"},
    ]  # fmt: skip

    text = status_text(_report(_source(), daemon=_daemon(writer={"dropped_jobs": dropped})))

    assert [line for line in text.splitlines() if line.startswith("writer gave up")] == [
        "writer gave up tree docs:api 2 min ago: failed 5 times: OSError: I/O error",
        "writer gave up compact 10 min ago: failed 5 times: OSError: disk full",
    ]


def test_status_text_counts_skipped_symlinks_and_special_files_and_names_the_first() -> None:
    listed = [{"path": "guide.md", "kind": "symlink"}, {"path": "pipe.md", "kind": "fifo"}]
    skipped = {"symlinks": 4, "special": 1, "files": listed}

    lines = status_text(_report(_source(skipped=skipped))).splitlines()

    assert [line for line in lines if line.startswith("skipped")] == [
        "skipped docs: 4 symlinks (not followed) and 1 special file "
        "(FIFO, socket or device: not read)",
        "skipped docs:guide.md: symlink",
        "skipped docs:pipe.md: fifo",
        "skipped docs: … and 3 more",
    ]


def test_status_text_counts_file_names_that_are_not_utf8_and_names_them_escaped() -> None:
    listed = [{"path": "caf\\xe9.md", "kind": "non-utf8-name"}]
    skipped = {"symlinks": 0, "special": 0, "non_utf8_names": 1, "files": listed}

    lines = status_text(_report(_source(skipped=skipped))).splitlines()

    assert [line for line in lines if line.startswith("skipped")] == [
        "skipped docs: 1 file name (not valid UTF-8: cannot be a document; rename it)",
        "skipped docs:caf\\xe9.md: non-utf8-name",
    ]


def test_status_text_says_nothing_of_skipped_files_when_a_scan_skipped_none() -> None:
    assert "skipped" not in status_text(_report(_source()))


def test_stale_list_says_there_are_no_stale_documents_when_there_are_none() -> None:
    assert stale_text(_report(_source(), _source("blog"))) == "no stale documents"


def test_stale_list_gives_each_stale_document_its_reasons_and_age() -> None:
    stale = [
        {"path": "a.md", "reasons": ["source_changed"], "indexed_at": "2026-12-02T11:57:00Z"},
        {"path": "b.md", "reasons": ["pending", "max_age"], "indexed_at": None},
    ]

    text = stale_text(_report(_source(stale=2, stale_documents=stale)))

    assert text.splitlines() == [
        "docs:a.md\tsource_changed\tindexed 3 min ago",
        "docs:b.md\tpending,max_age\tnever indexed",
    ]


def test_stale_list_says_how_many_stale_documents_the_report_did_not_name() -> None:
    stale = [{"path": "a.md", "reasons": ["max_age"], "indexed_at": "2026-12-02T11:57:00Z"}]

    text = stale_text(_report(_source(stale=250, stale_documents=stale)))

    assert text.splitlines() == [
        "docs:a.md\tmax_age\tindexed 3 min ago",
        "stale docs: 249 more not listed",
    ]


def test_status_text_says_how_many_failed_documents_the_report_did_not_name() -> None:
    failed = [{"path": "a.md", "error": "not UTF-8"}]

    text = status_text(_report(_source(failed=3, failed_documents=failed)))

    assert "failed  docs:a.md: not UTF-8" in text.splitlines()
    assert "failed  docs: 2 more not listed" in text.splitlines()


def _hit(rank: int, indexed_at: str | None = "2026-12-02T11:57:00.000000Z") -> Hit:
    document = DocumentRecord(
        doc_id=doc_id_of("docs", "guide.md"),
        source="docs",
        key="guide.md",
        uri="file:///srv/docs/guide.md",
        title="Guide",
        size=10,
        mtime_ns=1,
        content_hash="h",
        fingerprint="f",
        status="indexed",
        error=None,
        first_seen_at="2026-12-01T00:00:00.000000Z",
        indexed_at=indexed_at,
        checked_at=None,
    )
    chunk = ChunkRecord(f"c{rank}", document.doc_id, rank, ("Guide", "Install"), "Run it.", "e")
    return Hit(rank, chunk, document, 1.0 / rank, rank, None, ())


def test_query_text_opens_with_the_abstention_in_words() -> None:
    response = SearchResponse("sourdough bread", "hybrid", [_hit(1), _hit(2)], abstained=True)

    lines = query_text(response.to_json(), NOW).splitlines()

    assert lines[0].startswith("No confident answer (abstained): the documents may not answer")
    assert lines[1] == " 1. Guide › Install"


def test_query_text_without_an_abstention_starts_with_the_first_hit() -> None:
    response = SearchResponse("install", "hybrid", [_hit(1)])

    assert query_text(response.to_json(), NOW).splitlines()[0] == " 1. Guide › Install"


def test_query_text_says_how_long_ago_each_hit_was_indexed() -> None:
    text = query_text(SearchResponse("install", "hybrid", [_hit(1)]).to_json(), NOW)

    assert text.splitlines()[1].endswith("indexed 3 min ago")


def test_query_text_names_the_page_of_a_pdf_hit() -> None:
    hit = _hit(1)
    on_page = Hit(1, hit.chunk._replace(page=7), hit.document, 1.0, 1, None, ())

    text = query_text(SearchResponse("install", "hybrid", [on_page]).to_json(), NOW)

    assert text.splitlines()[1].startswith("    docs:guide.md (page 7)  score")


def test_status_text_names_each_document_read_with_a_warning() -> None:
    warned = [{"path": "broken.mdx", "warning": "read as Markdown: malformed MDX (x)"}]

    lines = status_text(_report(_source(warned_documents=warned))).splitlines()

    assert "warning docs:broken.mdx: read as Markdown: malformed MDX (x)" in lines


def test_query_text_with_every_hit_excluded_as_stale_says_how_many() -> None:
    response = SearchResponse("install", "hybrid", [], abstained=True, excluded_stale=3)

    assert query_text(response.to_json(), NOW).splitlines() == [
        "No results for 'install'.",
        "(3 stale hits excluded; without --exclude-stale they show, flagged STALE)",
    ]


def test_check_without_a_daemon_judges_the_index_alone() -> None:
    assert verdict(_report(_source())) == (
        0,
        "RAGD OK - 2 documents, 0 stale, 0 failed, stores agree",
    )


def test_check_with_a_healthy_daemon_says_so() -> None:
    code, line = verdict(_report(_source(), daemon=_daemon()))

    assert (code, line) == (0, "RAGD OK - 2 documents, 0 stale, 0 failed, stores agree, daemon ok")


def test_check_is_critical_when_the_daemons_writer_is_not_alive() -> None:
    code, line = verdict(_report(_source(), daemon=_daemon(writer_alive=False)))

    assert code == 1
    assert line.startswith("RAGD CRITICAL - ") and line.endswith("daemon writer NOT ALIVE")


@pytest.mark.parametrize(
    ("watcher", "problem"),
    [
        (
            {"watching": True, "overflows": 0, "unwatched_roots": ["/srv/docs"]},
            "daemon watcher degraded: not watching /srv/docs",
        ),
        (
            {"watching": False, "overflows": 0, "unwatched_roots": []},
            "daemon watcher NOT WATCHING",
        ),
    ],
)
def test_check_is_critical_when_the_daemons_watcher_is_degraded(
    watcher: dict[str, Any], problem: str
) -> None:
    code, line = verdict(_report(_source(), daemon=_daemon(watcher=watcher)))

    assert code == 1
    assert line.startswith("RAGD CRITICAL - ") and line.endswith(problem)


def test_check_counts_a_health_key_an_older_daemon_does_not_send_as_fine() -> None:
    daemon = _daemon()
    del daemon["writer_alive"]

    assert verdict(_report(_source(), daemon=daemon))[0] == 0
