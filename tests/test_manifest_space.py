"""The manifest gives back the space of deleted rows: cached vectors pruned, file vacuumed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _filled(tmp_path: Path, vectors: int) -> Manifest:
    manifest = Manifest.open(tmp_path / "state.db")
    rng = np.random.default_rng(0)
    manifest.store_vectors(
        {f"key-{n}": rng.standard_normal(256).astype(np.float32) for n in range(vectors)}
    )
    return manifest


def test_pruned_vectors_leave_free_pages_that_reclaim_space_returns(tmp_path: Path) -> None:
    manifest = _filled(tmp_path, 5000)
    manifest.reclaim_space()  # nothing free yet: a no-op
    before = _size(manifest.path)

    assert manifest.prune_vectors() == 5000  # no chunk uses any of them
    assert manifest.reclaim_space() is True

    assert _size(manifest.path) < before * 0.2
    manifest.close()


def test_reclaim_space_leaves_a_file_with_little_free_space_alone(tmp_path: Path) -> None:
    manifest = _filled(tmp_path, 2000)

    assert manifest.reclaim_space() is False
    manifest.close()


def test_a_reader_keeps_reading_while_the_writer_vacuums(tmp_path: Path) -> None:
    manifest = _filled(tmp_path, 3000)
    reader = ManifestReader.open(manifest.path)
    manifest.prune_vectors()

    assert manifest.reclaim_space() is True
    assert list(reader.documents()) == []
    reader.close()
    manifest.close()
