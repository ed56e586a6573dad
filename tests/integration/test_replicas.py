"""Read replicas: one `ragd serve` writer on SeaweedFS, two `ragd serve --reader` processes
with their own empty data dirs, all real processes on loopback.

The writer publishes a generation after each commit (ragd.stores.publishing); each reader
serves the newest complete one (ragd.service.replica.generation) and looks for a newer one every
refresh_interval (1 s here).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.adapters.object_store import object_store
from ragd.stores.publishing import LATEST, latest_generation
from tests.conftest import GOLD, REPO, storage_section, write_config
from tests.integration.conftest import run_json
from tests.integration.daemon import Served, wait_until

REFRESH_SECONDS = 1.0
CRASHING_RAGD = (sys.executable, "-m", "tests.integration.crashing_ragd")
FEATURES = Path("docs/en/docs/features.md")


def _gold_questions() -> list[str]:
    return [json.loads(line)["query"] for line in GOLD.read_text().splitlines() if line.strip()]


def _top(served: Served, question: str, k: int = 10) -> list[str]:
    return [hit["chunk_id"] for hit in served.query(question, mode="hybrid", k=k)["results"]]


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, s3_server: Any
) -> Iterator[tuple[Served, Served, Served, Path]]:
    """A writer over a copy of fastapi-docs and two readers of its generations."""
    import shutil
    import uuid

    from tests.conftest import FASTAPI_DOCS, TEST_BUCKET

    os.environ.update(s3_server.env)  # for this module's processes; removed at the end
    uri = f"s3://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}"
    base = tmp_path_factory.mktemp("cluster")
    docs = base / "docs"
    shutil.copytree(FASTAPI_DOCS, docs)
    storage = storage_section(uri, f"{REFRESH_SECONDS:g}s")
    writer = Served(base / "writer", docs, sections=storage)
    readers = [Served(base / f"reader-{i}", docs, sections=storage, reader=True) for i in (1, 2)]
    try:
        writer.start().wait_ready()
        writer.wait_scanned()
        for reader in readers:
            reader.start().wait_ready()
        yield writer, readers[0], readers[1], docs
    finally:
        for served in (writer, *readers):
            if served.process is not None:
                served.stop()
        for name in s3_server.env:
            os.environ.pop(name, None)


def test_readers_answer_the_gold_questions_with_the_writers_top_10(
    cluster: tuple[Served, Served, Served, Path],
) -> None:
    writer, first, second, _ = cluster
    for question in _gold_questions():
        want = _top(writer, question)
        assert want, question
        assert _top(first, question) == want, question
        assert _top(second, question) == want, question


def test_an_edit_is_searchable_on_both_readers(
    cluster: tuple[Served, Served, Served, Path],
) -> None:
    # How soon is bench/replicas.py's figure; here, that each reader gets there.
    writer, first, second, docs = cluster
    with (docs / FEATURES).open("a") as page:
        page.write("\n## Quokkaflux\n\nThe quokkaflux setting tunes zebra replicas.\n")
    wait_until(lambda: writer.paths_for("quokkaflux"), 30)
    for reader in (first, second):
        wait_until(lambda r=reader: r.paths_for("quokkaflux"), 30 * REFRESH_SECONDS)  # type: ignore[misc]
        assert reader.paths_for("quokkaflux") == [str(FEATURES)]


def test_a_reader_reports_the_generation_it_serves_and_its_lag(
    cluster: tuple[Served, Served, Served, Path],
) -> None:
    writer, first, _, _ = cluster
    writer.wait_idle()
    store = object_store(first.status()["replica"]["storage_uri"])
    latest = latest_generation(store)
    assert latest is not None
    publishing = writer.status()["daemon"]["publishing"]
    assert publishing["generation"] == latest and publishing["failures"] == 0
    assert publishing["storage_uri"] == store.location.uri

    def serving_latest() -> dict[str, Any] | None:
        status = first.status()
        return status if status["replica"]["generation"] == latest else None

    status = wait_until(serving_latest, 10)

    replica = status["replica"]
    assert replica["latest_generation"] == latest and replica["behind"] == 0
    assert replica["lag_seconds"] == 0.0  # it serves the newest generation it has seen
    assert 0 <= replica["generation_age_seconds"] < 600
    assert status["stores_agree"] is True
    assert "source_changed" in replica["staleness"]
    metrics = first.get_text("/metrics")
    assert f"ragd_replica_generation {float(latest)}" in metrics
    assert "ragd_writer_alive" not in metrics


def test_a_reader_refuses_webhooks_and_names_the_writer(
    cluster: tuple[Served, Served, Served, Path],
) -> None:
    _, first, _, _ = cluster

    status, body = first.post("/v1/webhooks/cms", b"{}", {"content-type": "application/json"})

    assert status == 404
    assert "read replica" in body["error"]


def test_a_reader_started_mid_publish_serves_the_previous_generation(
    tmp_path: Path, s3_uri: str
) -> None:
    from tests.integration.daemon import small_root

    docs = small_root(tmp_path / "docs", files=8)
    config = write_config(tmp_path, docs, sections=storage_section(s3_uri))
    run_json(config, "index")
    store = object_store(s3_uri)
    assert latest_generation(store) == 1
    page = sorted(docs.glob("*.md"))[0]
    page.write_text(page.read_text() + "\n\nThe wombatrix option appears here.\n")
    killed = subprocess.run(
        [*CRASHING_RAGD, "mid_publish", "--config", str(config), "index"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        timeout=300,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert any("published/000000000002/" in name for name in store.names("published"))
    assert latest_generation(store) == 1, store.get_bytes(LATEST)

    reader = Served(tmp_path / "reader", docs, sections=storage_section(s3_uri), reader=True)
    reader.start().wait_ready()
    try:
        assert reader.status()["replica"]["generation"] == 1
        assert reader.paths_for("wombatrix") == []

        run_json(config, "index")  # publishes the edit, already in the stores, whole

        wait_until(lambda: reader.paths_for("wombatrix"), 30 * REFRESH_SECONDS)
        assert reader.status()["replica"]["generation"] == 2
    finally:
        reader.stop()


def test_a_reader_answers_mcp_clients_and_shows_its_status_page(
    cluster: tuple[Served, Served, Served, Path],
) -> None:
    import asyncio

    from tests.integration.mcp_clients import http_session

    writer, first, _, _ = cluster

    async def search() -> dict[str, Any]:
        async with http_session(first.port) as session:
            result = await session.call_tool("search", {"query": "dependency injection", "k": 5})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            found: dict[str, Any] = result.structured_content
            return found

    found = asyncio.run(search())

    answer = writer.query("dependency injection", mode="hybrid", k=5)
    want = [hit["chunk_id"] for hit in answer["results"]]
    assert want and [hit["chunk_id"] for hit in found["hits"]] == want
    page = first.get_text("/")
    assert "Read replica of s3://" in page


def test_a_reader_re_scores_with_the_second_stage_as_the_writer_does(
    tmp_path: Path, s3_uri: str
) -> None:
    from tests.conftest import RERANK_MODEL_DIR
    from tests.integration.daemon import small_root

    docs = small_root(tmp_path / "docs", files=6)
    storage = storage_section(s3_uri)
    config = write_config(tmp_path, docs, rerank=RERANK_MODEL_DIR, sections=storage)
    assert run_json(config, "index")["second_stage"]["pending"] == 0
    reader = Served(
        tmp_path / "reader", docs, rerank=RERANK_MODEL_DIR, sections=storage, reader=True
    )
    reader.start().wait_ready()
    try:
        for question in ("How do I declare a request body?", "path parameters with types"):
            want = run_json(config, "query", question, "--mode", "hybrid", "-k", "5")
            got = reader.query(question, mode="hybrid", k=5)

            assert want["rerank"] is True and got["rerank"] is True
            assert [h["chunk_id"] for h in got["results"]] == [
                h["chunk_id"] for h in want["results"]
            ]
            assert all(h["second_stage_rank"] is not None for h in got["results"])
    finally:
        reader.stop()


def test_a_reader_before_any_generation_is_not_ready_and_says_why(
    tmp_path: Path, s3_uri: str
) -> None:
    import urllib.error
    import urllib.request

    from tests.integration.daemon import small_root

    docs = small_root(tmp_path / "docs", files=2)
    reader = Served(tmp_path / "reader", docs, sections=storage_section(s3_uri), reader=True)
    reader.start()
    try:
        wait_until(lambda: reader.events("serving_replica"), 60)
        with pytest.raises(urllib.error.HTTPError) as health:
            urllib.request.urlopen(f"http://127.0.0.1:{reader.port}/healthz", timeout=10)
        assert health.value.code == 503
        assert json.loads(health.value.read())["status"] == "starting"

        status, body = reader.post("/v1/query", b'{"query": "path parameters"}', {})

        assert status == 503
        assert "no generation to serve yet" in body["error"]
    finally:
        reader.stop()


def test_a_reader_tells_systemd_ready_watchdog_and_stopping(tmp_path: Path, s3_uri: str) -> None:
    from tests.integration.daemon import NotifySocket, small_root

    systemd = NotifySocket()
    reader = Served(
        tmp_path / "reader",
        small_root(tmp_path / "docs", files=2),
        sections=storage_section(s3_uri),
        reader=True,
        env=systemd.env,
    )
    try:
        reader.start()
        systemd.receive_until("READY=1", 60)
        systemd.receive_until("WATCHDOG=1", 10)
        reader.signal(signal.SIGTERM)
        systemd.receive_until("STOPPING=1", 10)
        assert reader.wait_exit(10) == 0
    finally:
        reader.stop()
        systemd.close()
