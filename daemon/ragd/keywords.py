"""The keyword store: a Tantivy BM25 index over chunk texts, derived from the manifest.

Owns `data_dir/tantivy/`. Each Tantivy document is one chunk: chunk_id and doc_id (stored, raw
tokens, so delete-by-term matches them exactly), the prefixed chunk text (indexed with the
"default" tokenizer, not stored: the manifest holds texts) and its identifier terms
(ragd.identifiers: `status_code` whole, `HTTPException` as `http` + `exception`), which
the default tokenizer cannot produce. Everything here can be rebuilt.

Tantivy allows one IndexWriter per directory across processes; the OS lock behind it is the
lock. This module never deletes or inspects lock files: after a crash the OS has released it.

User query text never reaches Tantivy's query parser (it raises on `a AND`, gives field access
with `chunk_id:*`, and overflows the stack on deep nesting). It is tokenized like the indexed
text and searched as a flat OR of term queries.

An index written with another schema (an older ragd) is rebuilt from the manifest's
chunks when the writer opens it; texts are in the manifest, so nothing is re-embedded.

Imports only `ragd.errors` and `ragd.identifiers`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from ragd.errors import StoreError
from ragd.identifiers import identifier_terms

# Defensive caps on query text; the caller caps length too. 64 distinct terms is far beyond a
# real question and bounds the boolean query's size.
MAX_QUERY_CHARS = 10_000
MAX_QUERY_TERMS = 64
# Tantivy's default is 128 MB; 64 MB and one indexing thread suit a 2-core host, and our
# batches (a few documents' chunks per commit) are small.
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1
# The identifier field counts a quarter of the text field. Measured on fastapi-docs
# (docs/retrieval.md): 0.25 and 0.5 both lifted recall@1; 1.0 also lifted negatives' BM25
# scores past the abstention threshold.
IDENTIFIER_WEIGHT = 0.25
# Written while an index of another schema is replaced; its presence means "start over".
REBUILD_MARKER = "ragd-rebuilding"
REBUILD_BATCH = 5_000


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """One chunk to index: the text is indexed for BM25, not stored. `identifiers` is
    `" ".join(identifier_terms(text))` when the caller has it already."""

    chunk_id: str
    doc_id: str
    text: str
    identifiers: str | None = None


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="default")
    # Terms are made (and lowercased) by ragd.identifiers and joined with spaces.
    builder.add_text_field("identifiers", stored=False, tokenizer_name="whitespace")
    return builder.build()


def _query_analyzer() -> tantivy.TextAnalyzer:
    # Tantivy's "default" tokenizer is exactly SimpleTokenizer + RemoveLongFilter(40) +
    # LowerCaser; query terms must be produced the same way to match the indexed terms.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .build()
    )


class KeywordStore:
    """The Tantivy BM25 index of chunk texts; build with `open` (writer) or `open_readonly`."""

    def __init__(
        self,
        directory: Path,
        index: tantivy.Index | None,
        writer: tantivy.IndexWriter | None,
    ) -> None:
        self._directory = directory
        self._index = index
        self._writer = writer
        self._writable = writer is not None
        self._analyzer = _query_analyzer()
        # tantivy-py's IndexWriter must not be used by two threads at once.
        self._write_lock = threading.Lock()

    @classmethod
    def open(
        cls, directory: Path, *, rebuild_from: Callable[[], Iterable[KeywordRow]] | None = None
    ) -> KeywordStore:
        """Open for writing, creating the index if missing, and take Tantivy's writer lock.

        An index with another schema (written by another ragd version) is rebuilt from
        `rebuild_from` (every chunk, read from the manifest) when given; without it, or
        if another writer holds the lock (in any process), raises StoreError. A rebuild
        interrupted by a crash is redone on the next open.
        """
        marker = directory / REBUILD_MARKER
        try:
            index = _open_index(directory, create=True)
        except _SchemaMismatch as exc:
            if rebuild_from is None:
                raise StoreError(
                    f"cannot open the Tantivy index at {directory}: {exc}",
                    hint="its schema is from another ragd version: run `ragd index` to rebuild it",
                ) from exc
            index = None
        if index is not None and not (marker.exists() and rebuild_from is not None):
            return cls(directory, index, _writer(index, directory))
        assert rebuild_from is not None
        _claim_old_index(directory)
        # From here until the refill commits, a crash must not leave a half-empty index
        # that looks complete: the marker makes the next open start over.
        marker.touch()
        _remove_index_files(directory)
        index = _open_index(directory, create=True)
        assert index is not None
        store = cls(directory, index, _writer(index, directory))
        store._refill(rebuild_from())
        marker.unlink()
        return store

    def _refill(self, rows: Iterable[KeywordRow]) -> None:
        batch: list[KeywordRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= REBUILD_BATCH:
                self._commit(self._require_writer(), (), batch)
                batch = []
        self._commit(self._require_writer(), (), batch)

    @classmethod
    def open_readonly(cls, directory: Path) -> KeywordStore:
        """Open for searching without a writer; creates nothing. A missing index reads as empty.

        StoreError if the index has another schema: the writer rebuilds it on its next open.
        """
        try:
            return cls(directory, _open_index(directory, create=False), None)
        except _SchemaMismatch as exc:
            raise StoreError(
                f"cannot open the Tantivy index at {directory}: {exc}",
                hint="its schema is from another ragd version: run `ragd index` to rebuild it",
            ) from exc

    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            state = "closed" if self._writable else "opened read-only"
            raise StoreError(f"the Tantivy index at {self._directory} was {state}")
        return self._writer

    def replace_documents(
        self, doc_ids: Collection[str], rows: Sequence[KeywordRow], *, new: Collection[str] = ()
    ) -> None:
        """Make `rows` the complete set of chunks of `doc_ids`, in one Tantivy commit.

        Deletes by doc_id and by each row's chunk_id (so a replay cannot duplicate a chunk),
        adds the rows, commits and reloads the searcher. Every row's doc_id must be in
        `doc_ids` (ValueError otherwise, before writing); StoreError if Tantivy fails.
        `new` names documents the index has never held: nothing of theirs is deleted
        (each delete term is looked up in every segment at commit).
        """
        docs = set(doc_ids)
        seen: set[str] = set()
        for row in rows:
            if row.doc_id not in docs:
                raise ValueError(
                    f"chunk {row.chunk_id!r} belongs to {row.doc_id!r}, not in doc_ids"
                )
            if row.chunk_id in seen:
                raise ValueError(f"duplicate chunk_id {row.chunk_id!r} in one write")
            seen.add(row.chunk_id)
        if not docs:
            return
        with self._write_lock:
            writer = self._require_writer()
            fresh = set(new)
            # Deletes apply to documents added before them, so the adds below survive.
            self._commit(
                writer,
                [("doc_id", d) for d in docs - fresh]
                + [("chunk_id", r.chunk_id) for r in rows if r.doc_id not in fresh],
                rows,
            )

    def delete_chunks(self, chunk_ids: Collection[str]) -> None:
        """Delete chunks by id in one commit."""
        ids = set(chunk_ids)
        if not ids:
            return
        with self._write_lock:
            self._commit(self._require_writer(), [("chunk_id", c) for c in ids], ())

    def _commit(
        self,
        writer: tantivy.IndexWriter,
        deletes: Sequence[tuple[str, str]],
        rows: Sequence[KeywordRow],
    ) -> None:
        assert self._index is not None
        try:
            for field, value in deletes:
                writer.delete_documents_by_term(field, value)
            for row in rows:
                document = tantivy.Document()
                document.add_text("chunk_id", row.chunk_id)
                document.add_text("doc_id", row.doc_id)
                document.add_text("text", row.text)
                identifiers = row.identifiers
                if identifiers is None:
                    identifiers = " ".join(identifier_terms(row.text))
                document.add_text("identifiers", identifiers)
                writer.add_document(document)
            writer.commit()
        except (ValueError, RuntimeError) as exc:
            # Drop the half-staged batch so the next commit does not publish it.
            # A killed writer cannot roll back; the StoreError below says why.
            with contextlib.suppress(ValueError, RuntimeError):
                writer.rollback()
            raise StoreError(f"cannot write the Tantivy index at {self._directory}: {exc}") from exc
        # Right after commit() the searcher still shows the previous commit for ~1 s.
        self._index.reload()

    def chunk_ids(self) -> set[str]:
        """Every chunk id in the index, read from the stored fields of all live documents."""
        if self._index is None:
            return set()
        searcher = self._index.searcher()
        total = searcher.num_docs
        if total == 0:
            return set()  # Tantivy panics on a search limit of 0
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        return {str(searcher.doc(address).get_first("chunk_id")) for _, address in hits}

    def count(self) -> int:
        """The number of live (not deleted) chunks."""
        return 0 if self._index is None else int(self._index.searcher().num_docs)

    def query_terms(self, query: str) -> list[str]:
        """The distinct index terms of `query`, in order, at most MAX_QUERY_TERMS."""
        tokens = self._analyzer.analyze(query[:MAX_QUERY_CHARS])
        return list(dict.fromkeys(tokens))[:MAX_QUERY_TERMS]

    def identifier_terms(self, query: str) -> list[str]:
        """The distinct identifier-field terms of `query`, at most MAX_QUERY_TERMS."""
        return list(dict.fromkeys(identifier_terms(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_TERMS]

    def search(
        self, query: str, limit: int, *, identifier_weight: float = IDENTIFIER_WEIGHT
    ) -> list[tuple[str, float]]:
        """The `limit` best chunks for `query` as (chunk_id, BM25 score), best first.

        The query's default and identifier terms are searched in both fields; the score
        is BM25 over the text plus `identifier_weight` times BM25 over the identifier
        terms (0 leaves that field out). Any text is safe: it is tokenized,
        never parsed, and matches any of its terms.
        """
        if self._index is None or limit <= 0:
            return []
        terms = self.query_terms(query)
        if not terms:
            return []
        searcher = self._index.searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        schema = self._index.schema
        # Both fields get every term: a query's parts (`http` of `HTTPException`) must find
        # prose that spells them out, and its plain words must find the parts of names.
        terms = list(dict.fromkeys(terms + self.identifier_terms(query)))[:MAX_QUERY_TERMS]
        clauses = [tantivy.Query.term_query(schema, "text", term) for term in terms]
        if identifier_weight > 0:
            clauses += [
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(schema, "identifiers", term), identifier_weight
                )
                for term in terms
            ]
        boolean = tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in clauses])
        # Clamped: the top-k collector allocates for `limit`, and 0 would panic.
        hits = searcher.search(boolean, limit=min(limit, total), count=False).hits
        return [
            (str(searcher.doc(address).get_first("chunk_id")), float(score))
            for score, address in hits
        ]

    def refresh(self) -> None:
        """Reload so this handle sees the latest commit (also finds a newly created index)."""
        if self._index is None:
            if not self._writable:
                self._index = _open_index(self._directory, create=False)
            return
        self._index.reload()

    def close(self) -> None:
        """Release the writer and with it the OS lock. Idempotent; searching still works."""
        with self._write_lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                # Consumes the writer: merges finish and the lock is released now, not at GC.
                try:
                    writer.wait_merging_threads()
                except (ValueError, RuntimeError) as exc:
                    raise StoreError(
                        f"cannot close the Tantivy writer at {self._directory}: {exc}"
                    ) from exc


class _SchemaMismatch(Exception):
    """The index on disk was written with another schema."""


def _writer(index: tantivy.Index, directory: Path) -> tantivy.IndexWriter:
    """Take Tantivy's writer (and with it the OS lock on the directory)."""
    try:
        return index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
    except ValueError as exc:
        if "LockBusy" in str(exc):
            raise StoreError(
                f"another process is writing the Tantivy index at {directory}",
                hint="stop the other ragd writer, or wait for it to finish",
            ) from exc
        raise StoreError(f"cannot write the Tantivy index at {directory}: {exc}") from exc


def _claim_old_index(directory: Path) -> None:
    """Prove no other process writes the old index: take and release its writer lock."""
    if not tantivy.Index.exists(str(directory)):
        return  # nothing there (a rebuild that crashed before the new meta.json)
    try:
        old = tantivy.Index.open(str(directory))  # with the schema it was written with
    except ValueError as exc:
        raise StoreError(f"cannot open the Tantivy index at {directory}: {exc}") from exc
    _writer(old, directory).wait_merging_threads()


def _remove_index_files(directory: Path) -> None:
    """Delete the index's files; Tantivy's lock files stay (the OS lock is the lock)."""
    for entry in directory.iterdir():
        if entry.is_file() and not entry.name.endswith(".lock") and entry.name != REBUILD_MARKER:
            entry.unlink()


def _open_index(directory: Path, *, create: bool) -> tantivy.Index | None:
    """Open (or with `create`, create) the index; None if it is missing and not created."""
    path = str(directory)
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not (directory.is_dir() and tantivy.Index.exists(path)):
            return None
        # Index(schema, path) opens an existing index and checks its schema against ours.
        return tantivy.Index(_schema(), path=path, reuse=True)
    except OSError as exc:
        raise StoreError(f"cannot open the Tantivy index at {directory}: {exc}") from exc
    except ValueError as exc:
        # Only a schema mismatch warrants a rebuild; permission or I/O trouble does not.
        if "schema" in str(exc).lower():
            raise _SchemaMismatch(str(exc)) from exc
        raise StoreError(
            f"cannot open the Tantivy index at {directory}: {exc}",
            hint="check the directory's permissions and the disk",
        ) from exc
