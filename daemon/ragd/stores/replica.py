"""A read replica's local copy of published generations (ragd.stores.publishing).

Owns `data_dir/replica/`: the Tantivy segment files downloaded once each
(`segments/`), and one folder per generation held (`<n>/state.db`, `<n>/tantivy/` whose
files are hard links to the shared segments plus that generation's meta.json). A
generation's folder is complete before `fetch` returns it; one left half-made by a crash
is made again. The LanceDB tables are not copied: a replica reads them on the object
store at the versions the generation names.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ragd.adapters.object_store import ObjectStore
from ragd.adapters.tantivy import META_FILE
from ragd.errors import StoreError
from ragd.stores.publishing import (
    GENERATION_FILE,
    MANIFEST_FILE,
    SEGMENTS,
    Generation,
    generation_dir,
    latest_generation,
)

COMPLETE = ".complete"  # written last into a generation's folder


@dataclass(frozen=True, slots=True)
class LocalGeneration:
    """A generation held on local disk, ready to open."""

    generation: Generation
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    @property
    def tantivy(self) -> Path:
        return self.root / "tantivy"


class Replica:
    """Downloads generations from one store into one local folder."""

    def __init__(self, store: ObjectStore, root: Path) -> None:
        self.store = store
        self.root = root
        self._segments = root / "segments"

    def latest(self) -> int | None:
        """The newest complete generation published; None before the first."""
        return latest_generation(self.store)

    def fetch(self, number: int) -> LocalGeneration:
        """Generation `number` on local disk, downloading what is not there yet.

        StoreError if the store no longer holds it (the writer has moved KEEP generations
        on meanwhile): the caller asks for the latest again.
        """
        folder = self.root / f"{number:012d}"
        if (folder / COMPLETE).exists():
            raw = (folder / GENERATION_FILE).read_bytes()
            return LocalGeneration(Generation.from_json(raw), folder)
        shutil.rmtree(folder, ignore_errors=True)
        remote = generation_dir(number)
        raw_generation = self.store.get_bytes(f"{remote}/{GENERATION_FILE}")
        if raw_generation is None:
            raise StoreError(f"generation {number} is no longer published")
        generation = Generation.from_json(raw_generation)
        tantivy = folder / "tantivy"
        tantivy.mkdir(parents=True)
        self._segments.mkdir(parents=True, exist_ok=True)
        for name in generation.segments:
            shared = self._segments / name
            if not shared.exists():
                self.store.get_file(f"{SEGMENTS}/{name}", shared)
            os.link(shared, tantivy / name)
        self.store.get_file(f"{remote}/{META_FILE}", tantivy / META_FILE)
        self.store.get_file(f"{remote}/{MANIFEST_FILE}", folder / MANIFEST_FILE)
        (folder / GENERATION_FILE).write_bytes(raw_generation)
        (folder / COMPLETE).touch()
        return LocalGeneration(generation, folder)

    def prune(self, keep: set[int]) -> None:
        """Delete the generations not in `keep`, and segments none of those links to."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if entry.name.isdigit() and int(entry.name) not in keep:
                shutil.rmtree(entry, ignore_errors=True)
        if self._segments.is_dir():
            for segment in self._segments.iterdir():
                if segment.stat().st_nlink == 1:  # linked from no generation held
                    segment.unlink(missing_ok=True)
