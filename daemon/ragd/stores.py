"""The data directory: where each store lives, who may write, and whether they agree.

Owns the layout of `data_dir` (state.db, lancedb/, tantivy/, the writer lock), opening
the three stores for the one writer or for readers, reconciliation after a crash, and
the agreement check that `ragd status` reports. LanceDB is opened lazily: importing it
costs about a second, which a run that changes nothing should not pay.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ragd.chunking import labelled_text
from ragd.errors import LockedError
from ragd.keywords import KeywordRow, KeywordStore
from ragd.manifest import Manifest
from ragd.manifest_reader import ManifestReader
from ragd.vectors import VectorStore


@dataclass(frozen=True)
class DataDir:
    """Paths of everything ragd keeps under its data directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "state.db"

    @property
    def lancedb(self) -> Path:
        return self.root / "lancedb"

    @property
    def tantivy(self) -> Path:
        return self.root / "tantivy"

    @property
    def lock(self) -> Path:
        return self.root / "writer.lock"

    @property
    def parsing(self) -> Path:
        return self.root / "parsing"  # ragd.parse_guard


class WriterLock:
    """An exclusive flock on data_dir/writer.lock: one writer process per data directory.

    The OS releases it when the process dies, so a crash never leaves a stale lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise LockedError naming the holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise LockedError(
                f"another ragd process (pid {holder}) is writing to {self.path.parent}",
                hint="stop it first, or use its HTTP API; queries and status work meanwhile",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        """Release the lock."""
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


class WriterStores:
    """The writer's handles on the three stores; vectors and keywords open on first use."""

    def __init__(self, data_dir: DataDir) -> None:
        self.paths = data_dir
        orphaned = not data_dir.manifest.exists() and (
            data_dir.lancedb.exists() or data_dir.tantivy.exists()
        )
        self.manifest = Manifest.open(data_dir.manifest)
        if orphaned:
            # Stores without the manifest that lists them: the first pass reconciles them
            # (drops what nothing lists) before it writes, since writes of documents the
            # manifest never listed are appends.
            self.manifest.set_meta("writer_clean", "0")
        self._vectors: VectorStore | None = None
        self._keywords: KeywordStore | None = None

    def vectors(self, dim: int) -> VectorStore:
        """The LanceDB chunk table, created with `dim` if it does not exist."""
        if self._vectors is None:
            self._vectors = VectorStore.open(self.paths.lancedb, dim)
        return self._vectors

    def keywords(self) -> KeywordStore:
        """The Tantivy index, with this process holding its writer."""
        if self._keywords is None:
            self._keywords = KeywordStore.open(
                self.paths.tantivy, rebuild_from=lambda: manifest_keyword_rows(self.manifest)
            )
        return self._keywords

    def close(self) -> None:
        """Release Tantivy's writer and close the manifest."""
        if self._keywords is not None:
            self._keywords.close()
            self._keywords = None
        self.manifest.close()


def manifest_keyword_rows(manifest: ManifestReader) -> Iterator[KeywordRow]:
    """Every chunk the manifest lists, as the keyword store indexes it (for a rebuild)."""
    for document in manifest.documents():
        for chunk in manifest.chunks_of(document.doc_id):
            text = labelled_text(document.title, chunk.heading_path, chunk.text)
            yield KeywordRow(chunk.chunk_id, chunk.doc_id, text)


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
        }


def compare_stores(
    manifest: ManifestReader, vectors: VectorStore, keywords: KeywordStore
) -> Agreement:
    """Compare the chunk id sets of the manifest and both search stores."""
    return compare_ids(manifest.chunk_ids(), vectors.chunk_ids(), keywords.chunk_ids())


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
