"""The status report: what is indexed, what failed, what is stale, whether stores agree.

Owns the shape of `ragd status --json` / `GET /v1/status` (the one-line verdict of
`ragd status --check` is the CLI's, `ragd.cli.text`). Reads only: it works beside a
running writer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ragd.search.staleness import SourcePolicy, stale_reasons
from ragd.stores.agreement import Agreement, compare_stores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import DocumentRecord, SkippedFiles, format_time, parse_time
from ragd.stores.vectors import VectorStore


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
    stale: int
    stale_by_reason: dict[str, int]
    last_indexed_at: str | None
    median_indexed_at: str | None
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
            "failed": len(self.failed_documents),
            "warnings": len(self.warned_documents),
            "stale": self.stale,
            "stale_by_reason": self.stale_by_reason,
            "empty": len(self.empty_documents),
            "pending_jobs": self.pending_jobs,
            "last_indexed_at": self.last_indexed_at,
            "median_indexed_at": self.median_indexed_at,
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

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.sources)

    @property
    def stale(self) -> int:
        return sum(s.stale for s in self.sources)

    @property
    def failed(self) -> int:
        return sum(len(s.failed_documents) for s in self.sources)

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
    manifest: ManifestReader,
    vectors: VectorStore,
    keywords: KeywordStore,
    *,
    sources: Sequence[SourceInfo],
    fingerprint: str,
    second_stage_model: str | None = None,
) -> StatusReport:
    """Build the report from read-only store handles. With `second_stage_model` (the
    second stage is on), each source reports how many of its chunks have a stored
    second-stage vector.

    The manifest's chunk ids are read before and after the search stores' (moved to
    their latest commit in between), so a chunk a running writer committed or removed
    meanwhile is in flight, not a disagreement.
    """
    now = datetime.now(UTC)
    configured: Mapping[str, SourceInfo] = {s.name: s for s in sources}
    names = [s.name for s in sources] + sorted(set(manifest.sources()) - set(configured))
    pending = manifest.pending_doc_ids()
    jobs, oldest_job = manifest.queued_jobs()
    coverage = manifest.second_stage_coverage() if second_stage_model is not None else None
    unreachable = manifest.unreachable_sources()
    skipped = manifest.skipped_files()
    source_reports = []
    for name in names:
        info = configured.get(name)
        tally = _SourceTally(
            info.policy if info else None, fingerprint, now, pending, unreachable.get(name)
        )
        for doc in manifest.documents(name):
            tally.add(doc)
        source_reports.append(
            tally.status(
                name,
                info,
                jobs.get(name, 0),
                None if coverage is None else coverage.get(name, (0, 0)),
                skipped.get(name, SkippedFiles()),
            )
        )
    agreement = compare_stores(manifest, vectors, keywords, writer_running=True)
    return StatusReport(
        generated_at=format_time(now),
        fingerprint=fingerprint,
        agreement=agreement,
        sources=source_reports,
        last_full_scan_at=manifest.last_full_scan_at(),
        queue_depth=sum(jobs.values()),
        index_lag_seconds=(now - parse_time(oldest_job)).total_seconds() if oldest_job else 0.0,
        second_stage_model=second_stage_model,
    )


class _SourceTally:
    """One source's documents folded into its line of the report as they are read: the
    report holds counts, times and the documents it names (failed, empty, stale), never
    every record."""

    def __init__(
        self,
        policy: SourcePolicy | None,
        fingerprint: str,
        now: datetime,
        pending: set[str],
        unreachable: str | None,
    ) -> None:
        self._policy, self._fingerprint, self._now = policy, fingerprint, now
        self._pending, self._unreachable = pending, unreachable
        self.counts: Counter[str] = Counter()  # live documents by status
        self.chunks = 0
        self.reasons: Counter[str] = Counter()
        self.indexed_times: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.warned: list[tuple[str, str]] = []
        self.empty: list[str] = []
        self.stale: list[tuple[str, list[str], str | None]] = []

    def add(self, doc: DocumentRecord) -> None:
        if doc.status == "deleted":
            return
        self.counts[doc.status] += 1
        self.chunks += doc.chunk_count
        if doc.indexed_at:
            self.indexed_times.append(doc.indexed_at)
        if doc.status == "failed":
            self.failed.append((doc.key, doc.error or ""))
            return
        if doc.status == "indexed" and doc.error:
            self.warned.append((doc.key, doc.error))
        if doc.status == "indexed" and doc.chunk_count == 0:
            self.empty.append(doc.key)
        found = stale_reasons(
            doc,
            policy=self._policy,
            fingerprint=self._fingerprint,
            now=self._now,
            pending=doc.doc_id in self._pending,
            unreachable=self._unreachable is not None,
            verify_content=False,
        )
        self.reasons.update(found)
        if found:
            self.stale.append((doc.key, found, doc.indexed_at))

    def status(
        self,
        name: str,
        info: SourceInfo | None,
        pending_jobs: int,
        second_stage: tuple[int, int] | None,
        skipped: SkippedFiles,
    ) -> SourceStatus:
        times = sorted(self.indexed_times)
        return SourceStatus(
            name=name,
            info=info,
            documents=self.counts.total(),
            indexed=self.counts["indexed"],
            pending=self.counts["pending"],
            chunks=self.chunks,
            stale=len(self.stale),
            stale_by_reason=dict(sorted(self.reasons.items())),
            last_indexed_at=times[-1] if times else None,
            median_indexed_at=times[len(times) // 2] if times else None,
            oldest_indexed_at=times[0] if times else None,
            failed_documents=self.failed,
            warned_documents=self.warned,
            empty_documents=self.empty,
            stale_documents=self.stale,
            pending_jobs=pending_jobs,
            second_stage=second_stage,
            unreachable=self._unreachable,
            skipped=skipped,
        )


def _coverage(done: int, total: int) -> dict[str, object]:
    """A second-stage coverage object: chunks with a vector, chunks in all, their ratio."""
    return {
        "vectors": done,
        "chunks": total,
        "pending": total - done,
        "coverage": round(done / total, 4) if total else 1.0,
    }
