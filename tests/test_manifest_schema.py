"""state.db written by a ragd before the second stage and pages (schema 1): readers still
read it, and the first writer to open it adds the second-stage key and page columns without
losing a row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ragd.stores.manifest import Manifest
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.manifest_schema import SCHEMA_VERSION, has_pages, has_second_keys


@pytest.fixture
def schema_1(tmp_path: Path) -> Path:
    """A manifest as schema 1 made it: chunks without second_key, one document, one chunk."""
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE documents (
            doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, key TEXT NOT NULL, uri TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '', size INTEGER, mtime_ns INTEGER, content_hash TEXT,
            fingerprint TEXT, status TEXT NOT NULL, error TEXT, first_seen_at TEXT NOT NULL,
            indexed_at TEXT, checked_at TEXT);
        CREATE TABLE chunks (
            chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
            heading_path TEXT NOT NULL, text TEXT NOT NULL, embed_key TEXT NOT NULL);
        CREATE TABLE vectors (embed_key TEXT PRIMARY KEY, vector BLOB NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        INSERT INTO documents (doc_id, source, key, uri, status, first_seen_at)
            VALUES ('docs:a.md', 'docs', 'a.md', 'file:///a.md', 'indexed', '2026-01-01');
        INSERT INTO chunks VALUES ('c1', 'docs:a.md', 0, '["A"]', 'text', 'k1');
        """
    )
    conn.commit()
    conn.close()
    return path


def test_a_reader_reads_a_schema_1_manifest(schema_1: Path) -> None:
    reader = ManifestReader.open(schema_1)

    assert reader.chunks(["c1"])["c1"].second_key is None
    assert reader.chunks(["c1"])["c1"].page is None
    assert reader.second_stage_missing(10) == []
    assert reader.second_stage_coverage() == {}


def test_the_first_writer_adds_the_second_key_column_and_keeps_every_row(schema_1: Path) -> None:
    Manifest.open(schema_1).close()

    conn = sqlite3.connect(schema_1)
    assert has_second_keys(conn)
    assert conn.execute("SELECT chunk_id, second_key FROM chunks").fetchall() == [("c1", None)]
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


def test_the_first_writer_adds_the_page_column_and_keeps_every_row(schema_1: Path) -> None:
    Manifest.open(schema_1).close()

    conn = sqlite3.connect(schema_1)
    assert has_pages(conn)
    assert conn.execute("SELECT chunk_id, page FROM chunks").fetchall() == [("c1", None)]


def test_the_first_writer_adds_an_empty_includes_table(schema_1: Path) -> None:
    manifest = Manifest.open(schema_1)
    try:
        assert manifest.include_digests("docs") == []
        assert not manifest.is_included("docs", "docs_src/app.py")
    finally:
        manifest.close()
