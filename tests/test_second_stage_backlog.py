"""Which chunks still wait for a second-stage vector is a flag the manifest's triggers keep
(schema 5): the filler's work, its backlog and the report's coverage read it through
partial indexes, and it always says what joining every chunk to the stored vectors says."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_schema import SCHEMA_VERSION, has_second_pending
from ragd.stores.records import ChunkRecord, DocumentWrite, doc_id_of

VECTOR = np.ones(4, dtype=np.float32)


def _write(manifest: Manifest, doc: str, seconds: list[str | None], source: str = "docs") -> None:
    chunks = tuple(
        ChunkRecord(f"{doc}#{n}", f"{source}:{doc}", n, ("T",), f"{doc} {n}", f"e-{doc}-{n}", key)
        for n, key in enumerate(seconds)
    )
    doc_id = doc_id_of(source, doc)
    write = DocumentWrite(doc_id, source, doc, f"file:///{doc}", "indexed", chunks=chunks)
    manifest.commit([write], checked_at="2026-01-01T00:00:00Z")


def _joined(path: Path) -> set[str]:
    """The chunks without a stored second-stage vector, by the join the flag replaces."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT chunk_id FROM chunks c WHERE second_key IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.embed_key = c.second_key)"
        )
        return {row[0] for row in rows}
    finally:
        conn.close()


def _flagged(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {
            row[0] for row in conn.execute("SELECT chunk_id FROM chunks WHERE second_pending = 1")
        }
    finally:
        conn.close()


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    return Manifest.open(tmp_path / "state.db")


def test_a_chunk_waits_until_its_vector_is_stored(manifest: Manifest) -> None:
    _write(manifest, "a.md", ["s1", "s2"])
    assert _flagged(manifest.path) == {"a.md#0", "a.md#1"}

    manifest.store_vectors({"s1": VECTOR})

    assert _flagged(manifest.path) == {"a.md#1"} == _joined(manifest.path)


def test_a_chunk_whose_vector_is_already_stored_never_waits(manifest: Manifest) -> None:
    manifest.store_vectors({"s1": VECTOR})

    _write(manifest, "a.md", ["s1", None])

    assert _flagged(manifest.path) == set() == _joined(manifest.path)


def test_re_keying_a_chunk_flags_it_by_its_new_key(manifest: Manifest) -> None:
    manifest.store_vectors({"s1": VECTOR})
    _write(manifest, "a.md", ["s1"])

    manifest.switch_embeddings([("a.md#0", "e-new", "s-new")], [("docs:a.md", "fp")])
    assert _flagged(manifest.path) == {"a.md#0"}
    manifest.switch_embeddings([("a.md#0", "e-new", "s1")], [("docs:a.md", "fp")])
    assert _flagged(manifest.path) == set() == _joined(manifest.path)


def test_a_vector_removed_by_hand_flags_its_chunks_again(manifest: Manifest) -> None:
    manifest.store_vectors({"s1": VECTOR})
    _write(manifest, "a.md", ["s1"])

    conn = sqlite3.connect(manifest.path)
    with conn:
        conn.execute("DELETE FROM vectors WHERE embed_key = 's1'")
    conn.close()

    assert _flagged(manifest.path) == {"a.md#0"} == _joined(manifest.path)


def test_coverage_and_backlog_read_the_flag_as_the_join_would(manifest: Manifest) -> None:
    manifest.store_vectors({"s1": VECTOR})
    _write(manifest, "a.md", ["s1", "s2", "s3"])
    _write(manifest, "b.md", [None, None])  # written with the second stage off
    _write(manifest, "post", ["s1", "s4"], source="cms")

    reader = ManifestReader.open(manifest.path)
    try:
        coverage = reader.second_stage_coverage()
        missing = {w.chunk_id for w in reader.second_stage_missing(10)}
        count = reader.second_stage_missing_count()
    finally:
        reader.close()

    assert coverage == {"docs": (1, 3), "cms": (1, 2)}
    assert missing == _joined(manifest.path) == {"a.md#1", "a.md#2", "post#1"}
    assert count == 3


def test_the_first_writer_after_an_upgrade_flags_what_waits(manifest: Manifest) -> None:
    manifest.store_vectors({"s1": VECTOR})
    _write(manifest, "a.md", ["s1", "s2"])
    path = manifest.path
    manifest.close()
    conn = sqlite3.connect(path)
    with conn:
        for name in ("chunks_second_pending", "chunks_without_second"):
            conn.execute(f"DROP INDEX {name}")
        for name in ("chunk_awaits_second", "chunk_rekeyed", "vector_stored", "vector_dropped"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("ALTER TABLE chunks DROP COLUMN second_pending")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    reader = ManifestReader.open(path)  # before the writer: the join
    assert reader.second_stage_coverage() == {"docs": (1, 2)}
    reader.close()

    Manifest.open(path).close()

    conn = sqlite3.connect(path)
    assert has_second_pending(conn)
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    assert _flagged(path) == {"a.md#1"}
    assert version == str(SCHEMA_VERSION)
