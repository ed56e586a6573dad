"""Tests for ragd.stores.replica: a replica's local copy of generations published to a real
S3 server (SeaweedFS) from stores built by the real indexer."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.adapters.object_store import object_store
from ragd.adapters.tantivy import META_FILE
from ragd.errors import StoreError
from ragd.stores.publishing import (
    GENERATION_FILE,
    KEEP,
    MANIFEST_FILE,
    SEGMENTS,
    Generation,
    generation_dir,
)
from ragd.stores.replica import COMPLETE, LocalGeneration, Replica
from tests.test_publishing import (
    CountingStore,
    Indexed,
    index_published,
    keyword_chunk_ids,
    manifest_chunk_ids,
)


@pytest.fixture
def indexed(tmp_path: Path, s3_uri: str) -> Indexed:
    return index_published(tmp_path / "writer", s3_uri)


@pytest.fixture
def counting(indexed: Indexed) -> CountingStore:
    return CountingStore(indexed.uri)


def second_generation(indexed: Indexed, *, every_page: bool = False) -> Generation:
    """Generation 2, after an edit the keyword index commits as a new segment. Editing
    every page deletes every chunk of generation 1's segment, so Tantivy drops it."""
    if every_page:
        for page in indexed.docs.iterdir():
            page.write_text(page.read_text() + "\n\nThe platypoda option.\n")
    else:
        indexed.edit("platypoda")
    return indexed.reindex_and_publish(indexed.publisher())


def assert_opens_like_the_writer(local: LocalGeneration, indexed: Indexed) -> None:
    chunks = manifest_chunk_ids(indexed.manifest)
    assert chunks
    assert manifest_chunk_ids(local.manifest) == chunks
    assert keyword_chunk_ids(local.tantivy) == chunks


def test_latest_names_the_newest_generation_published(indexed: Indexed, tmp_path: Path) -> None:
    replica = Replica(indexed.store, tmp_path / "replica")
    assert replica.latest() == 1

    second_generation(indexed)

    assert replica.latest() == 2


def test_latest_is_none_before_anything_is_published(s3_uri: str, tmp_path: Path) -> None:
    assert Replica(object_store(s3_uri), tmp_path / "replica").latest() is None


def test_fetch_makes_a_complete_generation_folder(indexed: Indexed, tmp_path: Path) -> None:
    root = tmp_path / "replica"

    local = Replica(indexed.store, root).fetch(1)

    assert local.root == root / generation_dir(1).split("/")[1]
    assert (local.root / COMPLETE).exists()
    assert Generation.from_json((local.root / GENERATION_FILE).read_bytes()) == local.generation
    assert local.manifest == local.root / MANIFEST_FILE
    for name in local.generation.segments:  # hard links to the shared copy
        linked, shared = local.tantivy / name, root / "segments" / name
        assert linked.samefile(shared)
        assert linked.read_bytes() == (indexed.tantivy / name).read_bytes()
    assert_opens_like_the_writer(local, indexed)


def test_fetch_twice_reuses_the_downloaded_folder(
    indexed: Indexed, counting: CountingStore, tmp_path: Path
) -> None:
    replica = Replica(counting, tmp_path / "replica")
    first = replica.fetch(1)
    assert counting.gets  # the first fetch downloaded
    counting.gets.clear()

    again = replica.fetch(1)

    assert counting.gets == []
    assert again == first
    assert_opens_like_the_writer(again, indexed)


def test_a_second_generation_downloads_only_its_new_segments(
    indexed: Indexed, counting: CountingStore, tmp_path: Path
) -> None:
    replica = Replica(counting, tmp_path / "replica")
    first = replica.fetch(1)
    second = second_generation(indexed)
    counting.gets.clear()

    local = replica.fetch(2)

    new = set(second.segments) - set(first.generation.segments)
    shared = set(second.segments) & set(first.generation.segments)
    assert new and shared
    downloaded = {name.removeprefix(SEGMENTS + "/") for name in counting.gets}
    assert downloaded & set(second.segments) == new
    for name in shared:  # one file on disk, linked from both generations
        assert (local.tantivy / name).samefile(first.tantivy / name)
    assert_opens_like_the_writer(local, indexed)


def test_a_half_made_generation_folder_is_made_again(
    indexed: Indexed, counting: CountingStore, tmp_path: Path
) -> None:
    replica = Replica(counting, tmp_path / "replica")
    local = replica.fetch(1)
    # As a crash mid-fetch leaves it: no .complete marker, a file missing, one truncated.
    (local.root / COMPLETE).unlink()
    (local.root / MANIFEST_FILE).unlink()
    (local.tantivy / META_FILE).write_bytes(b"{")
    (local.root / "leftover.part").write_bytes(b"x")
    counting.gets.clear()

    again = replica.fetch(1)

    assert f"{generation_dir(1)}/{MANIFEST_FILE}" in counting.gets
    assert (again.root / COMPLETE).exists()
    assert not (again.root / "leftover.part").exists()
    assert again.generation == local.generation
    assert_opens_like_the_writer(again, indexed)


def test_a_folder_without_the_complete_marker_is_not_trusted(
    indexed: Indexed, tmp_path: Path
) -> None:
    root = tmp_path / "replica"
    folder = root / generation_dir(1).split("/")[1]
    (folder / "tantivy").mkdir(parents=True)
    (folder / GENERATION_FILE).write_bytes(b"{half")

    local = Replica(indexed.store, root).fetch(1)

    assert local.generation.number == 1
    assert_opens_like_the_writer(local, indexed)


def test_prune_keeps_the_named_generations_and_deletes_unlinked_segments(
    indexed: Indexed, tmp_path: Path
) -> None:
    root = tmp_path / "replica"
    replica = Replica(indexed.store, root)
    first = replica.fetch(1)
    second_generation(indexed, every_page=True)
    second = replica.fetch(2)
    only_first = set(first.generation.segments) - set(second.generation.segments)
    assert only_first

    replica.prune({2})

    assert not first.root.exists()
    assert (second.root / COMPLETE).exists()
    held = {path.name for path in (root / "segments").iterdir()}
    assert held == set(second.generation.segments)
    assert_opens_like_the_writer(replica.fetch(2), indexed)


def test_prune_keeping_every_generation_deletes_nothing(indexed: Indexed, tmp_path: Path) -> None:
    root = tmp_path / "replica"
    replica = Replica(indexed.store, root)
    local = replica.fetch(1)

    replica.prune({1})

    assert (local.root / COMPLETE).exists()
    assert {p.name for p in (root / "segments").iterdir()} == set(local.generation.segments)


def test_prune_of_a_replica_that_holds_nothing_is_fine(s3_uri: str, tmp_path: Path) -> None:
    root = tmp_path / "never-made"

    Replica(object_store(s3_uri), root).prune({1})

    assert not root.exists()


def test_fetch_of_an_unknown_generation_is_a_store_error(indexed: Indexed, tmp_path: Path) -> None:
    root = tmp_path / "replica"

    with pytest.raises(StoreError, match="generation 99 is no longer published"):
        Replica(indexed.store, root).fetch(99)

    assert not (root / generation_dir(99).split("/")[1]).exists()


def test_fetch_of_a_generation_the_writer_pruned_is_a_store_error(
    indexed: Indexed, tmp_path: Path
) -> None:
    for _ in range(KEEP):
        indexed.publisher().publish(indexed.vector_versions())
    replica = Replica(indexed.store, tmp_path / "replica")

    with pytest.raises(StoreError, match="generation 1 is no longer published"):
        replica.fetch(1)

    latest = replica.latest()
    assert latest == KEEP + 1
    assert_opens_like_the_writer(replica.fetch(latest), indexed)
