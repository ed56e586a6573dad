"""Whether the three stores agree, and bringing them back into agreement after a crash.

Owns comparing the chunk id sets of the manifest, LanceDB and Tantivy (what `ragd status`
reports as `stores_agree`; by digests first, sets only when those differ), and
reconciliation: orphan chunks a crash left in a search store are removed, and documents
whose chunks a store lost go back to pending. The second stage's table lags the manifest
by design (its vectors arrive later), so it is not part of the agreement; reconciling it
makes it hold exactly the rows of the chunks whose second-stage vector is stored, from
those stored vectors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ragd.stores.data_dir import WriterStores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorRow, VectorStore


@dataclass(frozen=True)
class Agreement:
    """How the chunk id sets of the three stores compare."""

    manifest_chunks: int
    lancedb_chunks: int
    tantivy_chunks: int
    missing_from_lancedb: frozenset[str] = field(default_factory=frozenset)
    missing_from_tantivy: frozenset[str] = field(default_factory=frozenset)
    orphans_in_lancedb: frozenset[str] = field(default_factory=frozenset)
    orphans_in_tantivy: frozenset[str] = field(default_factory=frozenset)
    checked_by: str = "ids"  # or "counts": equal counts were taken for agreement

    @property
    def agree(self) -> bool:
        """True when all three list exactly the same chunk ids."""
        return not (
            self.missing_from_lancedb
            or self.missing_from_tantivy
            or self.orphans_in_lancedb
            or self.orphans_in_tantivy
        )

    def to_json(self) -> dict[str, object]:
        """The JSON shape used by `ragd status`."""
        return {
            "agree": self.agree,
            "manifest_chunks": self.manifest_chunks,
            "lancedb_chunks": self.lancedb_chunks,
            "tantivy_chunks": self.tantivy_chunks,
            "missing_from_lancedb": len(self.missing_from_lancedb),
            "missing_from_tantivy": len(self.missing_from_tantivy),
            "orphans_in_lancedb": len(self.orphans_in_lancedb),
            "orphans_in_tantivy": len(self.orphans_in_tantivy),
            "checked_by": self.checked_by,
        }


@dataclass(frozen=True, slots=True)
class IdDigest:
    """A collection of ids in two numbers: how many, and the sum of their hashes.

    Equal collections have equal digests; unequal ones almost surely do not (a missing
    id and an orphan would have to cancel out to 64 bits). `str` hashes are salted per
    process, so digests compare only within one process. Reading a store into a digest
    holds one id at a time, where a set of 125k ids holds ~14 MiB.
    """

    count: int
    total: int

    @classmethod
    def of(cls, ids: Iterable[str]) -> IdDigest:
        """The digest of `ids`, read once."""
        count = total = 0
        for chunk_id in ids:
            count += 1
            total += hash(chunk_id)
        return cls(count, total & _DIGEST_MASK)


_DIGEST_MASK = (1 << 64) - 1


def compare_stores(
    manifest: ManifestReader,
    vectors: VectorStore,
    keywords: KeywordStore,
    *,
    writer_running: bool = False,
) -> Agreement:
    """Compare the chunk ids of the manifest and both search stores.

    Each store is read into an `IdDigest` first; only when the digests differ are they
    read again as sets, to say which chunks differ. With `writer_running` (read-only
    handles beside a writer), each reading goes: the manifest, both search stores moved
    to their latest commit, the manifest again. A batch committed in between then shows
    as in flight (`compare_ids`), whenever the handles were opened.
    """

    def latest() -> None:
        if writer_running:
            vectors.refresh()
            keywords.refresh()

    listed = IdDigest.of(manifest.iter_chunk_ids())
    latest()
    digests = {
        listed,
        IdDigest.of(vectors.iter_chunk_ids()),
        IdDigest.of(keywords.iter_chunk_ids()),
    }
    if writer_running:
        digests.add(IdDigest.of(manifest.iter_chunk_ids()))
    if len(digests) == 1:
        return Agreement(listed.count, listed.count, listed.count)
    listed_ids = manifest.chunk_ids()
    latest()
    in_lance, in_tantivy = vectors.chunk_ids(), keywords.chunk_ids()
    after = manifest.chunk_ids() if writer_running else None
    return compare_ids(listed_ids, in_lance, in_tantivy, listed_after=after)


def compare_counts(
    manifest: ManifestReader, vectors: VectorStore, keywords: KeywordStore
) -> Agreement:
    """Compare how many chunks each store holds, beside the running daemon's writer; only
    when the counts differ, the ids (`compare_stores`), to say which chunks differ.

    Reading every chunk id of three stores takes seconds at a million chunks. In the
    daemon the one writer commits the three stores in step and its start-up reconciles
    them by ids (what a crash left), so a count that differs is what can go wrong while
    it runs: a store that lost or kept rows. Equal counts with different ids would take a
    missing chunk and an orphan at once; `ragd status` without a daemon compares ids.
    """
    vectors.refresh()
    keywords.refresh()
    counts = {manifest.chunk_count(), vectors.count(), keywords.count()}
    if len(counts) == 1:
        (count,) = counts
        return Agreement(count, count, count, checked_by="counts")
    return compare_stores(manifest, vectors, keywords, writer_running=True)


def compare_ids(
    listed: set[str],
    in_lance: set[str],
    in_tantivy: set[str],
    *,
    listed_after: set[str] | None = None,
) -> Agreement:
    """Compare chunk id sets read from the manifest, LanceDB and Tantivy.

    `listed_after` is the manifest read again after both stores, beside a running writer:
    a chunk committed or removed between the two reads was in flight, not missing or
    orphaned.
    """
    after = listed if listed_after is None else listed_after
    stable, known = listed & after, listed | after
    return Agreement(
        manifest_chunks=len(after),
        lancedb_chunks=len(in_lance),
        tantivy_chunks=len(in_tantivy),
        missing_from_lancedb=frozenset(stable - in_lance),
        missing_from_tantivy=frozenset(stable - in_tantivy),
        orphans_in_lancedb=frozenset(in_lance - known),
        orphans_in_tantivy=frozenset(in_tantivy - known),
    )


def reconcile(manifest: Manifest, vectors: VectorStore, keywords: KeywordStore) -> Agreement:
    """Bring the search stores back to what the manifest lists after a crash.

    Orphan chunks (written to a store, never committed to the manifest) are removed;
    documents with chunks missing from a store go back to pending so the run redoes them.
    Returns the agreement found before repairing.
    """
    found = compare_stores(manifest, vectors, keywords)
    if found.orphans_in_lancedb:
        vectors.delete_chunks(found.orphans_in_lancedb)
    if found.orphans_in_tantivy:
        keywords.delete_chunks(found.orphans_in_tantivy)
    missing = found.missing_from_lancedb | found.missing_from_tantivy
    if missing:
        manifest.mark_for_redo(manifest.doc_ids_of_chunks(missing))
    return found


def reconcile_second_stage(manifest: Manifest, table: VectorStore) -> tuple[int, int]:
    """Make the second stage's table hold a row for exactly each chunk whose second-stage
    vector is stored: orphans deleted, lost rows written from the stored vectors.
    Returns (orphans deleted, rows written)."""
    expected = manifest.second_stage_chunk_ids()
    present = table.chunk_ids()
    orphans = present - expected
    if orphans:
        table.delete_chunks(orphans)
    lost = expected - present
    rows = [VectorRow(c, d, v) for c, d, v in manifest.second_stage_vectors(lost)]
    if rows:
        table.upsert(rows)
    return len(orphans), len(rows)


def reconcile_stores(stores: WriterStores, dim: int) -> None:
    """Reconcile a writer's stores: the search stores with the manifest, and the second
    stage's table, if it has one, with its stored vectors."""
    reconcile(stores.manifest, stores.vectors(dim), stores.keywords())
    if (second := stores.second_vectors()) is not None:
        reconcile_second_stage(stores.manifest, second)
