"""POST /v1/index and the data-directory check of the HTTP API, over a backend that
records what it was asked (the real daemon's answers are specified in
tests/integration/test_cli_beside_daemon.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2 as httpx

from ragd.errors import UsageError
from ragd.search.results import QueryRequest
from ragd.service.access import Grant
from ragd.service.http.api import DATA_DIR_HEADER, create_app
from ragd.sources.cms.formats import WebhookRequest

REPORT = {"documents": {"added": 1}, "seconds": 0.1}


class RecordingBackend:
    """Answers an index pass with REPORT (or refuses, as a replica does); serves /srv/a."""

    def __init__(self, *, indexes: bool = True) -> None:
        self.indexes = indexes
        self.passes: list[bool] = []

    max_body_bytes = 1 << 20

    def search(self, request: QueryRequest) -> Any:
        return {"query": request.query, "results": []}

    def context(self, request: QueryRequest, max_chars: int) -> Any:
        return {}

    def status(self) -> dict[str, object]:
        return {"stores_agree": True}

    def index(self, full: bool) -> dict[str, object]:
        if not self.indexes:
            raise UsageError("a read replica does not index: ask the writer's ragd serve")
        self.passes.append(full)
        return REPORT

    def serves(self, data_dir: str) -> bool:
        return data_dir == "/srv/a"

    def health(self) -> dict[str, object]:
        return {"status": "ok"}

    def has_webhook_source(self, source: str) -> bool:
        return False

    def webhook(self, source: str, request: WebhookRequest) -> tuple[int, dict[str, Any]]:
        return 404, {}

    def note_webhook(self, source: str, outcome: str) -> None:
        pass

    def metrics_text(self) -> bytes:
        return b""

    def status_page(self, grant: Grant) -> str:
        return ""


def send(
    backend: RecordingBackend,
    method: str,
    path: str,
    *,
    client: str = "127.0.0.1",
    headers: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(backend), client=(client, 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://ragd") as http:
            return await http.request(method, path, headers=headers, json=body)

    return asyncio.run(go())


def test_an_index_pass_from_this_machine_answers_the_backends_report() -> None:
    backend = RecordingBackend()

    answer = send(backend, "POST", "/v1/index", body={"full": True})

    assert (answer.status_code, answer.json()) == (200, REPORT)
    assert backend.passes == [True]


def test_an_index_pass_is_refused_to_a_client_off_this_machine() -> None:
    backend = RecordingBackend()

    answer = send(backend, "POST", "/v1/index", client="192.0.2.7", body={})

    assert answer.status_code == 403
    assert backend.passes == []


def test_an_index_pass_asked_of_a_replica_is_409_saying_so() -> None:
    answer = send(RecordingBackend(indexes=False), "POST", "/v1/index", body={})

    assert answer.status_code == 409
    assert "does not index" in answer.json()["error"]


def test_an_unknown_field_of_an_index_pass_is_400() -> None:
    answer = send(RecordingBackend(), "POST", "/v1/index", body={"fulll": True})

    assert answer.status_code == 400


def test_a_command_meaning_another_data_directory_is_409_on_every_read_route() -> None:
    backend = RecordingBackend()
    other = {DATA_DIR_HEADER: "/srv/b"}

    answers = [
        send(backend, "GET", "/v1/status", headers=other).status_code,
        send(backend, "POST", "/v1/query", headers=other, body={"query": "x"}).status_code,
        send(backend, "POST", "/v1/index", headers=other, body={}).status_code,
    ]

    assert answers == [409, 409, 409]
    assert backend.passes == []


def test_a_command_meaning_this_data_directory_is_answered() -> None:
    answer = send(RecordingBackend(), "GET", "/v1/status", headers={DATA_DIR_HEADER: "/srv/a"})

    assert answer.status_code == 200
