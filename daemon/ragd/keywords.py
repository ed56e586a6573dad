"""The keyword store: a Tantivy BM25 index over chunk texts, derived from the manifest.

Owns `data_dir/tantivy/`. Each Tantivy document is one chunk: chunk_id and doc_id (stored, raw
tokens, so delete-by-term matches them exactly) and the prefixed chunk text (indexed with the
"default" tokenizer, not stored: the manifest holds texts). Everything here can be rebuilt.

Tantivy allows one IndexWriter per directory across processes; the OS lock behind it is the
lock. This module never deletes or inspects lock files: after a crash the OS has released it.

User query text never reaches Tantivy's query parser (it raises on `a AND`, gives field access
with `chunk_id:*`, and overflows the stack on deep nesting). It is tokenized like the indexed
text and searched as a flat OR of term queries.

Imports only `ragd.errors`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from ragd.errors import StoreError

# Defensive caps on query text; the caller caps length too. 64 distinct terms is far beyond a
# real question and bounds the boolean query's size.
MAX_QUERY_CHARS = 10_000
MAX_QUERY_TERMS = 64
# Tantivy's default is 128 MB; 64 MB and one indexing thread suit a 2-core host, and our
# batches (a few documents' chunks per commit) are small.
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """One chunk to index: the text is indexed for BM25, not stored."""

    chunk_id: str
    doc_id: str
    text: str


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="default")
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
    def open(cls, directory: Path) -> KeywordStore:
        """Open for writing, creating the index if missing, and take Tantivy's writer lock.

        Raises StoreError if another writer holds the lock (in any process) or the index on
        disk has another schema.
        """
        index = _open_index(directory, create=True)
        assert index is not None
        try:
            writer = index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
        except ValueError as exc:
            if "LockBusy" in str(exc):
                raise StoreError(
                    f"another process is writing the Tantivy index at {directory}",
                    hint="stop the other ragd writer, or wait for it to finish",
                ) from exc
            raise StoreError(f"cannot write the Tantivy index at {directory}: {exc}") from exc
        return cls(directory, index, writer)

    @classmethod
    def open_readonly(cls, directory: Path) -> KeywordStore:
        """Open for searching without a writer; creates nothing. A missing index reads as empty."""
        return cls(directory, _open_index(directory, create=False), None)

    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            state = "closed" if self._writable else "opened read-only"
            raise StoreError(f"the Tantivy index at {self._directory} was {state}")
        return self._writer

    def replace_documents(self, doc_ids: Collection[str], rows: Sequence[KeywordRow]) -> None:
        """Make `rows` the complete set of chunks of `doc_ids`, in one Tantivy commit.

        Deletes by doc_id and by each row's chunk_id (so a replay cannot duplicate a chunk),
        adds the rows, commits and reloads the searcher. Every row's doc_id must be in
        `doc_ids` (ValueError otherwise, before writing); StoreError if Tantivy fails.
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
            # Deletes apply to documents added before them, so the adds below survive.
            self._commit(
                writer,
                [("doc_id", d) for d in docs] + [("chunk_id", c) for c in seen],
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

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The `limit` best chunks for `query` as (chunk_id, BM25 score), best first.

        Any text is safe: it is tokenized, never parsed, and matches any of its terms.
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
        boolean = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", term))
                for term in terms
            ]
        )
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
        hint = (
            f"its schema is from another ragd version: stop ragd, delete {directory}, re-index"
            if "schema" in str(exc).lower()
            else "check the directory's permissions and the disk"
        )
        raise StoreError(f"cannot open the Tantivy index at {directory}: {exc}", hint=hint) from exc
