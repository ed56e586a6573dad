"""The write path's decisions: bring the stores in step with the sources, doing only what changed.

Owns what an indexing pass decides: list each source (a listing whose digest the manifest
keeps is unchanged as a whole), decide per document whether it changed (size + mtime, then
the hash of the bytes read, then the pipeline fingerprint: ragd.indexing.file_outcomes; and
whether a file it includes now reads differently: ragd.sources.includes), parse and
chunk what changed (ragd.indexing.preparing, on worker processes for big passes), and hand each
decision to the pass (ragd.indexing.passes), whose BatchWriter (ragd.indexing.batches) writes in
crash-safe order and embeds only chunk texts with no stored vector. Also applies CMS
entry deliveries (ragd.indexing.entries decides what each one does) and, when asked, fills
the second stage's vectors (ragd.indexing.second_stage).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import timedelta
from functools import partial
from operator import itemgetter

from ragd.embedding import Embedder
from ragd.errors import SourceError
from ragd.indexing.batches import BatchWriter, DocumentEvent, EventFn
from ragd.indexing.entries import EntryUpdate, entry_outcome
from ragd.indexing.file_outcomes import file_outcome, known_hash, stat_unchanged
from ragd.indexing.parse_guard import ParseGuard
from ragd.indexing.passes import IndexBuilds, IndexingPass, settle_vectors
from ragd.indexing.pipeline import Pipeline, PreparedWrite
from ragd.indexing.preparing import Prepared, ToPrepare, prepare
from ragd.indexing.report import IndexReport
from ragd.indexing.second_stage import fill
from ragd.indexing.workers import WORKER_MIN_FILES, Workers, prepare_in_order
from ragd.sources.folders import FileStat, FolderSource, Listing
from ragd.sources.includes import IncludeRoot, include_digest
from ragd.stores.agreement import reconcile_stores
from ragd.stores.data_dir import WriterStores
from ragd.stores.records import (
    DocumentRecord,
    DocumentWrite,
    FileState,
    SkippedFiles,
    doc_id_of,
    listing_digest,
    utc_now,
)

ProgressFn = Callable[[int, int], None]
"""Called as progress(done, total) every few listed files, and after the last."""

_PROGRESS_EVERY = 100  # files between progress calls: per file, they cost 5% of a no-op pass


class Indexer:
    """Runs indexing passes over folder sources into the stores of one data directory.

    The caller holds the writer lock; this class is the only code that writes stores.
    """

    def __init__(
        self,
        stores: WriterStores,
        sources: Sequence[FolderSource],
        pipeline: Pipeline,
        embedder: Embedder,
        *,
        batch_chunks: int = 8192,
        batch_documents: int = 256,
        stop: Callable[[], bool] | None = None,
        on_event: EventFn | None = None,
        cleanup_older_than: timedelta = timedelta(minutes=10),
        worker_min_files: int = WORKER_MIN_FILES,
        second: Embedder | None = None,
        other_sources: Collection[str] = (),
    ) -> None:
        self.stores = stores
        self.second = second  # the second-stage model, when it is on
        self.manifest = stores.manifest
        self.sources = list(sources)
        # Configured sources that are not folders (webhooks, polls): a full pass keeps them.
        self.other_sources = frozenset(other_sources)
        self.pipeline = pipeline
        self.embedder = embedder
        self.batch_chunks = batch_chunks
        self.batch_documents = batch_documents  # the first write batch of a pass
        self.should_stop = stop
        self.cleanup_older_than = cleanup_older_than  # LanceDB versions kept for readers
        # Who builds vector indexes off the writer (the daemon's thread); None: in line.
        self.index_builds: IndexBuilds | None = None
        self.worker_min_files = worker_min_files  # files a pass prepares before using a worker
        self.on_event = on_event
        self.parse_guard = ParseGuard(stores.paths.parsing)
        self._pass = self._new_pass()  # a new one per pass, from _begin

    def run(self, *, full: bool = False, progress: ProgressFn | None = None) -> IndexReport:
        """One pass over every source.

        `full` re-reads and rewrites every document, accepts a source folder that is now
        empty, and removes documents of sources that are no longer configured.
        """
        report = self._begin(reconcile=full)
        self.stores.keywords()  # opening rebuilds an index another ragd version wrote
        listings: list[tuple[FolderSource, Listing]] = []
        for source in self.sources:
            try:
                listing = source.scan()
            except SourceError as exc:
                report.errors.append(str(exc))
                continue
            listings.append((source, listing))
            # Kept for `ragd status`: without a word there, a symlinked doc would just
            # be missing from search.
            self.manifest.record_skipped(source.name, SkippedFiles.of(listing.skipped))
        total = sum(len(listing.files) for _, listing in listings)
        done = 0
        checked: list[str] = []
        for source, listing in listings:
            if self._pass.stopping():
                break
            report.skipped.extend(
                f"{source.name}:{name}: file name is not valid UTF-8"
                for name in listing.skipped_names
            )
            if not full and self._vanished(source, listing):
                done += len(listing.files)
                continue
            step = None if progress is None else (lambda n, base=done: progress(base + n, total))
            same_stat = self._check_source(source, listing, full=full, progress=step)
            done += len(listing.files)
            if report.interrupted or listing.unreadable_dirs:
                # Only these were seen: vouch for them alone.
                self._pass.confirm((doc_id_of(source.name, k), n, t) for k, n, t in same_stat)
            else:
                checked.append(source.name)
        if not report.interrupted and not report.errors:
            self.manifest.set_meta("last_full_scan_at", utc_now())
        if full and not report.interrupted:
            configured = {s.name for s in self.sources} | self.other_sources
            for name in set(self.manifest.sources()) - configured:
                for record in list(self.manifest.documents(name)):  # deletes as it goes
                    self._pass.delete(record)
            for name in set(self.manifest.skipped_files()) - configured:
                self.manifest.record_skipped(name, SkippedFiles())
        report = self._pass.finish()
        self.manifest.confirm_sources(checked, checked_at=self._pass.checked_at)
        self._remember_unchanged_listings(checked)
        if self._pass.batches.wrote:  # a no-op pass never even opens LanceDB
            self.manifest.prune_vectors()
        return report

    def _check_source(
        self,
        source: FolderSource,
        listing: Listing,
        *,
        full: bool,
        progress: Callable[[int], None] | None,
    ) -> list[FileStat]:
        """Bring one listed source in step; return the files passed over as unchanged.

        A listing whose digest is the one the manifest keeps for the source (every
        document unchanged, ragd.stores.manifest_schema) is passed over whole: no reading of
        their states, comparing them or looking for deleted ones, which are most of a no-op
        pass beside the walk; the digest costs a fraction of that.
        """
        fingerprint = self.pipeline.fingerprint
        includes_changed = set() if full else self._includes_changed(source)
        if not full and not includes_changed:
            unchanged = self.manifest.unchanged_listing(source.name, fingerprint)
            if unchanged is not None and unchanged == listing_digest(listing.files):
                self._pass.report.unchanged += len(listing.files)
                if progress is not None:
                    progress(len(listing.files))
                return listing.files
        known = self.manifest.file_states(source.name, fingerprint)
        same_stat = self._pass_over(
            source, listing, known, full=full, progress=progress, again=includes_changed
        )
        self._delete_unlisted(source, listing, known)
        return same_stat

    def _remember_unchanged_listings(self, checked: Iterable[str]) -> None:
        """Keep a listing digest for each completely checked source that has none.

        A source that had one either matched it or changed; a change forgot it.
        """
        fingerprint = self.pipeline.fingerprint
        for name in checked:
            if self.manifest.unchanged_listing(name, fingerprint) is None:
                self.manifest.remember_unchanged_listing(name, fingerprint)

    def _pass_over(
        self,
        source: FolderSource,
        listing: Listing,
        known: dict[str, FileState],
        *,
        full: bool,
        progress: Callable[[int], None] | None,
        again: Collection[str] = (),
    ) -> list[FileStat]:
        """Visit each listed file; return the files passed over because their stat matched.
        The keys `again` (their includes changed) are parsed whatever their stat.

        A listed stat equal to its known state is unchanged: one tuple comparison per
        file, and a record loaded only for a file that may have changed, is what keeps a
        no-op pass close to the cost of the walk. A listing names each key once, so a
        passed-over file needs no `first_time` check. The files that may have changed are
        then prepared in order, by worker processes when there are many, and visited here.
        A record is read when its file's turn comes, not held for the whole pass: when
        every file changed (a new pipeline fingerprint) that is one per document.
        """
        same_stat: list[FileStat] = []
        todo: list[tuple[FileStat, bool]] = []  # (file, whether the manifest knows it)
        state_of = known.get
        for entry in listing.files:
            if self._pass.stopping():
                return same_stat
            state = state_of(entry[0])
            if state == entry and not full and entry[0] not in again:
                same_stat.append(entry)
            else:
                todo.append((entry, state is not None))
        self._pass.report.unchanged += len(same_stat)
        if progress is not None:
            progress(len(same_stat))
        ready = prepare_in_order(
            [
                self._to_prepare(source, entry, is_known, full=full or entry[0] in again)
                for entry, is_known in todo
            ],
            self.pipeline,
            read=source.read,
            workers=Workers(source.reader(), self.embedder, IncludeRoot(str(source.root))),
            min_files=self.worker_min_files,
            guard=self.parse_guard.for_files(
                source.name, source.uri_for, self.pipeline.fingerprint
            ),
        )
        self._pass.batches.expect(len(todo))
        try:
            for done, (entry, is_known) in enumerate(todo, start=len(same_stat) + 1):
                if self._pass.stopping():
                    break
                record = self._record(source, entry, is_known)
                self._visit(source, entry, record, full=full, prepared=next(ready))
                if progress is not None and (
                    done % _PROGRESS_EVERY == 0 or done == len(listing.files)
                ):
                    progress(done)
        finally:
            ready.close()
        return same_stat

    def _record(
        self, source: FolderSource, entry: FileStat, is_known: bool
    ) -> DocumentRecord | None:
        """The manifest's record of a listed file, if it knows the file."""
        return self.manifest.document(doc_id_of(source.name, entry[0])) if is_known else None

    def _to_prepare(
        self, source: FolderSource, entry: FileStat, is_known: bool, *, full: bool
    ) -> ToPrepare:
        """What a worker needs to prepare a listed file (its record is not kept)."""
        key, size, _ = entry
        record = None if full else self._record(source, entry, is_known)
        return (
            key,
            doc_id_of(source.name, key),
            known_hash(record, self.pipeline.fingerprint, full=full),
            size,
        )

    def sync(
        self, source_name: str, *, keys: Sequence[str] = (), trees: Sequence[str] = ()
    ) -> IndexReport:
        """Bring some paths of one source in step: file `keys` and directory `trees`.

        Used for watcher hints. A key that is gone (or no longer selected) is deleted; a
        tree is listed and documents under it that are no longer there are deleted.
        """
        report = self._begin(reconcile=False)
        source = next((s for s in self.sources if s.name == source_name), None)
        if source is None:
            report.errors.append(f"unknown source '{source_name}'")
            return self._pass.finish()
        try:
            source.check_root()  # an unmounted root must not read as "every file deleted"
            fingerprint = self.pipeline.fingerprint
            for prefix in trees:
                listing = source.scan(prefix)
                known = {d.key: d for d in self.manifest.documents_under(source.name, prefix)}
                for entry in listing.files:
                    if self._pass.stopping():
                        break
                    record = known.get(entry[0])
                    if record is not None and stat_unchanged(record, entry, fingerprint):
                        self._pass.unchanged(record.doc_id, entry[1], entry[2])
                    else:
                        self._visit(source, entry, record, full=False)
                self._delete_unlisted(source, listing, known)
            # A hinted file may be included by documents it does not change the stat of.
            for key in [*keys, *self._includes_changed(source, keys)]:
                if self._pass.stopping():
                    break
                current = source.stat(key)
                record = self.manifest.document(doc_id_of(source.name, key))
                if current is not None and source.selects(key):
                    self._visit(source, current, record, full=False)
                elif record is not None:
                    self._pass.delete(record)
        except SourceError as exc:
            report.errors.append(str(exc))
        return self._pass.finish()

    def apply_entries(self, source: str, updates: Sequence[EntryUpdate]) -> IndexReport:
        """Apply CMS entry upserts and deletes of one webhook source, newest version wins."""
        self._begin(reconcile=False)
        for update in updates:
            if self._pass.stopping():
                break
            self._apply_entry(source, update)
        return self._pass.finish()

    def _apply_entry(self, source: str, update: EntryUpdate) -> None:
        doc_id = doc_id_of(source, update.key)
        if not self._pass.first_time(doc_id):
            return
        record = self.manifest.document(doc_id)
        outcome = entry_outcome(
            source,
            update,
            record,
            applied_version=self.manifest.entry_version(doc_id),
            pipeline=self.pipeline,
            guard=self.parse_guard,
        )
        if outcome.kind == "unchanged":
            self._pass.unchanged(doc_id, outcome.size, 0)
        elif outcome.kind != "nothing":
            self._pass.count(outcome.kind)
        if outcome.write is not None:
            self._pass.batches.add(outcome.write, record)

    def record_failure(self, source: str, key: str, reason: str) -> IndexReport:
        """Mark the file `source:key` failed with `reason`, as the writer does when its
        job could not be done: its chunks leave the stores, status shows why, and it is
        read again on its next change or rescan (its stat is no longer known)."""
        self._begin(reconcile=False)
        doc_id = doc_id_of(source, key)
        record = self.manifest.document(doc_id)
        folder = next((s for s in self.sources if s.name == source), None)
        if record is not None:
            uri = record.uri
        else:
            uri = folder.uri_for(key) if folder is not None else f"urn:ragd:{source}:{key}"
        write: PreparedWrite = DocumentWrite(
            doc_id, source, key, uri, "failed", fingerprint=self.pipeline.fingerprint, error=reason
        )
        self._pass.count("failed")
        self._pass.batches.add(write, record)
        return self._pass.finish()

    def reconcile(self) -> None:
        """Make the search stores list exactly the manifest's chunks (after a crash), and
        the second stage's table hold the rows of its stored vectors."""
        reconcile_stores(self.stores, self.embedder.dim)

    def fill_second_stage(self, *, progress: ProgressFn | None = None) -> IndexReport:
        """Embed every chunk still without a second-stage vector (`ragd index` does, after
        its pass); the report counts them, and says interrupted if a stop cut it short."""
        report = IndexReport()
        if self.second is not None:
            settle = partial(
                settle_vectors,
                cleanup_older_than=self.cleanup_older_than,
                builds=self.index_builds,
            )
            filled = fill(
                self.stores,
                self.second,
                settle=settle,
                progress=progress,
                stop=self.should_stop,
            )
            report.second_embedded, report.second_pending = filled.embedded, filled.pending
            report.interrupted, report.seconds = filled.pending > 0, filled.seconds
        return report

    def _begin(self, *, reconcile: bool) -> IndexReport:
        self._pass = self._new_pass()
        report = self._pass.report
        # Before any document is settled under the fingerprint: `ragd reembed` re-keys
        # documents of another fingerprint with the same chunk recipe without re-chunking.
        self.manifest.record_recipe(self.pipeline.fingerprint, self.pipeline.chunk_recipe)
        if reconcile or not self.manifest.is_clean():
            self.reconcile()
            report.reconciled = True
        if (crashed := self.parse_guard.leftover()) is not None:  # before listing: its hash
            report.failed += 1
            self._pass.batches.add(crashed, self.manifest.document(crashed.doc_id))
            self._pass.batches.flush()
            self.parse_guard.clear()
        return report

    def _new_pass(self) -> IndexingPass:
        batches = BatchWriter(
            self.stores,
            self.embedder,
            batch_chunks=self.batch_chunks,
            first_batch=self.batch_documents,
            # When this pass began. The manifest records it as when the pass checked what
            # it read: never later than a read, so the racy rule (RACY_SECONDS in
            # ragd.stores.records) holds however long the pass runs.
            checked_at=utc_now(),
            on_event=self.on_event,
        )
        return IndexingPass(
            batches,
            stop=self.should_stop,
            cleanup_older_than=self.cleanup_older_than,
            builds=self.index_builds,
        )

    # -- deciding -------------------------------------------------------------------------

    def _includes_changed(
        self, source: FolderSource, included: Collection[str] | None = None
    ) -> set[str]:
        """Keys of the source's documents that include a file which now reads differently
        from when they were parsed (of the files `included` alone, when given); each such
        file is read once. The pass then parses them again."""
        root = IncludeRoot(str(source.root))
        now: dict[str, str] = {}
        changed: set[str] = set()
        for key, included_key, digest in self.manifest.include_digests(source.name, included):
            if included_key not in now:
                now[included_key] = include_digest(root.read(included_key))
            if now[included_key] != digest:
                changed.add(key)
        self._pass.includes_changed.update(doc_id_of(source.name, key) for key in changed)
        return changed

    def _vanished(self, source: FolderSource, listing: Listing) -> bool:
        """A root that suddenly lists nothing is an unmounted disk until proven otherwise."""
        if listing.files:
            return False
        indexed = self.manifest.indexed_count(source.name)
        if not indexed:
            return False
        error = SourceError(
            f"source '{source.name}': {source.root} listed no files but {indexed} "
            "documents are indexed; nothing was deleted",
            hint="if the folder really is empty now, run 'ragd index --full'",
        )
        self._pass.report.errors.append(str(error))
        return True

    def _delete_unlisted(
        self, source: FolderSource, listing: Listing, known: Iterable[str]
    ) -> None:
        if self._pass.report.interrupted:
            return  # an interrupted pass has not seen everything it would delete
        unlisted = set(known).difference(map(itemgetter(0), listing.files))
        for key in sorted(unlisted):
            if listing.covers(key):
                record = self.manifest.document(doc_id_of(source.name, key))
                if record is not None:
                    self._pass.delete(record)

    def _visit(
        self,
        source: FolderSource,
        entry: FileStat,
        record: DocumentRecord | None,
        *,
        full: bool,
        prepared: Prepared | None = None,
    ) -> None:
        key = entry[0]
        doc_id = doc_id_of(source.name, key)
        if not self._pass.first_time(doc_id):
            return
        started = time.monotonic()
        fingerprint = self.pipeline.fingerprint
        again = doc_id in self._pass.includes_changed
        if prepared is None:
            file: ToPrepare = (key, doc_id, known_hash(record, fingerprint, full=full or again), 0)
            guard = self.parse_guard.for_files(source.name, source.uri_for, fingerprint)
            includes = IncludeRoot(str(source.root))
            prepared = prepare(file, self.pipeline, source.read, guard, includes)
        outcome = file_outcome(
            source.name,
            source.uri_for(key),
            entry,
            record,
            prepared,
            fingerprint=fingerprint,
            full=full,
            includes_changed=again,
        )
        if outcome.write is None:
            self._pass.unchanged(doc_id, outcome.size, outcome.mtime_ns)
            if self.on_event is not None:
                self.on_event(DocumentEvent("unchanged", doc_id, reason="same content"))
            return
        self._pass.count(outcome.kind)
        self._pass.batches.add(outcome.write, record, started)
