"""The status page's HTML, rendered from a status report: what it shows, and that nothing
a document provides can become markup."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

from ragd.service.http.page import AGE_LABELS, MAX_LISTED, render_status_page
from ragd.stores.records import format_time

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


def source(name: str = "docs", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "type": "folder",
        "documents": 3,
        "chunks": 9,
        "failed": 0,
        "stale": 0,
        "stale_by_reason": {},
        "last_indexed_at": format_time(NOW - timedelta(minutes=3)),
        "failed_documents": [],
        "warned_documents": [],
        "stale_documents": [],
        "second_stage": None,
        "unreachable": None,
    }
    return base | changes


def report(*sources: dict[str, Any], **changes: Any) -> dict[str, Any]:
    chosen = list(sources) or [source()]
    base: dict[str, Any] = {
        "generated_at": format_time(NOW),
        "stores_agree": True,
        "stores": {"agree": True, "manifest_chunks": 9, "lancedb_chunks": 9, "tantivy_chunks": 9},
        "documents": sum(s["documents"] for s in chosen),
        "stale": sum(s["stale"] for s in chosen),
        "failed": sum(s["failed"] for s in chosen),
        "index_lag_seconds": 0.0,
        "sources": chosen,
    }
    return base | changes


def page(data: dict[str, Any], **extra: Any) -> str:
    return render_status_page(
        data,
        extra.get("freshness", {}),
        extra.get("events", []),
        extra.get("documents", {}),
        NOW,
    )


class Elements(HTMLParser):
    """The start tags of a page, as a browser's parser finds them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_every_source_is_a_row_with_its_counts() -> None:
    text = page(report(source("docs"), source("blog", type="sitemap", documents=12)))

    assert "<b>docs</b>" in text and "<b>blog</b>" in text
    assert "<td class=n>12</td>" in text


def test_a_folder_row_counts_what_its_last_scan_skipped() -> None:
    skipped = {"symlinks": 2, "special": 0, "non_utf8_names": 1, "files": []}

    text = page(report(source(skipped=skipped)))

    assert "<br>skipped: 2 symlinks, 1 file name not valid UTF-8</td>" in text


def test_a_trustworthy_index_reads_ok_and_a_stale_one_attention() -> None:
    stale = source(stale=1, stale_by_reason={"source_changed": 1})

    assert "<title>ragd: OK</title>" in page(report())
    assert "<title>ragd: ATTENTION</title>" in page(report(stale))


def test_a_hostile_title_path_reason_and_source_name_stay_text() -> None:
    hostile = source(
        name=HOSTILE,
        stale=1,
        stale_by_reason={HOSTILE: 1},
        stale_documents=[{"path": HOSTILE, "reasons": [HOSTILE], "indexed_at": None}],
        failed=1,
        failed_documents=[{"path": HOSTILE, "error": HOSTILE}],
        warned_documents=[{"path": HOSTILE, "warning": HOSTILE}],
        unreachable=HOSTILE,
    )
    events = [(format_time(NOW), "failed", HOSTILE, HOSTILE)]
    documents = {HOSTILE: (HOSTILE, HOSTILE)}

    text = page(
        report(hostile), events=events, documents=documents, freshness={HOSTILE: [1, 0, 0, 0, 0]}
    )
    tags = {tag for tag, _ in Elements(text).tags}

    assert "script" not in tags and "img" not in tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_document_links_to_its_uri_only_when_it_is_http() -> None:
    stale = [
        {"path": "a.md", "reasons": ["max_age"], "indexed_at": None},
        {"path": "b.md", "reasons": ["max_age"], "indexed_at": None},
    ]
    documents = {
        "docs:a.md": ("https://docs.example.com/a", "A"),
        "docs:b.md": ("javascript:alert(1)", "B"),
    }

    text = page(report(source(stale=2, stale_documents=stale)), documents=documents)
    links = [attrs.get("href") for tag, attrs in Elements(text).tags if tag == "a"]

    assert "https://docs.example.com/a" in links
    assert not any(link and link.startswith("javascript") for link in links)


def test_only_the_first_100_stale_documents_are_listed_with_the_total() -> None:
    stale = [{"path": f"p{n}.md", "reasons": ["max_age"], "indexed_at": None} for n in range(250)]

    text = page(report(source(stale=250, stale_documents=stale)))

    assert text.count("<td>max_age</td>") == MAX_LISTED
    assert f"First {MAX_LISTED} of 250." in text


def test_the_freshness_chart_draws_a_bar_per_age_with_its_count() -> None:
    text = page(report(), freshness={"docs": [5, 0, 2, 0, 1]})
    chart = re.search(r"<svg.*?</svg>", text, re.S)

    assert chart is not None
    assert chart.group(0).count("<rect") == len(AGE_LABELS)
    assert "5 documents: &lt; 1 h" in chart.group(0)
    assert "1 documents: &gt; 30 d" in chart.group(0)


def test_the_page_refreshes_itself_without_script() -> None:
    tags = Elements(page(report())).tags

    assert ("meta", {"http-equiv": "refresh", "content": "15"}) in tags
    assert all(tag != "script" for tag, _ in tags)


def test_recent_events_are_listed_newest_first_with_relative_times() -> None:
    events = [
        (format_time(NOW - timedelta(seconds=30)), "indexed", "docs:new.md", None),
        (format_time(NOW - timedelta(hours=2)), "failed", "docs:old.md", "binary file"),
    ]

    text = page(report(), events=events)

    assert text.index("docs:new.md") < text.index("docs:old.md")
    assert "30 s ago" in text and "2 h ago" in text and "binary file" in text
