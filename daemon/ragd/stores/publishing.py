"""Publishing the stores for read replicas: numbered generations on object storage.

Owns the layout replicas read under the storage URI and the writer's side of it. The
LanceDB tables already live there (`lancedb/`); what a replica also needs is the text
index and the manifest of the same moment, and the table versions that go with them:

    published/segments/<file>        Tantivy segment files; immutable, shared by generations
    published/<n>/state.db           the manifest, a consistent snapshot (SQLite's backup API)
    published/<n>/meta.json          Tantivy's commit point of that moment
    published/<n>/generation.json    what generation n is: its files, table versions, time
    published/LATEST                 {"generation": n}, written last

Every object of generation n is written before LATEST names it, and an S3 PUT replaces an
object whole, so a replica that reads LATEST never sees half a generation. The writer
publishes between commits (on its own thread), so the three stores it copies agree. The
newest KEEP generations stay; a segment no kept generation names is deleted.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ragd.adapters.object_store import ObjectStore
from ragd.adapters.tantivy import META_FILE, committed_index
from ragd.errors import StoreError
from ragd.stores.records import format_time

ROOT = "published"
SEGMENTS = f"{ROOT}/segments"
LATEST = f"{ROOT}/LATEST"
MANIFEST_FILE = "state.db"
GENERATION_FILE = "generation.json"
# Generations kept for replicas still reading an older one (each holds only a manifest
# snapshot and a meta.json; segments are shared).
KEEP = 3
# A background merge can retire the segments named by the meta.json just read; read the
# commit again this many times.
ATTEMPTS = 3


def generation_dir(number: int) -> str:
    """The folder of generation `number` under the storage URI."""
    return f"{ROOT}/{number:012d}"


@dataclass(frozen=True, slots=True)
class Generation:
    """What a published generation holds (its generation.json)."""

    number: int
    published_at: str
    segments: tuple[str, ...]
    vector_versions: Mapping[str, int]

    def to_json(self) -> dict[str, object]:
        return {
            "generation": self.number,
            "published_at": self.published_at,
            "segments": list(self.segments),
            "vector_versions": dict(self.vector_versions),
        }

    @classmethod
    def from_json(cls, raw: bytes) -> Generation:
        """Parse a generation.json; StoreError if it is not one."""
        try:
            data = json.loads(raw)
            return cls(
                number=int(data["generation"]),
                published_at=str(data["published_at"]),
                segments=tuple(str(name) for name in data["segments"]),
                vector_versions={str(k): int(v) for k, v in data["vector_versions"].items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"a published generation.json is damaged: {exc}") from exc


def latest_generation(store: ObjectStore) -> int | None:
    """The newest complete generation's number; None before the first is published."""
    raw = store.get_bytes(LATEST)
    if raw is None:
        return None
    try:
        return int(json.loads(raw)["generation"])
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{store.location.uri}/{LATEST} is damaged: {exc}") from exc


def snapshot_manifest(manifest: Path, target: Path) -> None:
    """Copy the manifest as of one transaction to `target` with SQLite's online backup,
    without the first stage's cached vectors (LanceDB holds them; a replica never reads
    them): the snapshot is a fraction of the file. Second-stage vectors stay: queries
    re-score candidates with them."""
    try:
        source = sqlite3.connect(f"file:{manifest}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot snapshot the manifest {manifest}: {exc}") from exc
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
        copy.execute(
            "DELETE FROM vectors WHERE embed_key NOT IN "
            "(SELECT second_key FROM chunks WHERE second_key IS NOT NULL)"
        )
        copy.commit()
        copy.execute("PRAGMA journal_mode = DELETE")
        copy.execute("VACUUM")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot snapshot the manifest {manifest}: {exc}") from exc
    finally:
        copy.close()
        source.close()


class Publisher:
    """The writer's side: publishes generation after generation under one store."""

    def __init__(
        self,
        store: ObjectStore,
        manifest: Path,
        tantivy: Path,
    ) -> None:
        self.store = store
        self._manifest = manifest
        self._tantivy = tantivy
        self._uploaded = {name.removeprefix(SEGMENTS + "/") for name in store.names(SEGMENTS)}
        self.last = latest_generation(store) or 0
        self._kept = self._published_before(self.last + 1)

    def oldest_versions(self) -> dict[str, int]:
        """Per vector table, the oldest version a kept generation names: the writer's
        cleanups keep it (`WriterStores.keep_published`)."""
        oldest: dict[str, int] = {}
        for generation in self._kept:
            for table, version in generation.vector_versions.items():
                oldest[table] = min(version, oldest.get(table, version))
        return oldest

    def publish(self, vector_versions: Mapping[str, int]) -> Generation:
        """Publish the stores as they are now (the caller is between commits) as the next
        generation; returns it. StoreError when the store refuses a write: nothing a
        replica reads changes until LATEST is written, so a failed publish is retried whole."""
        number = self.last + 1
        folder = generation_dir(number)
        committed = committed_index(self._tantivy)
        for attempt in range(ATTEMPTS):
            try:
                self._upload_segments(committed.files)
                break
            except FileNotFoundError:  # a merge retired a segment: read the new commit
                if attempt == ATTEMPTS - 1:
                    raise StoreError("the Tantivy index kept changing while publishing") from None
                committed = committed_index(self._tantivy)
        with tempfile.TemporaryDirectory(prefix="ragd-publish-") as scratch:
            snapshot = Path(scratch) / MANIFEST_FILE
            snapshot_manifest(self._manifest, snapshot)
            self.store.put_file(f"{folder}/{MANIFEST_FILE}", snapshot)
        self.store.put_bytes(f"{folder}/{META_FILE}", committed.meta)
        generation = Generation(
            number, format_time(datetime.now(UTC)), committed.files, dict(vector_versions)
        )
        self.store.put_bytes(
            f"{folder}/{GENERATION_FILE}", json.dumps(generation.to_json()).encode()
        )
        self.store.put_bytes(LATEST, json.dumps({"generation": number}).encode())
        self.last = number
        self._forget_old(generation)
        return generation

    def _upload_segments(self, files: tuple[str, ...]) -> None:
        for name in files:
            if name not in self._uploaded:
                path = self._tantivy / name
                try:
                    self.store.put_file(f"{SEGMENTS}/{name}", path)
                except StoreError:
                    if not path.exists():  # retired by a merge meanwhile
                        raise FileNotFoundError(path) from None
                    raise
                self._uploaded.add(name)

    def _forget_old(self, newest: Generation) -> None:
        """Delete generations older than the newest KEEP, and segments none of those names."""
        self._kept.append(newest)
        old, self._kept = self._kept[:-KEEP], self._kept[-KEEP:]
        for generation in old:
            self.store.delete(self.store.names(generation_dir(generation.number)))
        named = {name for generation in self._kept for name in generation.segments}
        unused = sorted(self._uploaded - named)
        self.store.delete(f"{SEGMENTS}/{name}" for name in unused)
        self._uploaded -= set(unused)

    def _published_before(self, number: int) -> list[Generation]:
        numbers = sorted(
            {
                int(part)
                for name in self.store.names(ROOT)
                if (part := name.split("/")[1]).isdigit() and int(part) < number
            }
        )
        found = []
        for n in numbers:
            raw = self.store.get_bytes(f"{generation_dir(n)}/{GENERATION_FILE}")
            if raw is None:  # never completed: its objects are garbage
                self.store.delete(self.store.names(generation_dir(n)))
            else:
                found.append(Generation.from_json(raw))
        return found
