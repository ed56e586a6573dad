"""Tantivy behind one adapter: ragd's BM25 index of chunk texts, through tantivy-py's public API.

Owns the index's schema (chunk_id and doc_id stored as raw tokens, so a delete by term
matches them exactly and a filter by regular expression sees whole ids; the chunk text and
its document's title with Tantivy's "default" tokenizer, not stored; the identifier terms
with the "whitespace" tokenizer), opening or creating an index directory, its one writer
(and with it Tantivy's OS lock on the directory), term-query searches, the statistics a
query's evidence is read from (document frequencies), and turning tantivy's errors into
`StoreError` or `SchemaMismatch`. What rows mean, rebuilding
an index of another schema, and which terms a query has is `ragd.stores.keywords`.

User text never reaches Tantivy's query parser (it raises on `a AND`, gives field access
with `chunk_id:*`, and overflows the stack on deep nesting): searches are built from terms.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from ragd.errors import StoreError

TEXT = "text"
IDENTIFIERS = "identifiers"
TITLE = "title"
# Tantivy's default is 128 MB; 64 MB and one indexing thread suit a 2-core host, and
# ragd's batches are a few thousand chunks per commit.
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1


class SchemaMismatch(Exception):
    """The index on disk was written with another schema."""


class FilterRefused(ValueError):
    """A doc_id filter Tantivy cannot compile (too large an automaton, bad syntax)."""


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How much BM25 over each field beside the text counts (0 leaves it out)."""

    identifiers: float
    title: float


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field(TEXT, stored=False, tokenizer_name="default")
    # Terms made (and lowercased) by ragd.stores.identifiers, joined with spaces.
    builder.add_text_field(IDENTIFIERS, stored=False, tokenizer_name="whitespace")
    # The document's title alone: a short field, so a page named after the query's word
    # scores high in it (BM25 normalises by field length).
    builder.add_text_field(TITLE, stored=False, tokenizer_name="default")
    return builder.build()


class Analyzer:
    """Tantivy's "default" tokenizer, for query text: SimpleTokenizer, RemoveLongFilter(40)
    and LowerCaser, so a query's terms are made exactly as the indexed text's."""

    def __init__(self) -> None:
        self._analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .build()
        )

    def terms(self, text: str) -> list[str]:
        """The tokens of `text`, in order, repeats included."""
        return list(self._analyzer.analyze(text))


def index_exists(directory: Path) -> bool:
    """Whether the directory holds a Tantivy index (of any schema)."""
    return directory.is_dir() and bool(tantivy.Index.exists(str(directory)))


def open_index(directory: Path, *, create: bool) -> TextIndex | None:
    """Open (or with `create`, create) the index; None if it is missing and not created.

    SchemaMismatch if it was written with another schema; StoreError for I/O trouble.
    """
    path = str(directory)
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not index_exists(directory):
            return None
        # Index(schema, path) opens an existing index and checks its schema against ours.
        return TextIndex(tantivy.Index(_schema(), path=path, reuse=True), directory)
    except OSError as exc:
        raise StoreError(f"cannot open the Tantivy index at {directory}: {exc}") from exc
    except ValueError as exc:
        # Only a schema mismatch warrants a rebuild; permission or I/O trouble does not.
        if "schema" in str(exc).lower():
            raise SchemaMismatch(str(exc)) from exc
        raise StoreError(
            f"cannot open the Tantivy index at {directory}: {exc}",
            hint="check the directory's permissions and the disk",
        ) from exc


def claim_index(directory: Path) -> None:
    """Prove no other process writes the index there, whatever its schema: take and
    release its writer lock."""
    if not index_exists(directory):
        return
    try:
        old = tantivy.Index.open(str(directory))  # with the schema it was written with
    except ValueError as exc:
        raise StoreError(f"cannot open the Tantivy index at {directory}: {exc}") from exc
    IndexWriter(_take_writer(old, directory), directory).close()


META_FILE = "meta.json"  # Tantivy's commit point: the segments (and deletes) a reader opens


@dataclass(frozen=True, slots=True)
class CommittedIndex:
    """One commit of an index: its meta.json, and the files of the segments it names."""

    meta: bytes
    files: tuple[str, ...]


def committed_index(directory: Path) -> CommittedIndex:
    """The files the index's current meta.json uses: each segment's `<id>.<ext>` files,
    and its `<id>.<opstamp>.del` when it has deletes (older .del files are garbage).
    Read from meta.json's documented format; the files of a background merge that has not
    committed are not named, so they are never copied half-written."""

    try:
        meta = (directory / META_FILE).read_bytes()
        segments = json.loads(meta)["segments"]
        names = {entry.name for entry in directory.iterdir()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read the Tantivy commit in {directory}: {exc}") from exc
    files: list[str] = []
    for segment in segments:
        stem = str(segment["segment_id"]).replace("-", "")
        deletes = segment.get("deletes")
        delete_file = None if not deletes else f"{stem}.{deletes['opstamp']}.del"
        for name in names:
            if name.startswith(stem + ".") and (not name.endswith(".del") or name == delete_file):
                files.append(name)
    return CommittedIndex(meta, tuple(sorted(files)))


def remove_index_files(directory: Path, *, keep: str) -> None:
    """Delete the index's files but `keep`; Tantivy's lock files stay (the OS lock is the
    lock, and deleting a lock file another process holds would defeat it)."""
    for entry in directory.iterdir():
        if entry.is_file() and not entry.name.endswith(".lock") and entry.name != keep:
            entry.unlink()


def _take_writer(index: tantivy.Index, directory: Path) -> tantivy.IndexWriter:
    try:
        return index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
    except ValueError as exc:
        if "LockBusy" in str(exc):
            raise StoreError(
                f"another process is writing the Tantivy index at {directory}",
                hint="stop the other ragd writer, or wait for it to finish",
            ) from exc
        raise StoreError(f"cannot write the Tantivy index at {directory}: {exc}") from exc


class TextIndex:
    """An open index: searches, counts, and its writer."""

    def __init__(self, index: tantivy.Index, directory: Path) -> None:
        self._index = index
        self._directory = directory

    def writer(self) -> IndexWriter:
        """Take the index's one writer (StoreError if another process holds it)."""
        return IndexWriter(_take_writer(self._index, self._directory), self._directory)

    def reload(self) -> None:
        """See the latest commit (a searcher otherwise shows the one it was made at)."""
        self._index.reload()

    def count(self) -> int:
        """The number of live (not deleted) documents."""
        return int(self._index.searcher().num_docs)

    def chunk_ids(self) -> Iterator[str]:
        """The stored chunk_id of every live document, in no set order."""
        searcher = self._index.searcher()
        total = searcher.num_docs
        if total == 0:
            return  # Tantivy panics on a search limit of 0
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        for _, address in hits:
            yield str(searcher.doc(address).get_first("chunk_id"))

    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, list[int]]:
        """The number of live documents, and how many live and deleted-but-unmerged
        documents hold each term in the text field (what BM25's IDF counts)."""
        searcher = self._index.searcher()
        return int(searcher.num_docs), [int(searcher.doc_freq(TEXT, t)) for t in terms]

    def search(
        self,
        terms: Sequence[str],
        *,
        weights: FieldWeights,
        limit: int,
        doc_pattern: str | None = None,
    ) -> list[tuple[str, float]]:
        """The `limit` best documents as (chunk_id, score), best first: BM25 of the terms
        over the text field, plus each other field's weight times BM25 over it (0 leaves
        that field out); a document matches any term. `doc_pattern`, a regular expression
        a document's whole doc_id must match, filters inside the search (it adds nothing
        to the score)."""
        searcher = self._index.searcher()
        total = searcher.num_docs
        if not terms or total == 0 or limit <= 0:
            return []
        schema = self._index.schema
        clauses = [tantivy.Query.term_query(schema, TEXT, term) for term in terms]
        for field, weight in ((IDENTIFIERS, weights.identifiers), (TITLE, weights.title)):
            if weight > 0:
                clauses += [
                    tantivy.Query.boost_query(tantivy.Query.term_query(schema, field, term), weight)
                    for term in terms
                ]
        query = tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in clauses])
        if doc_pattern is not None:
            try:
                within = tantivy.Query.regex_query(schema, "doc_id", doc_pattern)
            except ValueError as exc:
                raise FilterRefused(f"the filter cannot be searched: {exc}") from exc
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, tantivy.Query.const_score_query(within, 0.0)),
                    (tantivy.Occur.Must, query),
                ]
            )
        # Clamped: the top-k collector allocates for `limit`, and 0 would panic.
        hits = searcher.search(query, limit=min(limit, total), count=False).hits
        return [
            (str(searcher.doc(address).get_first("chunk_id")), float(score))
            for score, address in hits
        ]


class IndexWriter:
    """The index's writer: staged deletes and adds, published by `commit`. tantivy-py's
    writer must not be used by two threads at once; the caller serialises."""

    def __init__(self, writer: tantivy.IndexWriter, directory: Path) -> None:
        self._writer = writer
        self._directory = directory

    def commit(
        self, deletes: Sequence[tuple[str, str]], rows: Sequence[tuple[str, str, str, str, str]]
    ) -> None:
        """Stage `deletes` ((field, value) terms), then `rows` ((chunk_id, doc_id, text,
        identifiers, title)), and commit them as one. Deletes apply only to documents added
        before them, so the rows survive. On failure nothing is published: StoreError."""
        writer = self._writer
        try:
            for field, value in deletes:
                writer.delete_documents_by_term(field, value)
            for chunk_id, doc_id, text, identifiers, title in rows:
                document = tantivy.Document()
                document.add_text("chunk_id", chunk_id)
                document.add_text("doc_id", doc_id)
                document.add_text(TEXT, text)
                document.add_text(IDENTIFIERS, identifiers)
                document.add_text(TITLE, title)
                writer.add_document(document)
            writer.commit()
        except (ValueError, RuntimeError) as exc:
            # Drop the half-staged batch so the next commit does not publish it. A killed
            # writer cannot roll back; the StoreError below says why.
            with contextlib.suppress(ValueError, RuntimeError):
                writer.rollback()
            raise StoreError(f"cannot write the Tantivy index at {self._directory}: {exc}") from exc

    def close(self) -> None:
        """Finish merges and release the writer, and with it the OS lock, now (not at GC)."""
        try:
            self._writer.wait_merging_threads()  # consumes the writer
        except (ValueError, RuntimeError) as exc:
            raise StoreError(
                f"cannot close the Tantivy writer at {self._directory}: {exc}"
            ) from exc
