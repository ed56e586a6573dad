"""CMS webhooks against a real `ragd serve` and a fake CMS on loopback."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragd.indexing.parse_guard import CRASHED
from ragd.service.daemon.writer import MAX_ATTEMPTS
from ragd.sources.webhooks import sign_standard_webhooks
from ragd.stores.jobs import JobQueue
from tests.faults import POISON
from tests.integration.conftest import ragd_in_process
from tests.integration.daemon import Served, wait_until

SECRET = b"test-secret-for-ragd-webhooks"
SECRET_TEXT = SECRET.decode()


class FakeCms:
    """Serves /entries/<id> as markdown from a dict, on a free loopback port."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        entries = self.entries

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                entry = entries.get(self.path.rsplit("/", 1)[-1])
                body = (entry or "not found").encode()
                self.send_response(200 if entry is not None else 404)
                self.send_header("Content-Type", "text/markdown; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def signed(
    payload: dict[str, Any] | bytes, *, secret: bytes = SECRET, age: float = 0, msg_id: str = ""
) -> tuple[bytes, dict[str, str]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    timestamp = int(time.time() - age)
    headers = {
        "Content-Type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_standard_webhooks(secret, msg_id, timestamp, body),
    }
    return body, headers


@pytest.fixture
def cms() -> Iterator[FakeCms]:
    server = FakeCms()
    yield server
    server.close()


def _daemon(tmp_path: Path, cms: FakeCms, root: Path | None = None) -> Served:
    if root is None:
        root = tmp_path / "docs"
        root.mkdir(exist_ok=True)
        (root / "seed.md").write_text("# Seed\n\nA folder page so the source is not empty.\n")
    return Served(
        tmp_path,
        root,
        env={"RAGD_TEST_WEBHOOK_SECRET": SECRET_TEXT},
        extra_sources=(
            '\n[[sources]]\nname = "cms"\ntype = "webhook"\n'
            'secret_env = "RAGD_TEST_WEBHOOK_SECRET"\n'
            f'fetch_url = "http://127.0.0.1:{cms.port}/entries/{{id}}"\n'
        ),
    )


@pytest.fixture
def served(tmp_path: Path, cms: FakeCms) -> Iterator[Served]:
    daemon = _daemon(tmp_path, cms)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def _hits(served: Served, text: str) -> list[str]:
    return [h["doc_id"] for h in served.query(text)["results"] if h["source"] == "cms"]


def test_a_signed_upsert_is_searchable_and_a_delete_removes_it(served: Served) -> None:
    body, headers = signed(
        {
            "event": "upsert",
            "id": "post-1",
            "title": "Kiwi care",
            "url": "https://cms.example/posts/post-1",
            "content": "# Kiwi care\n\nFeed the kiwi birds at dusk.\n",
        }
    )
    status, answer = served.post("/v1/webhooks/cms", body, headers)
    # Nothing but the delivery puts it there: a webhook source is never scanned.
    wait_until(lambda: _hits(served, "kiwi birds dusk") == ["cms:post-1"], 30)

    hit = served.query("kiwi birds dusk")["results"][0]
    assert status == 202 and answer["status"] == "queued"
    assert hit["uri"] == "https://cms.example/posts/post-1" and hit["title"] == "Kiwi care"

    body, headers = signed({"event": "delete", "id": "post-1"})
    assert served.post("/v1/webhooks/cms", body, headers)[0] == 202
    wait_until(lambda: _hits(served, "kiwi birds dusk") == [], 5)


def test_an_upsert_without_content_is_fetched_from_the_cms(served: Served, cms: FakeCms) -> None:
    cms.entries["page-7"] = "# Fetched page\n\nWombat burrows are cube shaped.\n"
    body, headers = signed({"event": "upsert", "id": "page-7"})

    assert served.post("/v1/webhooks/cms", body, headers)[0] == 202
    wait_until(lambda: _hits(served, "wombat burrows") == ["cms:page-7"], 5)
    hit = served.query("wombat burrows")["results"][0]
    assert hit["uri"] == f"http://127.0.0.1:{cms.port}/entries/page-7"


def test_the_same_delivery_ten_times_makes_one_indexing_job(served: Served) -> None:
    body, headers = signed(
        {"event": "upsert", "id": "dup", "content": "# Dup\n\nAxolotl regeneration facts.\n"}
    )
    with ThreadPoolExecutor(5) as pool:
        concurrent = list(
            pool.map(lambda _: served.post("/v1/webhooks/cms", body, headers), range(5))
        )
    serial = [served.post("/v1/webhooks/cms", body, headers) for _ in range(5)]

    answers = [a["status"] for code, a in concurrent + serial if code == 202]
    wait_until(lambda: _hits(served, "axolotl regeneration") == ["cms:dup"], 5)
    served.wait_idle()
    assert len(answers) == 10
    assert answers.count("queued") == 1 and answers.count("duplicate") == 9
    assert len(served.events("document_indexed", doc_id="cms:dup")) == 1


def test_an_older_update_after_a_newer_one_leaves_the_newer_content(served: Served) -> None:
    newer, newer_headers = signed(
        {
            "event": "upsert",
            "id": "ord",
            "updated_at": "2026-11-29T12:00:00Z",
            "content": "# Order\n\nNewer text about capybaras.\n",
        }
    )
    older, older_headers = signed(
        {
            "event": "upsert",
            "id": "ord",
            "updated_at": "2026-11-29T11:00:00Z",
            "content": "# Order\n\nOlder text about capybaras.\n",
        }
    )
    assert served.post("/v1/webhooks/cms", newer, newer_headers)[0] == 202
    wait_until(lambda: _hits(served, "capybaras") == ["cms:ord"], 5)
    assert served.post("/v1/webhooks/cms", older, older_headers)[0] == 202
    served.wait_idle()

    assert served.query("capybaras")["results"][0]["text"] == "Newer text about capybaras."


def _store_state(served: Served) -> tuple[Any, ...]:
    status = served.wait_idle()
    stores = status["stores"]
    return (
        status["documents"],
        stores["manifest_chunks"],
        stores["lancedb_chunks"],
        stores["tantivy_chunks"],
        status["daemon"]["queue_depth"],
    )


BAD_IDS = ["../../etc/passwd", "%2e%2e/x", "a\u0000b"]


def test_every_bad_delivery_gets_its_status_and_changes_nothing(served: Served) -> None:
    before = _store_state(served)
    good = {"event": "upsert", "id": "fine", "content": "# Fine\n\nbody\n"}
    body, headers = signed(good)
    cases: list[tuple[str, int, bytes, dict[str, str], str]] = [
        ("wrong secret", 401, *signed(good, secret=b"another-secret"), "cms"),
        ("tampered body", 401, body.replace(b"body", b"BODY"), headers, "cms"),
        ("re-serialized JSON", 401, json.dumps(good, indent=1).encode(), headers, "cms"),
        ("10 minutes old", 401, *signed(good, age=600), "cms"),
        ("missing headers", 401, body, {"Content-Type": "application/json"}, "cms"),
        ("unknown source", 404, body, headers, "nope"),
        ("2 MiB body", 413, b"x" * (2 * 1024 * 1024), headers, "cms"),
    ]
    for bad_id in BAD_IDS:
        cases.append((f"id {bad_id!r}", 400, *signed({**good, "id": bad_id}), "cms"))

    for name, expected, payload, hdrs, source in cases:
        status, answer = served.post(f"/v1/webhooks/{source}", payload, hdrs)
        assert status == expected, f"{name}: {status} {answer}"
        assert "error" in answer, name

    assert _store_state(served) == before


def test_a_huge_declared_body_is_refused_before_it_is_sent(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as conn:
        conn.sendall(
            b"POST /v1/webhooks/cms HTTP/1.1\r\nHost: ragd\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n"
        )
        reply = conn.recv(65536)  # no body sent: an answer now means it was not awaited

    assert reply.startswith(b"HTTP/1.1 413"), reply[:80]


def test_a_delivery_acknowledged_then_killed_before_it_ran_is_applied_after_restart(
    tmp_path: Path, cms: FakeCms
) -> None:
    from tests.integration.test_serve import _tldr_root

    root = _tldr_root(tmp_path / "corpus", 3000)
    first = _daemon(tmp_path, cms, root=root)
    body, headers = signed(
        {"event": "upsert", "id": "survivor", "content": "# Survivor\n\nPangolin scales.\n"}
    )
    try:
        first.start().wait_ready()  # the start-up scan of 3,000 pages keeps the writer busy
        status, _ = first.post("/v1/webhooks/cms", body, headers)
        first.signal(signal.SIGKILL)
        first.wait_exit(10)
    finally:
        first.stop()
    assert status == 202
    assert not first.events("document_indexed", doc_id="cms:survivor")  # it had not run

    second = _daemon(tmp_path, cms, root=root)
    try:
        second.start().wait_ready()
        wait_until(lambda: _hits(second, "pangolin scales") == ["cms:survivor"], 120)
    finally:
        second.stop()


def test_metrics_report_documents_deliveries_queries_and_embeddings(served: Served) -> None:
    served.post(
        "/v1/webhooks/cms", *signed({"event": "upsert", "id": "m", "content": "# M\n\nx\n"})
    )
    served.post("/v1/webhooks/cms", b"{}", {"Content-Type": "application/json"})
    served.query("seed")
    served.wait_idle()

    text = served.get_text("/metrics")

    assert 'ragd_documents{source="docs"} 1.0' in text
    assert 'ragd_documents{source="cms"} 1.0' in text
    assert 'ragd_webhook_deliveries_total{outcome="queued",source="cms"} 1.0' in text
    assert 'ragd_webhook_deliveries_total{outcome="unauthorized",source="cms"} 1.0' in text
    assert 'ragd_query_seconds_count{mode="bm25"} 1.0' in text
    assert "ragd_queue_depth 0.0" in text
    assert "ragd_chunks_embedded_total" in text and "ragd_index_lag_seconds" in text


def test_the_openapi_description_is_served(served: Served) -> None:
    spec = served.get("/openapi.json")

    assert "/v1/webhooks/{source}" in spec["paths"]


def test_an_entry_whose_parse_kills_the_daemon_is_failed_after_the_restart(
    tmp_path: Path, cms: FakeCms
) -> None:
    # tests/faults.py's poisoned_parse stands for a native parser crash on this entry's content.
    daemon = _daemon(tmp_path, cms)
    daemon.fault = "poisoned_parse"
    poison = {"event": "upsert", "id": "poison", "content": f"# P\n\n{POISON.decode()}\n"}
    daemon.start().wait_ready()
    daemon.wait_scanned()
    try:
        try:
            accepted: int | None = daemon.post("/v1/webhooks/cms", *signed(poison))[0]
        except (http.client.IncompleteRead, ConnectionError):
            # The writer can parse only what the queue holds, so the delivery was queued
            # (and acknowledged) before the crash; the crash raced the reply's last bytes.
            accepted = None
        died = daemon.wait_exit(60)
        daemon.stop()
        daemon.start().wait_ready()
        daemon.wait_scanned()  # the queued delivery is applied again, without a parse
        resent = daemon.post("/v1/webhooks/cms", *signed(poison))[0]
        good = {"event": "upsert", "id": "ok", "content": "# Okapi\n\nOkapis eat leaves.\n"}
        daemon.post("/v1/webhooks/cms", *signed(good))
        wait_until(lambda: _hits(daemon, "okapis eat leaves") == ["cms:ok"], 30)
        cms_status = next(s for s in daemon.status()["sources"] if s["name"] == "cms")
    finally:
        daemon.stop()

    assert accepted in (202, None)
    assert (died, resent) == (-signal.SIGKILL, 202)
    assert cms_status["failed_documents"] == [{"path": "poison", "error": CRASHED}]


def test_a_queued_delivery_the_writer_cannot_apply_is_a_failed_document_in_status(
    tmp_path: Path, cms: FakeCms
) -> None:
    # A delivery queued before the intake refused lone surrogates (an older ragd's queue):
    # the writer cannot encode its content, however often it tries.
    daemon = _daemon(tmp_path, cms)
    daemon.pause_file = tmp_path / "hold"
    daemon.start().wait_ready()
    daemon.wait_scanned()
    try:
        daemon.hold_writer()
        queue = JobQueue(tmp_path / "data" / "state.db")
        poisoned = json.dumps({"event": "upsert", "content": "# Bad\n\nHalf a pair \ud800.\n"})
        good = json.dumps({"event": "upsert", "content": "# Okapi\n\nOkapis eat leaves.\n"})
        queue.accept_delivery(
            "cms", "queued-long-ago", [("bad", poisoned, None), ("ok", good, None)]
        )
        queue.close()
        daemon.release_writer()

        wait_until(lambda: _hits(daemon, "okapis eat leaves") == ["cms:ok"], 10)
        failed = wait_until(lambda: _cms_status(daemon)["failed_documents"], 60)
        check = ragd_in_process(daemon.config, "status", "--check")
        text = ragd_in_process(daemon.config, "status")
        page = daemon.get_text("/")
    finally:
        daemon.stop()

    (only,) = failed
    assert only["path"] == "bad"
    assert only["error"].startswith(f"failed {MAX_ATTEMPTS} times: UnicodeEncodeError")
    assert check.returncode == 1 and check.stdout.startswith("RAGD CRITICAL")
    assert "cms:bad" in text.stdout and "UnicodeEncodeError" in text.stdout
    assert "bad" in page and "UnicodeEncodeError" in page


def _cms_status(daemon: Served) -> dict[str, Any]:
    return next(s for s in daemon.status()["sources"] if s["name"] == "cms")
