"""The keyword store: a Tantivy BM25 index over chunk texts, derived from the manifest.

Owns `data_dir/tantivy/` and what its documents mean. Each is one chunk: its chunk_id and
doc_id, its labelled text (indexed, not stored: the manifest holds texts) with its words
written with a bracketed letter added whole (`E[x]tract` as `extract`), its identifier
terms (`ragd.stores.identifiers`: `status_code` whole, `HTTPException` as `http` +
`exception`), which the default tokenizer cannot produce, and its document's title.
Everything here can be rebuilt. Every call into Tantivy goes through `ragd.adapters.tantivy`.

Tantivy allows one writer per directory across processes; the OS lock behind it is the
lock. This module never deletes or inspects lock files: after a crash the OS has released it.
A query is tokenized like the indexed text and searched as a flat OR of its terms, so any
text is safe. An index written with another schema (an older ragd) is rebuilt from the
manifest's chunks when the writer opens it; texts are in the manifest, so nothing is
re-embedded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragd.adapters.tantivy import (
    Analyzer,
    FieldWeights,
    FilterRefused,
    IndexWriter,
    SchemaMismatch,
    TextIndex,
    claim_index,
    index_exists,
    open_index,
    remove_index_files,
)
from ragd.errors import QueryRefused, StoreError
from ragd.stores.identifiers import bracketed_words, identifier_terms

# Defensive caps on query text; the caller caps length too. 64 distinct terms is far beyond a
# real question and bounds the boolean query's size.
MAX_QUERY_CHARS = 10_000
MAX_QUERY_TERMS = 64
# The identifier field counts a quarter of the text field: on fastapi-docs (docs/retrieval.md)
# 0.25 and 0.5 both lifted recall@1, while 1.0 also lifted negatives' BM25 scores past the
# abstention threshold.
IDENTIFIER_WEIGHT = 0.25
# The title field counts half the text field: a page titled `tar` then wins "tar extract"
# over pages that only mention tar (docs/retrieval.md measures 0.25, 0.5 and 1.0).
TITLE_WEIGHT = 0.5
# Written while an index of another schema is replaced; its presence means "start over".
REBUILD_MARKER = "ragd-rebuilding"
REBUILD_BATCH = 5_000
_OTHER_SCHEMA_HINT = "its schema is from another ragd version: run `ragd index` to rebuild it"


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """One chunk to index: the text is indexed for BM25, not stored; so is `title`, its
    document's. `identifiers` is `" ".join(identifier_terms(text))` when the caller has it
    already."""

    chunk_id: str
    doc_id: str
    text: str
    identifiers: str | None = None
    title: str = ""


class KeywordStore:
    """The Tantivy BM25 index of chunk texts; build with `open` (writer) or `open_readonly`."""

    def __init__(
        self, directory: Path, index: TextIndex | None, writer: IndexWriter | None
    ) -> None:
        self._directory = directory
        self._index = index
        self._writer = writer
        self._writable = writer is not None
        self._analyzer = Analyzer()
        # The writer must not be used by two threads at once.
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
            index = open_index(directory, create=True)
        except SchemaMismatch as exc:
            if rebuild_from is None:
                raise StoreError(
                    f"cannot open the Tantivy index at {directory}: {exc}", hint=_OTHER_SCHEMA_HINT
                ) from exc
            index = None
        if index is not None and not (marker.exists() and rebuild_from is not None):
            return cls(directory, index, index.writer())
        assert rebuild_from is not None
        claim_index(directory)
        # From here until the refill commits, a crash must not leave a half-empty index
        # that looks complete: the marker makes the next open start over.
        marker.touch()
        remove_index_files(directory, keep=REBUILD_MARKER)
        index = open_index(directory, create=True)
        assert index is not None
        store = cls(directory, index, index.writer())
        store._refill(rebuild_from())
        marker.unlink()
        return store

    def _refill(self, rows: Iterable[KeywordRow]) -> None:
        batch: list[KeywordRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= REBUILD_BATCH:
                self._commit((), batch)
                batch = []
        self._commit((), batch)

    @classmethod
    def open_readonly(cls, directory: Path) -> KeywordStore:
        """Open for searching without a writer; creates nothing. A missing index reads as empty.

        StoreError if the index has another schema: the writer rebuilds it on its next open.
        """
        try:
            return cls(directory, open_index(directory, create=False), None)
        except SchemaMismatch as exc:
            raise StoreError(
                f"cannot open the Tantivy index at {directory}: {exc}", hint=_OTHER_SCHEMA_HINT
            ) from exc

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
        fresh = set(new)
        self._commit(
            [("doc_id", d) for d in docs - fresh]
            + [("chunk_id", r.chunk_id) for r in rows if r.doc_id not in fresh],
            rows,
        )

    def delete_chunks(self, chunk_ids: Collection[str]) -> None:
        """Delete chunks by id in one commit."""
        ids = set(chunk_ids)
        if ids:
            self._commit([("chunk_id", c) for c in ids], ())

    def _commit(self, deletes: Sequence[tuple[str, str]], rows: Sequence[KeywordRow]) -> None:
        with self._write_lock:
            if self._writer is None:
                state = "closed" if self._writable else "opened read-only"
                raise StoreError(f"the Tantivy index at {self._directory} was {state}")
            assert self._index is not None
            self._writer.commit(
                deletes,
                [
                    (
                        row.chunk_id,
                        row.doc_id,
                        _with_bracketed_words(row.text),
                        row.identifiers
                        if row.identifiers is not None
                        else " ".join(identifier_terms(row.text)),
                        row.title,
                    )
                    for row in rows
                ],
            )
            # Right after a commit the searcher still shows the previous one for ~1 s.
            self._index.reload()

    def chunk_ids(self) -> set[str]:
        """Every chunk id in the index, read from the stored fields of all live documents."""
        return set(self.iter_chunk_ids())

    def iter_chunk_ids(self) -> Iterator[str]:
        """Every chunk id in the index, one at a time, in no set order."""
        return iter(()) if self._index is None else self._index.chunk_ids()

    def count(self) -> int:
        """The number of live (not deleted) chunks."""
        return 0 if self._index is None else self._index.count()

    def query_terms(self, query: str) -> list[str]:
        """The distinct index terms of `query`, in order, at most MAX_QUERY_TERMS."""
        tokens = self._analyzer.terms(query[:MAX_QUERY_CHARS])
        return list(dict.fromkeys(tokens))[:MAX_QUERY_TERMS]

    def identifier_terms(self, query: str) -> list[str]:
        """The distinct identifier-field terms of `query`, at most MAX_QUERY_TERMS."""
        return list(dict.fromkeys(identifier_terms(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_TERMS]

    def search(
        self,
        query: str,
        limit: int,
        *,
        identifier_weight: float = IDENTIFIER_WEIGHT,
        title_weight: float = TITLE_WEIGHT,
        doc_pattern: str | None = None,
    ) -> list[tuple[str, float]]:
        """The `limit` best chunks for `query` as (chunk_id, BM25 score), best first.

        The query's default and identifier terms are searched in every field; the score
        is BM25 over the text plus `identifier_weight` times BM25 over the identifier
        terms and `title_weight` times BM25 over the title (0 leaves a field out). Only
        chunks whose doc_id matches `doc_pattern` (a regular expression over the whole id)
        are searched, when given; QueryRefused if Tantivy cannot compile it. Any text is
        safe: it is tokenized, never parsed, and matches any of its terms.
        """
        if self._index is None or limit <= 0:
            return []
        terms = self.query_terms(query)
        if not terms:
            return []
        # Every field gets every term: a query's parts (`http` of `HTTPException`) must
        # find prose that spells them out, and its plain words must find the parts of names.
        terms = list(dict.fromkeys(terms + self.identifier_terms(query)))[:MAX_QUERY_TERMS]
        weights = FieldWeights(identifiers=identifier_weight, title=title_weight)
        try:
            return self._index.search(terms, weights=weights, limit=limit, doc_pattern=doc_pattern)
        except FilterRefused as exc:
            raise QueryRefused(str(exc), hint="use a simpler path pattern") from exc

    def in_corpus(self, term: str) -> bool:
        """Whether any chunk's text holds `term` (an index term: lowercase, one token)."""
        return self.document_frequencies([term])[1][0] > 0

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, list[int]]:
        """The number of chunks, and how many hold each term in their text (0 for all
        when there is no index)."""
        if self._index is None:
            return 0, [0] * len(terms)
        return self._index.doc_freqs(terms)

    def refresh(self) -> None:
        """Reload so this handle sees the latest commit (also finds a newly created index)."""
        if self._index is not None:
            self._index.reload()
        elif not self._writable and index_exists(self._directory):
            self._index = open_index(self._directory, create=False)

    def close(self) -> None:
        """Release the writer and with it the OS lock. Idempotent; searching still works."""
        with self._write_lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()


def _with_bracketed_words(text: str) -> str:
    """The text as the text field indexes it: with its bracketed-letter words whole too."""
    words = bracketed_words(text)
    return f"{text}\n{' '.join(words)}" if words else text
