"""ServedGeneration: the generation a read replica serves, refreshed from a real S3 server.

Stores come from the real `ragd index` with [storage] uri on SeaweedFS (the helpers of
tests/test_publishing.py); the replica's copy lives in its own data dir.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragd.search.results import QueryRequest
from ragd.service.replica.generation import ServedGeneration
from ragd.service.runtime import Runtime
from ragd.stores.data_dir import DataDir
from ragd.stores.publishing import LATEST
from ragd.stores.replica import Replica
from tests.test_publishing import Indexed, index_published


@pytest.fixture
def indexed(tmp_path: Path, s3_uri: str) -> Indexed:
    return index_published(tmp_path / "writer", s3_uri)


def _served(indexed: Indexed, directory: Path) -> ServedGeneration:
    runtime: Runtime = replace(indexed.runtime, data_dir=DataDir(directory, indexed.uri))
    return ServedGeneration(runtime, Replica(indexed.store, runtime.data_dir.replica))


def _hits(served: ServedGeneration, query: str) -> list[str]:
    response = served.search(QueryRequest(query=query, k=5, mode="bm25"))
    return [hit.chunk.chunk_id for hit in response.hits]


def test_a_replica_serves_the_newest_generation_and_is_not_behind(
    indexed: Indexed, tmp_path: Path
) -> None:
    served = _served(indexed, tmp_path / "replica")
    try:
        assert served.refresh() is True

        described = served.describe(datetime.now(UTC))
        assert described["generation"] == described["latest_generation"] == 1
        assert described["behind"] == 0 and described["lag_seconds"] == 0.0
        assert served.refresh() is False  # nothing newer
    finally:
        served.close()


def test_a_replica_that_cannot_fetch_a_newer_generation_keeps_serving_and_counts_its_lag(
    indexed: Indexed, tmp_path: Path
) -> None:
    served = _served(indexed, tmp_path / "replica")
    try:
        served.refresh()
        before = _hits(served, "parameters")
        indexed.store.put_bytes(LATEST, json.dumps({"generation": 7}).encode())

        assert served.refresh() is False
        time.sleep(0.05)

        described = served.describe(datetime.now(UTC))
        assert described["generation"] == 1 and described["behind"] == 6
        assert isinstance(described["lag_seconds"], float) and described["lag_seconds"] > 0
        assert "generation 7 is no longer published" in str(described["last_error"])
        assert before and _hits(served, "parameters") == before
    finally:
        served.close()


def test_a_replica_moves_to_each_new_generation_and_keeps_only_two_on_disk(
    indexed: Indexed, tmp_path: Path
) -> None:
    served = _served(indexed, tmp_path / "replica")
    publisher = indexed.publisher()
    try:
        served.refresh()
        for word in ("quillfeather", "marmotrix"):
            indexed.edit(word)
            indexed.reindex_and_publish(publisher)

            assert served.refresh() is True
            assert _hits(served, word)

        assert served.current().number == 3
        held = sorted(p.name for p in (tmp_path / "replica" / "replica").iterdir())
        assert held == ["000000000002", "000000000003", "segments"]
    finally:
        served.close()
