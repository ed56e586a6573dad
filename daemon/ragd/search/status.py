"""The status report: what is indexed, what failed, what is stale, whether stores agree.

Owns the shape of `ragd status --json` / `GET /v1/status` (the one-line verdict of
`ragd status --check` is the CLI's, `ragd.cli.text`). Reads only: it works beside a
running writer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ragd.search.freshness import STAT_BUDGET
from ragd.search.staleness import FINGERPRINT, MAX_AGE, PENDING, SourcePolicy, file_reasons
from ragd.sources.folders import FolderSource
from ragd.stores.agreement import Agreement, compare_counts, compare_stores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_counts import StateCount
from ragd.stores.manifest_report import ManifestReport
from ragd.stores.records import SkippedFiles, format_time, parse_time
from ragd.stores.vectors import VectorStore

# Documents each list of a source's line names at most (failed, warned, empty, stale);
# its count is always whole. A report of a million stale documents is read for its
# counts, and its size stays bounded.
LIST_LIMIT = 100


@dataclass(frozen=True)
class SourceInfo:
    """A configured source as the report names it."""

    name: str
    type: str
    location: str
    policy: SourcePolicy


@dataclass(frozen=True)
class SourceStatus:
    """One source's line of the report."""

    name: str
    info: SourceInfo | None
    documents: int
    indexed: int
    pending: int
    chunks: int
    failed: int
    warnings: int
    empty: int
    stale: int
    stale_by_reason: dict[str, int]
    last_indexed_at: str | None
    oldest_indexed_at: str | None
    failed_documents: list[tuple[str, str]]
    # Indexed, but read other than as written (MDX read as Markdown): path, the warning.
    warned_documents: list[tuple[str, str]]
    empty_documents: list[str]
    stale_documents: list[tuple[str, list[str], str | None]]  # path, reasons, indexed_at
    pending_jobs: int
    # (chunks with a stored second-stage vector, chunks that should have one); None: off
    second_stage: tuple[int, int] | None = None
    unreachable: str | None = None  # why the last poll could not list the source
    # What the last full scan of a folder passed over (symlinks, special files).
    skipped: SkippedFiles = field(default_factory=SkippedFiles)

    def to_json(self) -> dict[str, object]:
        """The source object of the status contract."""
        return {
            "name": self.name,
            "type": self.info.type if self.info else None,
            "location": self.info.location if self.info else None,
            "configured": self.info is not None,
            "documents": self.documents,
            "indexed": self.indexed,
            "pending": self.pending,
            "chunks": self.chunks,
            "failed": self.failed,
            "warnings": self.warnings,
            "stale": self.stale,
            "stale_by_reason": self.stale_by_reason,
            "empty": self.empty,
            "pending_jobs": self.pending_jobs,
            "last_indexed_at": self.last_indexed_at,
            "oldest_indexed_at": self.oldest_indexed_at,
            "failed_documents": [{"path": p, "error": e} for p, e in self.failed_documents],
            "warned_documents": [{"path": p, "warning": w} for p, w in self.warned_documents],
            "empty_documents": self.empty_documents,
            "stale_documents": [
                {"path": p, "reasons": r, "indexed_at": t} for p, r, t in self.stale_documents
            ],
            "second_stage": None if self.second_stage is None else _coverage(*self.second_stage),
            "unreachable": self.unreachable,
            "skipped": self.skipped.to_json(),
        }


@dataclass(frozen=True)
class StatusReport:
    """The whole report."""

    generated_at: str
    fingerprint: str
    agreement: Agreement
    sources: list[SourceStatus]
    last_full_scan_at: str | None
    queue_depth: int
    index_lag_seconds: float
    second_stage_model: str | None = None  # None: the second stage is off
    list_limit: int = LIST_LIMIT

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.sources)

    @property
    def stale(self) -> int:
        return sum(s.stale for s in self.sources)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.sources)

    def to_json(self) -> dict[str, object]:
        """The object of `ragd status --json` and `GET /v1/status`."""
        return {
            "generated_at": self.generated_at,
            "fingerprint": self.fingerprint,
            "stores_agree": self.agreement.agree,
            "stores": self.agreement.to_json(),
            "last_full_scan_at": self.last_full_scan_at,
            "queue_depth": self.queue_depth,
            "index_lag_seconds": round(self.index_lag_seconds, 3),
            "documents": self.documents,
            "stale": self.stale,
            "failed": self.failed,
            "list_limit": self.list_limit,
            "second_stage": self._second_stage(),
            "sources": [s.to_json() for s in self.sources],
        }

    def _second_stage(self) -> dict[str, object] | None:
        if self.second_stage_model is None:
            return None
        covered = [s.second_stage for s in self.sources if s.second_stage is not None]
        done, total = sum(c[0] for c in covered), sum(c[1] for c in covered)
        return {"model": self.second_stage_model} | _coverage(done, total)


def build_status(
    manifest: ManifestReport,
    vectors: VectorStore,
    keywords: KeywordStore,
    *,
    sources: Sequence[SourceInfo],
    fingerprint: str,
    second_stage_model: str | None = None,
    watched: bool = False,
    list_limit: int = LIST_LIMIT,
) -> StatusReport:
    """Build the report from read-only store handles. With `second_stage_model` (the
    second stage is on), each source reports how many of its chunks have a stored
    second-stage vector.

    Counts come from the manifest's indexes and each list names at most `list_limit`
    documents. `watched` says the report is the daemon's, whose watcher reports every
    change to the folders and whose one writer commits the stores in step: only the files
    of documents a change is known for are stat'ed, as /metrics does
    (`ragd.search.freshness`), and the stores are compared by their counts
    (`compare_counts`). Without it every folder document's file is stat'ed and every
    chunk id compared.

    The manifest's chunk ids are read before and after the search stores' (moved to
    their latest commit in between), so a chunk a running writer committed or removed
    meanwhile is in flight, not a disagreement.
    """
    now = datetime.now(UTC)
    configured: Mapping[str, SourceInfo] = {s.name: s for s in sources}
    names = [s.name for s in sources] + sorted(set(manifest.sources()) - set(configured))
    # One snapshot for every count and list, so that they add up.
    with manifest.snapshot():
        states: dict[str, list[StateCount]] = {}
        jobs, oldest_job = manifest.queued_jobs()
        chunks = Counter[str]()
        for state in manifest.states():
            states.setdefault(state.source, []).append(state)
            chunks[state.source] += state.chunks
        coverage = (
            manifest.second_stage_coverage(chunks) if second_stage_model is not None else None
        )
        unreachable = manifest.unreachable_sources()
        skipped = manifest.skipped_files()
        source_reports = []
        for name in names:
            info = configured.get(name)
            stale = _StaleRows(manifest, name, fingerprint, now)
            policy = info.policy if info else None
            stale.find(policy, states.get(name, []), unreachable.get(name), watched)
            source_reports.append(
                _source_status(
                    manifest,
                    name,
                    info,
                    states.get(name, []),
                    stale,
                    list_limit,
                    pending_jobs=jobs.get(name, 0),
                    second_stage=None if coverage is None else coverage.get(name, (0, 0)),
                    skipped=skipped.get(name, SkippedFiles()),
                    unreachable=unreachable.get(name),
                )
            )
    agreement = (
        compare_counts(manifest, vectors, keywords)
        if watched
        else compare_stores(manifest, vectors, keywords, writer_running=True)
    )
    return StatusReport(
        generated_at=format_time(now),
        fingerprint=fingerprint,
        agreement=agreement,
        sources=source_reports,
        last_full_scan_at=manifest.last_full_scan_at(),
        queue_depth=sum(jobs.values()),
        index_lag_seconds=(now - parse_time(oldest_job)).total_seconds() if oldest_job else 0.0,
        second_stage_model=second_stage_model,
        list_limit=list_limit,
    )


def _source_status(
    manifest: ManifestReport,
    name: str,
    info: SourceInfo | None,
    states: Sequence[StateCount],
    stale: _StaleRows,
    limit: int,
    *,
    pending_jobs: int,
    second_stage: tuple[int, int] | None,
    skipped: SkippedFiles,
    unreachable: str | None,
) -> SourceStatus:
    """One source's line: counts from its states, the documents it names from indexes."""
    counts: Counter[str] = Counter()
    chunks = 0
    for state in states:
        if state.status != "deleted":
            counts[state.status] += state.documents
            chunks += state.chunks
    warned_count, warned = manifest.warned(name, limit)
    empty_count, empty = manifest.empty(name, limit)
    times = manifest.indexed_times(name)
    named = manifest.stale_named(sorted(stale.reasons)[:limit])
    return SourceStatus(
        name=name,
        info=info,
        documents=counts.total(),
        indexed=counts["indexed"],
        pending=counts["pending"],
        chunks=chunks,
        failed=counts["failed"],
        warnings=warned_count,
        empty=empty_count,
        stale=len(stale.reasons),
        stale_by_reason=stale.by_reason(),
        last_indexed_at=times.latest,
        oldest_indexed_at=times.oldest,
        failed_documents=[(d.key, d.note) for d in manifest.failed(name, limit)],
        warned_documents=[(d.key, d.note) for d in warned],
        empty_documents=[d.key for d in empty],
        stale_documents=[(d.key, stale.reasons[row], d.indexed_at) for row, d in named],
        pending_jobs=pending_jobs,
        second_stage=second_stage,
        unreachable=unreachable,
        skipped=skipped,
    )


class _StaleRows:
    """One source's stale documents as row ids, each with its reasons in REASONS order:
    every set read is what a reason flags, so the cost is the number of stale documents
    (plus, without a watcher, one stat per folder document)."""

    def __init__(
        self, manifest: ManifestReport, source: str, fingerprint: str, now: datetime
    ) -> None:
        self._manifest, self._source = manifest, source
        self._fingerprint, self._now = fingerprint, now
        self.reasons: dict[int, list[str]] = {}

    def find(
        self,
        policy: SourcePolicy | None,
        states: Sequence[StateCount],
        unreachable: str | None,
        watched: bool,
    ) -> None:
        manifest, source = self._manifest, self._source
        if policy is not None and policy.folder is not None:
            for row, reasons in self._changed_files(policy.folder, watched):
                self._add([row], reasons[0])
        self._add(manifest.pending_rows(source), PENDING)
        if unreachable is not None:
            self._add(manifest.served_rows(source), MAX_AGE)
        elif policy is not None:
            before = format_time(self._now - policy.max_age)
            self._add(manifest.unconfirmed_rows(source, before), MAX_AGE)
        others = {
            s.fingerprint
            for s in states
            if s.status in ("indexed", "pending") and s.fingerprint != self._fingerprint
        }
        self._add(manifest.other_fingerprint_rows(source, others), FINGERPRINT)

    def by_reason(self) -> dict[str, int]:
        found: Counter[str] = Counter()
        for reasons in self.reasons.values():
            found.update(reasons)
        return dict(sorted(found.items()))

    def _add(self, rows: Iterable[int], reason: str) -> None:
        for row in rows:
            self.reasons.setdefault(row, []).append(reason)

    def _changed_files(
        self, folder: FolderSource, watched: bool
    ) -> Iterator[tuple[int, list[str]]]:
        """(row id, [source_changed or source_deleted]) of each document whose file differs
        from what was indexed: of the documents a change is known for when `watched`, else
        of every served document."""
        manifest, source = self._manifest, self._source
        if not watched:
            for indexed in manifest.served_files(source):
                if reasons := file_reasons(indexed, folder, verify_content=False):
                    yield indexed.row, reasons
            return
        known = manifest.queued_documents([source], STAT_BUDGET)
        rows = manifest.rows_of_keys(source, (doc.key for doc in known))
        for doc in known:
            if (reasons := file_reasons(doc, folder, verify_content=False)) and doc.key in rows:
                yield rows[doc.key], reasons


def _coverage(done: int, total: int) -> dict[str, object]:
    """A second-stage coverage object: chunks with a vector, chunks in all, their ratio."""
    return {
        "vectors": done,
        "chunks": total,
        "pending": total - done,
        "coverage": round(done / total, 4) if total else 1.0,
    }
