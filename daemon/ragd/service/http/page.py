"""The status page of `ragd serve` (`GET /`): whether the index can be trusted, at a glance.

Owns rendering the status report (the JSON of `/v1/status`), a freshness histogram per
source and the writer's recent events as one HTML page: server-rendered, no script, no
request to anywhere but ragd itself, refreshing itself every REFRESH_SECONDS. Every string
that comes from a document or a source (titles, paths, reasons, URIs) is escaped where it
is written; the route adds a Content-Security-Policy that allows no script at all, so a
missed escape still could not run anything. Pure: a mapping in, a string out.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from ragd.search.ages import relative_time
from ragd.sources.deliveries import web_url
from ragd.stores.records import format_time

REFRESH_SECONDS = 15
MAX_LISTED = 100  # stale, failed and warned documents shown, each
# The freshness histogram's buckets: confirmed within each age, newest first.
AGE_EDGES = (timedelta(hours=1), timedelta(days=1), timedelta(days=7), timedelta(days=30))
AGE_LABELS = ("< 1 h", "1 h – 1 d", "1 – 7 d", "7 – 30 d", "> 30 d")
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .4em}
table{border-collapse:collapse}td,th{padding:.2em .7em;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.n{text-align:right}
.ok{color:#11743a;font-weight:600}.bad{color:#b3261e;font-weight:600}
.muted{color:#666}code{font-size:.95em}svg text{font:11px system-ui,sans-serif}
"""


def e(value: object) -> str:
    """Any value as HTML text (quotes escaped too: values also go into attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


class PageReads(Protocol):
    """What the page reads beyond the status report (ragd.service.readers.Readers)."""

    def confirmed_ages(self, thresholds: Sequence[str]) -> dict[str, list[int]]: ...
    def links(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]: ...


def status_page(
    reads: PageReads,
    report: Mapping[str, Any],
    events: Sequence[tuple[str, str, str, str | None]],
    now: datetime,
) -> str:
    """The status page of a status report and the writer's recent events (at, action,
    doc_id, reason): the freshness chart and the listed documents' links are read from
    the manifest."""
    thresholds = [format_time(now - age) for age in AGE_EDGES]
    sources: list[dict[str, Any]] = report["sources"]
    listed = [
        f"{source['name']}:{doc['path']}"
        for source in sources
        for field in ("stale_documents", "failed_documents", "warned_documents")
        for doc in source[field][:MAX_LISTED]
    ] + [event[2] for event in events]
    freshness = reads.confirmed_ages(thresholds)
    return render_status_page(report, freshness, events, reads.links(set(listed)), now)


def render_status_page(
    report: Mapping[str, Any],
    freshness: Mapping[str, Sequence[int]],
    events: Iterable[tuple[str, str, str, str | None]],
    documents: Mapping[str, tuple[str | None, str | None]],
    now: datetime,
) -> str:
    """The page. `report` is the status JSON with its daemon section; `freshness` the
    counts per AGE_LABELS bucket per source; `events` (at, action, doc_id, reason),
    newest first; `documents` the (uri, title) of listed documents by doc_id."""
    trusted = report["stores_agree"] and not report["stale"] and not report["failed"]
    verdict = "OK" if trusted else "ATTENTION"
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv=refresh content="{REFRESH_SECONDS}">',
        "<meta name=viewport content='width=device-width'>",
        # An empty icon: the browser's request for /favicon.ico would be a 404.
        "<link rel=icon href='data:,'>",
        f"<title>ragd: {verdict}</title><style>{_STYLE}</style></head><body>",
        f"<h1>ragd <span class={'ok' if trusted else 'bad'}>{verdict}</span></h1>",
        f"<p class=muted>{e(report['documents'])} documents, {e(report['stale'])} stale, "
        f"{e(report['failed'])} failed; generated {e(report.get('generated_at'))} "
        f"(refreshes every {REFRESH_SECONDS} s)</p>",
        _daemon(report, now),
        "<h2>Sources</h2>",
        _sources(report["sources"], now),
        "<h2>Freshness</h2>",
        "<p class=muted>Documents by time since they were last indexed or confirmed.</p>",
        *(_histogram(name, freshness.get(name, ())) for name in _names(report)),
        "<h2>Stale documents</h2>",
        _documents(report["sources"], "stale_documents", documents, now),
        "<h2>Failed documents</h2>",
        _documents(report["sources"], "failed_documents", documents, now),
        "<h2>Documents read with warnings</h2>",
        _documents(report["sources"], "warned_documents", documents, now),
        "<h2>Recent indexing</h2>",
        _events(events, documents, now),
        "<p class=muted><a href=/v1/status>/v1/status</a> · <a href=/metrics>/metrics</a>"
        " · <a href=/openapi.json>/openapi.json</a></p></body></html>",
    ]
    return "\n".join(parts)


def _names(report: Mapping[str, Any]) -> list[str]:
    return [str(source["name"]) for source in report["sources"]]


def _daemon(report: Mapping[str, Any], now: datetime) -> str:
    stores = report["stores"]
    agree = "<span class=ok>agree</span>" if stores["agree"] else "<span class=bad>DISAGREE</span>"
    # A token of some sources sees neither the stores' counts nor the daemon's figures
    # (ragd.service.access.scoped_status).
    counts = (
        f": manifest {e(stores['manifest_chunks'])}, LanceDB {e(stores['lancedb_chunks'])}, "
        f"Tantivy {e(stores['tantivy_chunks'])} chunks"
        if "manifest_chunks" in stores
        else ""
    )
    lines = [f"<p>Stores {agree}{counts}."]
    daemon = report.get("daemon")
    if daemon and "writer" in daemon:
        writer, watcher = daemon["writer"], daemon["watcher"]
        doing = "writing" if writer["busy"] else "idle"
        unwatched = watcher.get("unwatched_roots") or []
        watching = (
            "<span class=bad>NOT WATCHING</span>"
            if not watcher["watching"]
            else "watching" + (f", unwatched: {e(', '.join(unwatched))}" if unwatched else "")
        )
        lines.append(
            f"<br>Writer {doing}, queue {e(daemon['queue_depth'])} "
            f"(index lag {e(round(report.get('index_lag_seconds', 0)))} s); "
            f"{e(writer['documents_indexed'])} indexed, {e(writer['documents_failed'])} failed "
            f"since start; last scan {e(relative_time(writer['last_scan_at'], now))}. "
            f"Watcher {watching}, {e(watcher['overflows'])} overflows."
        )
    replica = report.get("replica")
    if replica and "generation" in replica:
        lines.append(
            f"<br>Read replica of {e(replica['storage_uri'])}: generation "
            f"{e(replica['generation'])} of {e(replica['latest_generation'])}, published "
            f"{e(relative_time(replica['published_at'], now))}; staleness is as of that "
            "generation."
        )
    return "".join(lines) + "</p>"


def _sources(sources: Sequence[Mapping[str, Any]], now: datetime) -> str:
    head = (
        "<table><tr><th>source</th><th>type</th><th>documents</th><th>chunks</th>"
        "<th>stale</th><th>failed</th><th>second stage</th><th>last indexed</th></tr>"
    )
    rows = []
    for s in sources:
        stale = ", ".join(f"{e(n)} {e(r)}" for r, n in s["stale_by_reason"].items()) or "0"
        second = s.get("second_stage")
        coverage = "—" if not second else f"{second['coverage']:.0%}"
        unreachable = (
            f"<br><span class=bad>last poll failed:</span> {e(s['unreachable'])}"
            if s.get("unreachable")
            else ""
        )
        rows.append(
            f"<tr><td><b>{e(s['name'])}</b>{unreachable}{_skipped(s.get('skipped'))}</td>"
            f"<td>{e(s['type'])}</td>"
            f"<td class=n>{e(s['documents'])}</td><td class=n>{e(s['chunks'])}</td>"
            f"<td>{stale}</td><td class=n>{e(s['failed'])}</td><td>{e(coverage)}</td>"
            f"<td title='{e(s['last_indexed_at'])}'>"
            f"{e(relative_time(s['last_indexed_at'], now))}</td></tr>"
        )
    return head + "".join(rows) + "</table>"


def _skipped(skipped: Mapping[str, Any] | None) -> str:
    """What a folder's last full scan passed over, counted (`ragd status` names them)."""
    if not skipped:
        return ""
    counts = [
        f"{n} {what}{'' if n == 1 else 's'}{after}"
        for n, what, after in (
            (skipped["symlinks"], "symlink", ""),
            (skipped["special"], "special file", ""),
            (skipped.get("non_utf8_names", 0), "file name", " not valid UTF-8"),
        )
        if n
    ]
    return f"<br>skipped: {e(', '.join(counts))}" if counts else ""


def _histogram(name: str, counts: Sequence[int]) -> str:
    """One source's documents per age bucket as an SVG bar chart drawn here."""
    width, height, bar = 420, 122, 60
    top = max(counts, default=0) or 1
    bars = []
    for i, label in enumerate(AGE_LABELS):
        count = counts[i] if i < len(counts) else 0
        tall = round(70 * count / top)
        x = 20 + i * (bar + 20)
        color = "#2e7d32" if i == 0 else "#9e9d24" if i < 3 else "#c62828"
        bars.append(
            f"<rect x={x} y={92 - tall} width={bar} height={tall} fill='{color}'>"
            f"<title>{e(count)} documents: {e(label)}</title></rect>"
            f"<text x={x + bar // 2} y={88 - tall} text-anchor=middle>{e(count)}</text>"
            f"<text x={x + bar // 2} y=110 text-anchor=middle>{e(label)}</text>"
        )
    return (
        f"<figure><figcaption><b>{e(name)}</b></figcaption>"
        f"<svg width={width} height={height} role=img aria-label='freshness of {e(name)}'>"
        + "".join(bars)
        + "</svg></figure>"
    )


def _document(doc_id: str, documents: Mapping[str, tuple[str | None, str | None]]) -> str:
    """A document as its title and id, linked to its URI when that is http(s)."""
    uri, title = documents.get(doc_id, (None, None))
    shown = f"{e(title)} <span class=muted>{e(doc_id)}</span>" if title else e(doc_id)
    link = web_url(uri)
    return f"<a href='{e(link)}' rel=noreferrer>{shown}</a>" if link else shown


_COUNTS = {"stale_documents": "stale", "failed_documents": "failed", "warned_documents": "warnings"}


def _documents(
    sources: Sequence[Mapping[str, Any]],
    field: str,
    documents: Mapping[str, tuple[str | None, str | None]],
    now: datetime,
) -> str:
    rows: list[str] = []
    # The report's lists are bounded (its list_limit); its counts are whole.
    total = sum(max(int(s.get(_COUNTS[field], 0)), len(s[field])) for s in sources)
    for s in sources:
        for doc in s[field]:
            if len(rows) >= MAX_LISTED:
                break
            cell = _document(f"{s['name']}:{doc['path']}", documents)
            why = ", ".join(doc["reasons"]) if "reasons" in doc else doc.get("error") or ""
            why = why or doc.get("warning", "")
            when = relative_time(doc.get("indexed_at"), now) if "indexed_at" in doc else ""
            rows.append(f"<tr><td>{cell}</td><td>{e(why)}</td><td>{e(when)}</td></tr>")
    if not rows:
        return "<p class=muted>None.</p>"
    more = f"<p class=muted>First {MAX_LISTED} of {total}.</p>" if total > MAX_LISTED else ""
    return (
        "<table><tr><th>document</th><th>why</th><th>indexed</th></tr>"
        + "".join(rows)
        + "</table>"
        + more
    )


def _events(
    events: Iterable[tuple[str, str, str, str | None]],
    documents: Mapping[str, tuple[str | None, str | None]],
    now: datetime,
) -> str:
    rows = [
        f"<tr><td title='{e(at)}'>{e(relative_time(at, now))}</td><td>{e(action)}</td>"
        f"<td>{_document(doc_id, documents)}</td><td>{e(reason or '')}</td></tr>"
        for at, action, doc_id, reason in events
    ]
    if not rows:
        return "<p class=muted>Nothing indexed since the daemon started.</p>"
    return (
        "<table><tr><th>when</th><th>what</th><th>document</th><th>why</th></tr>"
        + "".join(rows)
        + "</table>"
    )
