"""Freshness in aggregate: per source, stale documents by reason, failed documents and the
oldest confirmation, cheap enough for every Prometheus scrape.

Owns counting what `ragd.search.status` finds document by document without visiting every
document; the reasons and their rules stay in `ragd.search.staleness`. Each count is the
report's `stale_by_reason` (with its verify_content=False), with one bound:

- `pending`, `fingerprint`, `max_age` (and a source whose last poll failed): counted in
  SQL over indexes (`ragd.stores.manifest_counts`), exactly;
- `source_changed`, `source_deleted`: the report stats every file of a folder source,
  0.25 s of lstat alone at 100k files, five times what a scrape may take. Here only the
  files of documents a change is known for are stat'ed: a watch event queued for them
  and not yet applied, or a write in progress, at most `STAT_BUDGET` (beyond it the
  count is a lower bound, and ragd_queue_depth says how much waits). An edit no watch
  reported (under a root that could not be watched, see ragd_watcher_degraded, or made
  while no daemon ran) is not counted here; the next rescan indexes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ragd.search.staleness import FINGERPRINT, MAX_AGE, PENDING, REASONS, SourcePolicy, file_reasons
from ragd.stores.manifest_counts import ManifestCounts
from ragd.stores.records import format_time

# Files stat'ed per measure at most: with reading their rows, about 10 ms. A burst of watch
# events beyond it (a branch checkout) shows as a lower bound until the writer has worked
# the queue down.
STAT_BUDGET = 1000


@dataclass(frozen=True)
class SourceFreshness:
    """One source's documents as monitoring sees them."""

    documents: int  # not deleted, failed ones included (as ragd_documents counts them)
    chunks: int
    failed: int
    # Every reason of ragd.search.staleness.REASONS, 0 for none; a document counts once
    # under each of its reasons.
    stale_by_reason: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    # When the least recently confirmed served document was last indexed or confirmed
    # unchanged; None when none ever was.
    oldest_confirmed_at: str | None = None
    checked_at: str | None = None  # when the last complete scan of it began (folder sources)


@dataclass
class _Tally:
    documents: int = 0
    chunks: int = 0
    failed: int = 0
    served: int = 0  # indexed or pending: the documents staleness applies to
    pending: int = 0
    other_fingerprint: int = 0


def measure_freshness(
    counts: ManifestCounts,
    policies: Mapping[str, SourcePolicy],
    *,
    fingerprint: str,
    now: datetime,
    stat_budget: int = STAT_BUDGET,
) -> dict[str, SourceFreshness]:
    """Per source, configured (`policies`) or still in the manifest, its freshness, every
    count read from one snapshot of the manifest."""
    tallies: dict[str, _Tally] = {name: _Tally() for name in policies}
    with counts.snapshot():
        for state in counts.states():
            tally = tallies.setdefault(state.source, _Tally())
            tally.chunks += state.chunks  # a document's chunks stay until its delete commits
            if state.status == "deleted":
                continue
            tally.documents += state.documents
            if state.status == "failed":
                tally.failed += state.documents
                continue
            tally.served += state.documents
            if state.status == "pending":
                tally.pending += state.documents
            if state.fingerprint != fingerprint:
                tally.other_fingerprint += state.documents
        queued = counts.queued_changes()
        unreachable = counts.unreachable_sources()
        changed = _file_reasons(counts, policies, stat_budget)
        found: dict[str, SourceFreshness] = {}
        for name, tally in tallies.items():
            policy = policies.get(name)
            reasons = dict.fromkeys(REASONS, 0) | changed.get(name, {})
            reasons[PENDING] = tally.pending + queued.get(name, 0)
            reasons[FINGERPRINT] = tally.other_fingerprint
            if name in unreachable:
                reasons[MAX_AGE] = tally.served  # nothing vouches for any of them now
            elif policy is not None:
                reasons[MAX_AGE] = counts.unconfirmed(name, format_time(now - policy.max_age))
            found[name] = SourceFreshness(
                documents=tally.documents,
                chunks=tally.chunks,
                failed=tally.failed,
                stale_by_reason=reasons,
                oldest_confirmed_at=counts.oldest_confirmation(name),
                checked_at=counts.checked_at(name),
            )
    return found


def _file_reasons(
    counts: ManifestCounts, policies: Mapping[str, SourcePolicy], stat_budget: int
) -> dict[str, Counter[str]]:
    """source_changed / source_deleted per folder source, from a stat of the files a change
    is known for (the report's rule, without reading the bytes)."""
    folders = {name: p.folder for name, p in policies.items() if p.folder is not None}
    found: dict[str, Counter[str]] = {}
    for doc in counts.queued_documents(list(folders), stat_budget):
        reasons = file_reasons(doc, folders[doc.source], verify_content=False)
        found.setdefault(doc.source, Counter()).update(reasons)
    return found
