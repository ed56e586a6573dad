"""Tests for ragd.stores.publishing: generations of the real stores on a real S3 server.

The stores are built by the real indexer (`ragd index`, in-process) over a few fastapi-docs
pages, with [storage] uri set so the LanceDB tables live on SeaweedFS and `ragd index`
publishes generation 1; later generations are published by a Publisher beside the writer.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.adapters.object_store import ObjectLocation, ObjectStore, object_store
from ragd.adapters.tantivy import META_FILE
from ragd.cli import main
from ragd.config import load_config
from ragd.errors import StoreError
from ragd.service.runtime import Runtime
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.publishing import (
    GENERATION_FILE,
    KEEP,
    LATEST,
    MANIFEST_FILE,
    ROOT,
    SEGMENTS,
    Generation,
    Publisher,
    generation_dir,
    latest_generation,
    snapshot_manifest,
)
from ragd.stores.replica import Replica
from tests.conftest import FASTAPI_DOCS, storage_section, write_config

TUTORIAL = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial"
PAGES = ("body-fields.md", "cookie-params.md", "header-params.md")


@dataclass(frozen=True)
class Indexed:
    """A data_dir indexed by `ragd index` with its stores at `uri` (generation 1 published)."""

    config: Path
    docs: Path
    uri: str
    runtime: Runtime

    @property
    def manifest(self) -> Path:
        return self.runtime.data_dir.manifest

    @property
    def tantivy(self) -> Path:
        return self.runtime.data_dir.tantivy

    @property
    def store(self) -> ObjectStore:
        return object_store(self.uri)

    def publisher(self) -> Publisher:
        publisher = self.runtime.publisher()
        assert publisher is not None
        return publisher

    def edit(self, word: str) -> None:
        """Add a section naming `word` to the first page."""
        page = self.docs / PAGES[0]
        page.write_text(page.read_text() + f"\n\n## {word.title()}\n\nThe {word} option.\n")

    def reindex_and_publish(self, publisher: Publisher) -> Generation:
        """Index what changed, then publish between commits, as the writer does."""
        with self.runtime.indexer() as indexer:
            indexer.run()
            return publisher.publish(indexer.stores.vector_versions(self.runtime.embedder.dim))

    def vector_versions(self) -> dict[str, int]:
        with self.runtime.indexer() as indexer:
            return indexer.stores.vector_versions(self.runtime.embedder.dim)


def index_published(directory: Path, uri: str) -> Indexed:
    """Copy a few pages, run `ragd index` with [storage] uri = `uri`."""
    docs = directory / "docs"
    docs.mkdir(parents=True)
    for name in PAGES:
        shutil.copyfile(TUTORIAL / name, docs / name)
    config = write_config(directory, docs, sections=storage_section(uri))
    assert main(["--config", str(config), "index"]) == 0
    return Indexed(config, docs, uri, Runtime.from_config(load_config(config)))


def stored_generation(store: ObjectStore, number: int) -> Generation:
    raw = store.get_bytes(f"{generation_dir(number)}/{GENERATION_FILE}")
    assert raw is not None, f"generation {number} is not on the store"
    return Generation.from_json(raw)


def generation_folders(store: ObjectStore) -> set[int]:
    """The numbers of the generation folders on the store."""
    parts = {name.split("/")[1] for name in store.names(ROOT)}
    return {int(part) for part in parts if part.isdigit()}


def keyword_chunk_ids(tantivy: Path) -> set[str]:
    keywords = KeywordStore.open_readonly(tantivy)
    try:
        return keywords.chunk_ids()
    finally:
        keywords.close()


def manifest_chunk_ids(manifest: Path) -> set[str]:
    reader = ManifestReader.open(manifest)
    try:
        return reader.chunk_ids()
    finally:
        reader.close()


def count(database: Path, sql: str) -> int:
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        return int(conn.execute(sql).fetchone()[0])


class CountingStore(ObjectStore):
    """The real store, recording the names it reads and uploads."""

    def __init__(self, uri: str) -> None:
        super().__init__(ObjectLocation(uri))
        self.gets: list[str] = []
        self.uploads: list[str] = []

    def get_bytes(self, name: str) -> bytes | None:
        self.gets.append(name)
        return super().get_bytes(name)

    def get_file(self, name: str, local: Path) -> None:
        self.gets.append(name)
        super().get_file(name, local)

    def put_file(self, name: str, local: Path) -> None:
        self.uploads.append(name)
        super().put_file(name, local)


class Crash(Exception):
    """The publisher's write of LATEST failed."""


class LatestFails(ObjectStore):
    """The real store, failing to write LATEST: a crash between a generation's objects
    and the name that publishes them."""

    def put_bytes(self, name: str, data: bytes) -> None:
        if name == LATEST:
            raise Crash
        super().put_bytes(name, data)


@pytest.fixture
def indexed(tmp_path: Path, s3_uri: str) -> Indexed:
    return index_published(tmp_path, s3_uri)


# --- what `ragd index` publishes --------------------------------------------------------------


def test_index_publishes_generation_1_that_a_replica_fetches_and_opens(
    indexed: Indexed, tmp_path: Path
) -> None:
    store = indexed.store
    assert latest_generation(store) == 1

    local = Replica(store, tmp_path / "replica").fetch(1)

    assert local.generation.number == 1
    writer_chunks = manifest_chunk_ids(indexed.manifest)
    assert len(writer_chunks) > 3
    assert keyword_chunk_ids(local.tantivy) == keyword_chunk_ids(indexed.tantivy) == writer_chunks
    assert manifest_chunk_ids(local.manifest) == writer_chunks
    assert local.generation.vector_versions == indexed.vector_versions()
    assert local.generation.vector_versions  # the first-stage table at least
    held = {path.name for path in local.tantivy.iterdir() if not path.name.startswith(".")}
    assert held == {*local.generation.segments, META_FILE}


def test_a_generation_names_the_segment_files_it_uploaded(indexed: Indexed) -> None:
    store = indexed.store
    generation = stored_generation(store, 1)

    uploaded = {name.removeprefix(SEGMENTS + "/") for name in store.names(SEGMENTS)}

    assert generation.segments and set(generation.segments) == uploaded
    for name in generation.segments:
        assert store.get_bytes(f"{SEGMENTS}/{name}") == (indexed.tantivy / name).read_bytes()
    assert (
        store.get_bytes(f"{generation_dir(1)}/{META_FILE}")
        == (indexed.tantivy / META_FILE).read_bytes()
    )
    assert json.loads(store.get_bytes(LATEST) or b"") == {"generation": 1}


# --- the manifest snapshot ----------------------------------------------------------------


def test_the_snapshot_leaves_out_first_stage_vectors_but_keeps_every_chunk(
    indexed: Indexed, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snapshot.db"

    snapshot_manifest(indexed.manifest, snapshot)

    assert count(indexed.manifest, "SELECT count(*) FROM vectors") > 0
    assert count(snapshot, "SELECT count(*) FROM vectors") == 0
    assert manifest_chunk_ids(snapshot) == manifest_chunk_ids(indexed.manifest)
    assert count(snapshot, "SELECT count(*) FROM documents") == len(PAGES)
    assert not snapshot.with_name(snapshot.name + "-wal").exists()  # one self-contained file


def test_the_snapshot_keeps_second_stage_vectors(indexed: Indexed, tmp_path: Path) -> None:
    manifest = tmp_path / "with-second-stage.db"
    with (
        closing(sqlite3.connect(indexed.manifest)) as source,
        closing(sqlite3.connect(manifest)) as copy,
    ):
        source.backup(copy)
        chunk_id = copy.execute("SELECT chunk_id FROM chunks LIMIT 1").fetchone()[0]
        copy.execute("UPDATE chunks SET second_key = 'second-1' WHERE chunk_id = ?", (chunk_id,))
        copy.execute("INSERT INTO vectors VALUES ('second-1', x'00000000')")
        copy.commit()
    snapshot = tmp_path / "snapshot.db"

    snapshot_manifest(manifest, snapshot)

    with closing(sqlite3.connect(snapshot)) as conn:
        assert conn.execute("SELECT embed_key FROM vectors").fetchall() == [("second-1",)]


def test_a_snapshot_of_a_damaged_manifest_is_a_store_error(tmp_path: Path) -> None:
    manifest = tmp_path / "state.db"
    manifest.write_bytes(b"not a database, " * 512)

    with pytest.raises(StoreError, match="cannot snapshot the manifest"):
        snapshot_manifest(manifest, tmp_path / "snapshot.db")


def test_a_snapshot_of_a_missing_manifest_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot snapshot the manifest"):
        snapshot_manifest(tmp_path / "missing.db", tmp_path / "snapshot.db")


# --- publishing order and numbering -------------------------------------------------------


def test_a_generation_is_invisible_until_latest_names_it(indexed: Indexed, tmp_path: Path) -> None:
    store = indexed.store
    publisher = Publisher(LatestFails(store.location), indexed.manifest, indexed.tantivy)
    indexed.edit("wombatrix")

    with pytest.raises(Crash):
        indexed.reindex_and_publish(publisher)

    assert stored_generation(store, 2).number == 2  # every other object of it is written
    assert latest_generation(store) == 1
    replica = Replica(store, tmp_path / "replica")
    assert replica.latest() == 1
    local = replica.fetch(1)
    assert local.generation.number == 1
    wombatrix = "SELECT count(*) FROM chunks WHERE text LIKE '%wombatrix%'"
    assert count(indexed.manifest, wombatrix) > 0
    assert count(local.manifest, wombatrix) == 0


def test_a_failed_publish_is_retried_whole_under_the_same_number(indexed: Indexed) -> None:
    store = indexed.store
    failing = Publisher(LatestFails(store.location), indexed.manifest, indexed.tantivy)
    with pytest.raises(Crash):
        failing.publish(indexed.vector_versions())
    indexed.edit("wombatrix")

    generation = indexed.reindex_and_publish(indexed.publisher())

    assert generation.number == 2
    assert latest_generation(store) == 2
    assert stored_generation(store, 2) == generation


def test_a_new_publisher_continues_numbering_from_latest(indexed: Indexed) -> None:
    store = indexed.store
    assert indexed.publisher().last == 1

    assert main(["--config", str(indexed.config), "index"]) == 0  # another process

    assert latest_generation(store) == 2
    assert generation_folders(store) == {1, 2}
    generation = indexed.publisher().publish(indexed.vector_versions())
    assert generation.number == 3
    assert latest_generation(store) == 3


def test_latest_is_none_before_the_first_generation(s3_uri: str) -> None:
    assert latest_generation(object_store(s3_uri)) is None


def test_a_damaged_latest_is_a_store_error(s3_uri: str) -> None:
    store = object_store(s3_uri)
    store.put_bytes(LATEST, b"{generation: 1")

    with pytest.raises(StoreError, match="LATEST is damaged"):
        latest_generation(store)


# --- keeping and forgetting generations ---------------------------------------------------


def test_publishing_keeps_only_the_newest_generations_and_their_segments(
    indexed: Indexed,
) -> None:
    store = indexed.store
    publisher = indexed.publisher()
    published = [stored_generation(store, 1)]
    for edit in range(KEEP + 1):
        indexed.edit(f"zorblax{edit}")
        published.append(indexed.reindex_and_publish(publisher))

    newest = KEEP + 2
    assert [g.number for g in published] == list(range(1, newest + 1))
    assert latest_generation(store) == newest
    assert generation_folders(store) == set(range(newest - KEEP + 1, newest + 1))
    kept = published[-KEEP:]
    named = {name for generation in kept for name in generation.segments}
    remaining = {name.removeprefix(SEGMENTS + "/") for name in store.names(SEGMENTS)}
    assert remaining == named  # every segment a kept generation names, and no other
    retired = {name for generation in published for name in generation.segments} - named
    assert retired  # the edits did retire segments: their deletion was tested


def test_segments_forgotten_by_later_processes_are_deleted(indexed: Indexed) -> None:
    store = indexed.store
    for edit in range(KEEP + 1):
        for page in indexed.docs.iterdir():  # every page: no segment of the last survives
            page.write_text(page.read_text() + f"\n\nRound {edit} of quillfeather edits.\n")
        assert main(["--config", str(indexed.config), "index"]) == 0  # a Publisher each

    newest = KEEP + 2
    assert latest_generation(store) == newest
    kept = [stored_generation(store, n) for n in range(newest - KEEP + 1, newest + 1)]
    named = {name for generation in kept for name in generation.segments}
    remaining = {name.removeprefix(SEGMENTS + "/") for name in store.names(SEGMENTS)}
    assert named <= remaining
    assert remaining == named


def test_a_new_publisher_uploads_no_segment_already_on_the_store(indexed: Indexed) -> None:
    counting = CountingStore(indexed.uri)
    publisher = Publisher(counting, indexed.manifest, indexed.tantivy)

    generation = publisher.publish(indexed.vector_versions())

    assert generation.number == 2
    assert generation.segments == stored_generation(counting, 1).segments  # nothing changed
    assert counting.uploads == [f"{generation_dir(2)}/{MANIFEST_FILE}"]


def test_a_new_publisher_forgets_generations_an_earlier_process_published(
    indexed: Indexed, tmp_path: Path
) -> None:
    store = indexed.store

    for _ in range(KEEP):  # one process each
        indexed.publisher().publish(indexed.vector_versions())

    assert latest_generation(store) == KEEP + 1
    assert generation_folders(store) == set(range(2, KEEP + 2))
    local = Replica(store, tmp_path / "replica").fetch(2)  # the oldest kept is whole
    assert manifest_chunk_ids(local.manifest) == manifest_chunk_ids(indexed.manifest)


# --- generation.json ----------------------------------------------------------------------


def test_a_generation_round_trips_through_its_json() -> None:
    generation = Generation(7, "2024-01-02T03:04:05Z", ("a.idx", "a.store"), {"chunks": 12})

    assert Generation.from_json(json.dumps(generation.to_json()).encode()) == generation


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b"{}",
        b'{"generation": 1, "published_at": "t", "segments": []}',
        b'{"generation": "one", "published_at": "t", "segments": [], "vector_versions": {}}',
        b'{"generation": 1, "published_at": "t", "segments": 5, "vector_versions": {}}',
        b'{"generation": 1, "published_at": "t", "segments": [], "vector_versions": []}',
        b'{"generation": 1, "published_at": "t", "segments": [], "vector_versions": {"v": "x"}}',
        b'{"generation": 1, "published_at": "t", "segments": [], "vector_versions": {"v": null}}',
        b"\xff\xfe",
    ],
)
def test_damaged_generation_json_is_a_store_error(raw: bytes) -> None:
    with pytest.raises(StoreError, match=r"generation\.json is damaged"):
        Generation.from_json(raw)


def test_a_replica_reads_what_the_publisher_wrote_for_manifest_and_meta(
    indexed: Indexed, tmp_path: Path
) -> None:
    local = Replica(indexed.store, tmp_path / "replica").fetch(1)

    assert local.manifest.name == MANIFEST_FILE
    assert (local.tantivy / META_FILE).read_bytes() == (indexed.tantivy / META_FILE).read_bytes()
