"""The /mcp session table: per-client and total caps, the least recently used session ended
to make room (an idle one first), and what one session may hold."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, MutableMapping
from typing import Any

import anyio
import httpx2 as httpx
import pytest

from ragd.search.parents import ParentHit
from ragd.search.results import QueryRequest, SearchResponse
from ragd.service.mcp.endpoint import mcp_endpoint, ragd_server
from ragd.service.mcp.sessions import INITIALIZE_BYTES, MAX_SESSIONS_PER_CLIENT, SessionTable


class FakeSdk:
    """Stands in for the SDK's Streamable HTTP app: a POST without a session id opens a
    session named s1, s2, ...; a request naming an open session is answered 200 (after
    `hold` is set, when one is given), a DELETE ends it; an unknown session answers 404."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.deleted: list[str] = []
        self.bodies: list[bytes] = []
        self.hold: anyio.Event | None = None
        self._made = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id", b"").decode() or None
        answer: list[tuple[bytes, bytes]] = []
        if session is None:
            self._made += 1
            session = f"s{self._made}"
            self.open.add(session)
            status, answer = 200, [(b"mcp-session-id", session.encode())]
        elif session not in self.open:
            status = 404
        elif scope["method"] == "DELETE":
            self.open.discard(session)
            self.deleted.append(session)
            status = 200
        else:
            if self.hold is not None:
                await self.hold.wait()
            status = 200
        await send({"type": "http.response.start", "status": status, "headers": answer})
        await send({"type": "http.response.body", "body": b"{}"})


def _table(sdk: FakeSdk, *, total: int = 100, per_client: int = 100) -> SessionTable:
    return SessionTable(
        sdk,
        path="/mcp",
        host="127.0.0.1:8750",
        max_body_bytes=1 << 20,
        max_sessions=total,
        per_client=per_client,
    )


async def _request(
    table: SessionTable,
    client: str,
    *,
    session: str | None = None,
    method: str = "POST",
    body: bytes = b"{}",
    chunks: list[dict[str, Any]] | None = None,
) -> tuple[int | None, str | None]:
    """(status, the session id answered) of one request from `client`."""
    headers = [(b"content-type", b"application/json")]
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    messages = chunks or [{"type": "http.request", "body": body}]
    pending: Iterator[dict[str, Any]] = iter(messages)
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(pending, {"type": "http.disconnect"})

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": "/mcp",
        "headers": headers,
        "client": (client, 40000),
    }
    await table(scope, receive, send)
    if not sent:
        return None, None
    named = dict(sent[0].get("headers") or []).get(b"mcp-session-id")
    return sent[0]["status"], named.decode() if named else None


async def _use(table: SessionTable, session: str) -> None:
    await _request(table, "10.0.0.1", session=session)


async def _open(table: SessionTable, client: str) -> str:
    status, session = await _request(table, client)
    assert status == 200 and session is not None
    return session


def test_a_session_past_the_per_client_cap_ends_that_clients_least_recently_used() -> None:
    sdk = FakeSdk()
    table = _table(sdk, per_client=3)

    async def scenario() -> None:
        for _ in range(3):
            await _open(table, "10.0.0.1")
        await _open(table, "10.0.0.2")
        await _request(table, "10.0.0.1", session="s1")  # now s2 is the least recent
        await _open(table, "10.0.0.1")

    asyncio.run(scenario())

    assert sdk.deleted == ["s2"]
    assert sdk.open == {"s1", "s3", "s4", "s5"}
    assert len(table) == 4


def test_a_session_past_the_total_cap_ends_the_least_recently_used_of_any_client() -> None:
    sdk = FakeSdk()
    table = _table(sdk, total=3)

    async def scenario() -> None:
        for client in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
            await _open(table, client)
        await _request(table, "10.0.0.1", session="s1")
        await _open(table, "10.0.0.4")  # a new client is served

    asyncio.run(scenario())

    assert sdk.deleted == ["s2"]
    assert sdk.open == {"s1", "s3", "s4"}


def test_a_session_with_a_request_in_flight_outlasts_an_idle_one() -> None:
    sdk = FakeSdk()
    table = _table(sdk, total=2)

    async def scenario() -> None:
        busy = await _open(table, "10.0.0.1")
        await _open(table, "10.0.0.1")
        sdk.hold = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(_use, table, busy)
            await anyio.sleep(0.01)
            await _open(table, "10.0.0.2")
            sdk.hold.set()

    asyncio.run(scenario())

    assert sdk.deleted == ["s2"]
    assert sdk.open == {"s1", "s3"}


def test_when_every_other_session_is_busy_the_least_recently_used_is_ended_anyway() -> None:
    sdk = FakeSdk()
    table = _table(sdk, total=2)

    async def scenario() -> None:
        for _ in range(2):
            await _open(table, "10.0.0.1")
        sdk.hold = anyio.Event()
        async with anyio.create_task_group() as group:
            for session in ("s1", "s2"):
                group.start_soon(_use, table, session)
            await anyio.sleep(0.01)
            await _open(table, "10.0.0.2")
            sdk.hold.set()

    asyncio.run(scenario())

    assert sdk.deleted == ["s1"]
    assert sdk.open == {"s2", "s3"}


def test_a_session_its_client_deleted_or_the_sdk_forgot_leaves_the_table() -> None:
    sdk = FakeSdk()
    table = _table(sdk)

    async def scenario() -> list[int | None]:
        for _ in range(3):
            await _open(table, "10.0.0.1")
        deleted, _ = await _request(table, "10.0.0.1", session="s1", method="DELETE")
        sdk.open.discard("s2")  # expired in the SDK (idle 30 minutes)
        forgotten, _ = await _request(table, "10.0.0.1", session="s2")
        return [deleted, forgotten]

    assert asyncio.run(scenario()) == [200, 404]
    assert len(table) == 1


def _initialize(size: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": ""}}
    padding = size - len(json.dumps(message))
    message["params"] = {"x": "a" * padding}
    return json.dumps(message).encode()


def test_an_initialize_over_the_limit_is_refused_and_reaches_no_session() -> None:
    sdk = FakeSdk()
    table = _table(sdk)
    too_big = _initialize(INITIALIZE_BYTES + 1)

    status, session = asyncio.run(_request(table, "10.0.0.1", body=too_big))

    assert (status, session) == (413, None)
    assert sdk.bodies == [] and len(table) == 0


@pytest.mark.parametrize(
    "body",
    [
        _initialize(INITIALIZE_BYTES),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "x": "a" * 50_000}).encode(),
    ],
    ids=["initialize at the limit", "a larger call that is no initialize"],
)
def test_other_bodies_reach_the_sdk_whole(body: bytes) -> None:
    sdk = FakeSdk()
    table = _table(sdk)
    chunks: list[dict[str, Any]] = [
        {"type": "http.request", "body": body[:1000], "more_body": True},
        {"type": "http.request", "body": body[1000:]},
    ]

    status, _ = asyncio.run(_request(table, "10.0.0.1", chunks=chunks))

    assert status == 200
    assert sdk.bodies == [body]


def test_a_client_that_leaves_before_its_body_is_in_reaches_no_session() -> None:
    sdk = FakeSdk()
    table = _table(sdk)
    chunks: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"jsonrpc": "2.0", ', "more_body": True},
        {"type": "http.disconnect"},
    ]

    status, _ = asyncio.run(_request(table, "10.0.0.1", chunks=chunks))

    assert status is None
    assert sdk.bodies == [] and len(table) == 0


class _NoIndex:
    def search(self, request: QueryRequest) -> SearchResponse:
        return SearchResponse(request.query, "hybrid", [])

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        return None

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        return None


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8750"}


def test_sessions_ended_to_make_room_leave_no_task_of_the_sdk_behind() -> None:
    endpoint = mcp_endpoint(
        ragd_server(_NoIndex(), dict),
        host="127.0.0.1",
        port=8750,
        max_body_bytes=1 << 20,
        max_connections=512,
    )

    async def scenario() -> tuple[int, int, int]:
        transport = httpx.ASGITransport(app=endpoint.app)
        async with (
            endpoint.lifespan(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8750") as client,
        ):

            async def initialize() -> str:
                answer = await client.post("/mcp", json=INITIALIZE, headers=HEADERS)
                assert answer.status_code == 200
                return answer.headers["mcp-session-id"]

            first = await initialize()
            for _ in range(MAX_SESSIONS_PER_CLIENT - 1):
                await initialize()
            at_the_cap = len(asyncio.all_tasks())
            for _ in range(3 * MAX_SESSIONS_PER_CLIENT):
                await initialize()
            await asyncio.sleep(0.1)  # ended sessions' tasks finish
            past_it = len(asyncio.all_tasks())
            ping = {**INITIALIZE, "method": "ping"}
            ended = await client.post(
                "/mcp", json=ping, headers={**HEADERS, "mcp-session-id": first}
            )
            return at_the_cap, past_it, ended.status_code

    at_the_cap, past_it, ended = asyncio.run(scenario())

    assert past_it <= at_the_cap
    assert ended == 404
