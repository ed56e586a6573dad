"""The data directory: where each store lives, and who may write to it.

Owns the layout of `data_dir` (state.db, lancedb/, tantivy/, the writer lock, the parse
guard's file) and the one writer's handles on the stores: the manifest, the first stage's
vectors, the keywords and, when the second stage is on, its vectors. LanceDB is opened
lazily: importing it costs about a second, which a run that changes nothing should not pay.
Each handle passes through a `Wrapper` (ragd.stores.wrapping) as it opens.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ragd.adapters.lancedb import VectorLocation
from ragd.errors import LockedError
from ragd.stores.keywords import KeywordRow, KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore
from ragd.stores.wrapping import Wrapper, unwrapped

KeywordRebuild = Callable[[ManifestReader], Iterable[KeywordRow]]
"""Every chunk the manifest lists as the keyword store indexes it, for a rebuild."""


@dataclass(frozen=True)
class DataDir:
    """Paths of everything ragd keeps under its data directory; with `storage_uri` (an
    "s3://bucket/prefix"), the LanceDB tables live there instead."""

    root: Path
    storage_uri: str | None = None

    @property
    def manifest(self) -> Path:
        return self.root / "state.db"

    @property
    def lancedb(self) -> VectorLocation:
        if self.storage_uri is not None:
            return f"{self.storage_uri}/lancedb"
        return self.root / "lancedb"

    @property
    def replica(self) -> Path:
        return self.root / "replica"  # written by ragd.stores.replica

    @property
    def tantivy(self) -> Path:
        return self.root / "tantivy"

    @property
    def lock(self) -> Path:
        return self.root / "writer.lock"

    @property
    def parsing(self) -> Path:
        return self.root / "parsing"  # written by ragd.indexing.parse_guard


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
    """The writer's handles on the stores; vectors and keywords open on first use.

    `keyword_rows` rebuilds a keyword index written with another schema from the manifest
    (how a chunk's indexed text is made is the indexer's business, not the stores');
    without it such an index is a StoreError. `second_table` names the second stage's
    vector table (ragd.stores.vectors.second_stage_table); None when it is off. Each
    handle is opened through `wrap`.
    """

    def __init__(
        self,
        data_dir: DataDir,
        *,
        keyword_rows: KeywordRebuild | None = None,
        second_table: str | None = None,
        wrap: Wrapper = unwrapped,
    ) -> None:
        self.paths = data_dir
        self.second_table = second_table
        self._keyword_rows = keyword_rows
        self._wrap = wrap
        local_vectors = data_dir.lancedb
        orphaned = not data_dir.manifest.exists() and (
            (isinstance(local_vectors, Path) and local_vectors.exists())
            or data_dir.tantivy.exists()
        )
        self.manifest = wrap(Manifest.open(data_dir.manifest))
        if orphaned:
            # Stores without the manifest that lists them: the first pass reconciles them
            # (drops what nothing lists) before it writes, since writes of documents the
            # manifest never listed are appends.
            self.manifest.set_meta("writer_clean", "0")
        self._vectors: VectorStore | None = None
        self._second: VectorStore | None = None
        self._keywords: KeywordStore | None = None

    def vectors(self, dim: int) -> VectorStore:
        """The LanceDB chunk table, created with `dim` if it does not exist. Opening it
        also drops the tables of second-stage models no longer configured (or of all, with
        the second stage off): their rows are derived, and nothing keeps them current."""
        if self._vectors is None:
            self._vectors = self._wrap(VectorStore.open(self.paths.lancedb, dim))
            self.drop_unused_second_stage_tables()
        return self._vectors

    def second_vectors(self, dim: int | None = None) -> VectorStore | None:
        """The second stage's vector table: None when the second stage is off, or when the
        table does not exist and no `dim` is given to create it."""
        if self.second_table is None:
            return None
        if self._second is None:
            directory, name = self.paths.lancedb, self.second_table
            if dim is None and name not in VectorStore.tables(directory):
                return None
            self._second = self._wrap(
                VectorStore.open(directory, dim, name=name)
                if dim is not None
                else VectorStore.open_existing(directory, name=name)
            )
        return self._second

    def vector_versions(self, dim: int) -> dict[str, int]:
        """The version of each vector table this writer has, by table name: what a
        published generation pins its readers to."""
        versions: dict[str, int] = {}
        for table in (self.vectors(dim), self.second_vectors()):
            if table is not None and (version := table.version()) is not None:
                versions[table.name] = version
        return versions

    def keep_published(self, oldest: Mapping[str, int], dim: int) -> None:
        """Keep, in every cleanup, the oldest version of each table a published generation
        names, and all newer ones (replicas may read them)."""
        for table in (self.vectors(dim), self.second_vectors()):
            if table is not None:
                table.oldest_published = oldest.get(table.name)

    def drop_unused_second_stage_tables(self) -> None:
        """Drop the vector tables of second-stage models no longer configured."""
        VectorStore.drop_second_stage_tables(self.paths.lancedb, keep=self.second_table)

    def keywords(self) -> KeywordStore:
        """The Tantivy index, with this process holding its writer."""
        if self._keywords is None:
            rows = self._keyword_rows
            self._keywords = self._wrap(
                KeywordStore.open(
                    self.paths.tantivy,
                    rebuild_from=None if rows is None else lambda: rows(self.manifest),
                )
            )
        return self._keywords

    def close(self) -> None:
        """Release Tantivy's writer and close the manifest."""
        if self._keywords is not None:
            self._keywords.close()
            self._keywords = None
        self.manifest.close()
