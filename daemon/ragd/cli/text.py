"""What the `ragd` command line prints for people: progress, and the plain-text form of
each command's report.

`ragd.cli` parses arguments, runs the core and prints these (or JSON with --json); this
module only formats. Progress is a bar on a terminal and a line every few seconds
elsewhere (logs, systemd). Times read as ages ("3 min ago"); the JSON keeps them ISO 8601.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

import click

from ragd.search.ages import relative_time

if TYPE_CHECKING:  # only for annotations: `ragd status` should not import the engine
    from ragd.indexing.reembed.bulk import ReembedReport
    from ragd.indexing.report import IndexReport
    from ragd.search.evaluation import ModeReport


class Progress:
    """A progress bar on a terminal; a line every few seconds otherwise (logs, systemd)."""

    def __init__(self, stream: TextIO, *, label: str = "indexing", unit: str = "files") -> None:
        self.stream = stream
        self.label = label
        self.unit = unit
        self.tty = stream.isatty()
        self._bar: Any = None
        self._last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            if self._bar is None:
                self._bar = click.progressbar(length=total, label=self.label, file=self.stream)
                self._bar.__enter__()
            self._bar.update(done - self._bar.pos)
        elif time.monotonic() - self._last >= 5:
            self._last = time.monotonic()
            click.echo(f"ragd: {self.label}: {done}/{total} {self.unit}", file=self.stream)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def index_summary(report: IndexReport) -> str:
    lines = [
        f"documents: {report.added} added, {report.changed} changed, "
        f"{report.unchanged} unchanged, {report.deleted} deleted, {report.failed} failed",
        f"chunks:    {report.embedded} embedded, {report.reused} re-used, "
        f"{report.chunks_deleted} deleted",
    ]
    if report.second_embedded or report.second_reused or report.second_pending:
        pending = f", {report.second_pending} still to embed" if report.second_pending else ""
        lines.append(
            f"second stage: {report.second_embedded} embedded, "
            f"{report.second_reused} re-used{pending}"
        )
    reconciled = " (after reconciling the stores)" if report.reconciled else ""
    lines.append(f"took {report.seconds:.2f}s{reconciled}")
    return "\n".join(lines)


def reembed_summary(report: ReembedReport) -> str:
    where = "on Ray" if report.backend == "ray" else report.backend
    lines = [
        f"texts embedded: {report.first_texts} first stage, {report.second_texts} second "
        f"stage ({where})",
        f"documents: {report.documents_switched} switched to the current models, "
        f"{report.documents_left} left for `ragd index`",
        f"chunks:    {report.chunks_rekeyed} re-keyed"
        + (" (the vector table was rebuilt)" if report.table_rebuilt else ""),
        f"took {report.seconds:.2f}s",
    ]
    return "\n".join(lines)


# Units of an age, largest first; below a minute it is counted in seconds.
def query_text(response: Mapping[str, Any], now: datetime) -> str:
    """A query's hits for people, from the query contract's JSON (the CLI's own search or
    a daemon's answer): an abstention first and in words, then each hit with where it is,
    how it ranked, how long ago it was indexed and its text."""
    excluded = (
        f"({response['excluded_stale']} stale hits excluded; without --exclude-stale they "
        "show, flagged STALE)"
        if response.get("excluded_stale")
        else None
    )
    hits: list[Mapping[str, Any]] = response["results"]
    if not hits:
        return "\n".join(
            [f"No results for {response['query']!r}.", *([excluded] if excluded else [])]
        )
    lines: list[str] = []
    if response["abstained"]:
        lines.append(
            "No confident answer (abstained): the documents may not answer this question. "
            "The closest hits follow; they may not be about it."
        )
    for hit in hits:
        where = " › ".join(hit["heading_path"]) or hit["title"]
        reasons = hit["stale_reasons"]
        flag = f"  [STALE: {', '.join(reasons)}]" if reasons else ""
        lines.append(f"{hit['rank']:>2}. {where}{flag}")
        second = f"  second stage #{hit['second_stage_rank'] or '-'}" if response["rerank"] else ""
        page = f" (page {hit['page']})" if hit.get("page") is not None else ""
        lines.append(
            f"    {hit['source']}:{hit['path']}{page}  score {hit['score']:.4f}  "
            f"bm25 #{hit['bm25_rank'] or '-'}  vector #{hit['vector_rank'] or '-'}{second}  "
            f"indexed {relative_time(hit['indexed_at'], now)}"
        )
        if hit.get("context") is not None:  # asked for: the whole section, as an LLM gets it
            lines.extend(f"    {line}" for line in hit["context"].splitlines())
            continue
        snippet = " ".join(hit["text"].split())
        lines.append(f"    {snippet[:200]}{'…' if len(snippet) > 200 else ''}")
    if excluded:
        lines.append(excluded)
    return "\n".join(lines)


def eval_text(reports: list[ModeReport], kinds: list[str]) -> str:
    columns = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
    lines = [f"{'mode':13} {'kind':11} {'n':>3} " + " ".join(f"{c:>9}" for c in columns)]
    for report in reports:
        for kind in [None, *kinds]:
            m = report.metrics(kind)
            lines.append(
                f"{report.mode:13} {kind or 'all':11} {m['questions']:>3} "
                + " ".join(f"{m[c]:>9.3f}" for c in columns)
            )
        a = report.abstention()
        lines.append(
            f"{report.mode:13} abstained on {a['abstained']:.0%} of {a['negatives']} negatives, "
            f"wrongly on {report.metrics()['wrongly_abstained']:.0%} of answerable; "
            f"{len(report.misses())} answerable not ranked first"
        )
        for miss in report.misses():
            ranks = ", ".join(
                f"{name} {rank or '-'}"
                for name, rank in {report.mode: miss["rank"], **miss["retriever_ranks"]}.items()
            )
            lines.append(f"  miss {miss['id']} ({ranks}): {miss['query']}")
            lines.append(f"       gold {'; '.join(miss['gold'])}")
    return "\n".join(lines)


def status_text(report: dict[str, Any]) -> str:
    """The status report for people: a table per source, then what needs a look.

    Ages are counted to when the report was made, so a daemon's report reads right
    whatever this machine's clock says."""
    now = datetime.fromisoformat(report["generated_at"])
    sources = report["sources"]
    header = ("SOURCE", "DOCS", "CHUNKS", "FAILED", "STALE", "LAST INDEXED")
    rows = [header] + [
        (
            s["name"],
            str(s["documents"]),
            str(s["chunks"]),
            str(s["failed"]),
            str(s["stale"]),
            relative_time(s["last_indexed_at"], now),
        )
        for s in sources
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for s in sources:
        for doc in s["failed_documents"]:
            lines.append(f"failed  {s['name']}:{doc['path']}: {doc['error']}")
        lines.extend(_more("failed ", s["name"], s["failed"], s["failed_documents"]))
        for doc in s["warned_documents"]:
            lines.append(f"warning {s['name']}:{doc['path']}: {doc['warning']}")
        lines.extend(_more("warning", s["name"], s["warnings"], s["warned_documents"]))
        for path in s["empty_documents"]:
            lines.append(f"empty   {s['name']}:{path}: no text to index")
        lines.extend(_more("empty  ", s["name"], s["empty"], s["empty_documents"]))
        lines.extend(_skipped_text(s["name"], s.get("skipped")))
        if s.get("unreachable"):
            lines.append(f"unreachable {s['name']}: the last poll failed: {s['unreachable']}")
        for reason, count in s["stale_by_reason"].items():
            lines.append(f"stale   {s['name']}: {count} documents ({reason})")
        if (second := s.get("second_stage")) and second["pending"]:
            lines.append(
                f"second stage {s['name']}: {second['vectors']} of {second['chunks']} chunks "
                f"have a vector ({second['coverage']:.0%}); their hits rank by the first "
                "stage until then"
            )
    stores = report["stores"]
    agree = f"stores: {'agree' if stores['agree'] else 'DISAGREE'}"
    # A daemon answers a token of some sources without what counts the others
    # (ragd.service.access.scoped_status): no queue, no store counts, no daemon figures.
    if "queue_depth" not in report:
        daemon = report.get("daemon") or {}
        lines.append(agree + (f"; daemon {daemon['state']}" if "state" in daemon else ""))
        return "\n".join(lines)
    lines.append(
        f"last full scan: {relative_time(report['last_full_scan_at'], now)}; queued jobs: "
        f"{report['queue_depth']} (index lag {report['index_lag_seconds']:.0f}s)"
    )
    lines.append(
        f"{agree} (manifest {stores['manifest_chunks']}, "
        f"lancedb {stores['lancedb_chunks']}, tantivy {stores['tantivy_chunks']} chunks)"
    )
    if daemon := report.get("daemon"):
        lines.extend(_daemon_text(daemon, now))
    return "\n".join(lines)


def _skipped_text(name: str, skipped: Mapping[str, Any] | None) -> list[str]:
    """What the last full scan of a folder passed over, counted, then the first few named."""
    if not skipped:
        return []
    # A daemon of an earlier version does not count names.
    names = skipped.get("non_utf8_names", 0)
    counts = [
        f"{n} {what}{'' if n == 1 else 's'} ({why})"
        for n, what, why in (
            (skipped["symlinks"], "symlink", "not followed"),
            (skipped["special"], "special file", "FIFO, socket or device: not read"),
            (names, "file name", "not valid UTF-8: cannot be a document; rename it"),
        )
        if n
    ]
    if not counts:
        return []
    lines = [f"skipped {name}: {' and '.join(counts)}"]
    lines.extend(f"skipped {name}:{f['path']}: {f['kind']}" for f in skipped["files"])
    if more := skipped["symlinks"] + skipped["special"] + names - len(skipped["files"]):
        lines.append(f"skipped {name}: … and {more} more")
    return lines


def stale_text(report: Mapping[str, Any]) -> str:
    """`ragd status --stale`: one line per stale document (source:path, reasons, age), or
    a sentence saying there are none."""
    now = datetime.fromisoformat(report["generated_at"])
    lines = [
        f"{source['name']}:{doc['path']}\t{','.join(doc['reasons'])}\t"
        + (
            f"indexed {relative_time(doc['indexed_at'], now)}"
            if doc["indexed_at"]
            else "never indexed"
        )
        for source in report["sources"]
        for doc in source["stale_documents"]
    ]
    for source in report["sources"]:
        lines.extend(_more("stale", source["name"], source["stale"], source["stale_documents"]))
    return "\n".join(lines) if lines else "no stale documents"


def _more(label: str, source: str, count: int, listed: Sequence[object]) -> list[str]:
    """A line saying how many documents a list left out (the report names at most
    `list_limit` of each kind; its counts are whole), or none."""
    if count <= len(listed):
        return []
    return [f"{label} {source}: {count - len(listed)} more not listed"]


def _daemon_text(daemon: dict[str, Any], now: datetime) -> list[str]:
    watcher = daemon["watcher"]
    unwatched = watcher.get("unwatched_roots") or []
    next_jobs = ", ".join(
        f"{job} {relative_time(at, now)}" for job, at in sorted(daemon["next_jobs"].items())
    )
    return [
        f"daemon: pid {daemon['pid']}, {daemon['state']}, "
        f"up {_duration(daemon['uptime_seconds'])}, queue {daemon['queue_depth']}, "
        f"lancedb versions {daemon['lancedb_versions']}",
        f"watcher: {'watching' if watcher['watching'] else 'NOT WATCHING'}, "
        f"{watcher['overflows']} overflows"
        + (f", unwatched: {', '.join(unwatched)}" if unwatched else ""),
        f"next jobs: {next_jobs or 'none'}",
        *(_poll_text(poll) for poll in (daemon.get("polls") or {}).values()),
        *(
            f"writer gave up {_job_name(job)} {relative_time(job['at'], now)}: {job['reason']}"
            for job in reversed((daemon.get("writer") or {}).get("dropped_jobs") or [])
        ),
    ]


def _job_name(job: Mapping[str, Any]) -> str:
    """`scan`, `compact`, `tree docs:api`: a job's kind and what it is about, if anything."""
    about = f"{job['source']}:{job['key']}" if job["key"] else job["source"]
    return f"{job['kind']} {about}" if about else str(job["kind"])


def _poll_text(poll: Mapping[str, Any]) -> str:
    counts = (
        f"{poll['listed']} listed, {poll['fetched']} fetched, {poll['unchanged']} unchanged, "
        f"{poll['deleted']} deleted, {poll['failed']} failed"
    )
    ending = f"FAILED: {poll['error']}" if poll["error"] else counts
    return f"last poll of {poll['source']}: {ending} ({poll['seconds']:.1f}s)"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return (
        f"{days}d{hours}h"
        if days
        else f"{hours}h{minutes:02d}m"
        if hours
        else f"{minutes}m{secs:02d}s"
    )


def verdict(report: Mapping[str, Any]) -> tuple[int, str]:
    """Exit code and one-line summary of a report's JSON (local or from a daemon).

    CRITICAL when anything is stale or failed, the stores disagree, or, in a daemon's
    report, its writer is not alive or its watcher is degraded (not watching, or a root
    left to rescans alone)."""
    agree = bool(report["stores_agree"])
    stale, failed = int(report["stale"]), int(report["failed"])
    summary = (
        f"{report['documents']} documents, {stale} stale, {failed} failed, "
        f"stores {'agree' if agree else 'DISAGREE'}"
    )
    daemon = report.get("daemon")
    problems = _daemon_problems(daemon) if daemon else []
    if daemon:
        summary += f", daemon {'; '.join(problems) if problems else 'ok'}"
    if stale or failed or not agree or problems:
        return 1, f"RAGD CRITICAL - {summary}"
    return 0, f"RAGD OK - {summary}"


def _daemon_problems(daemon: Mapping[str, Any]) -> list[str]:
    """What is wrong with a running daemon, from the daemon section of its status report
    (a key an older daemon does not send counts as fine)."""
    problems = []
    if daemon.get("writer_alive") is False:
        problems.append("writer NOT ALIVE")
    watcher = daemon.get("watcher") or {}
    if watcher.get("watching") is False:
        problems.append("watcher NOT WATCHING")
    if unwatched := watcher.get("unwatched_roots"):
        problems.append(f"watcher degraded: not watching {', '.join(unwatched)}")
    return problems
