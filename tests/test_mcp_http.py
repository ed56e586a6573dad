"""The gates in front of /mcp: a bearer token when one is set, and always off loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ragd.service.mcp.endpoint import TOKEN_ENV, _Deferred, _Gate, is_loopback


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"through"})


def _call(gate: _Gate, headers: dict[bytes, bytes]) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": list(headers.items())}
    asyncio.run(gate(scope, receive, send))
    return sent[0]["status"], sent[1]["body"]


def test_without_a_token_loopback_requests_pass() -> None:
    assert _call(_Gate(_inner, None, required=False), {}) == (200, b"through")


def test_off_loopback_without_a_token_every_request_is_refused_saying_why() -> None:
    status, body = _call(_Gate(_inner, None, required=True), {})

    assert status == 403
    assert TOKEN_ENV in json.loads(body)["error"]["message"]


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (b"Bearer s3cret", 200),
        (b"bearer s3cret", 200),
        (b"Bearer wrong", 401),
        (b"Bearer s3cret2", 401),
        (b"Basic s3cret", 401),
        (b"s3cret", 401),
        (None, 401),
    ],
)
def test_with_a_token_only_its_bearer_passes(header: bytes | None, status: int) -> None:
    headers = {} if header is None else {b"authorization": header}

    assert _call(_Gate(_inner, "s3cret", required=True), headers)[0] == status


def test_a_websocket_without_the_token_is_closed() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "path": "/mcp", "headers": []}
    asyncio.run(_Gate(_inner, "s3cret", required=False)(scope, receive, send))

    assert [m["type"] for m in sent] == ["websocket.close"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
    ],
)
def test_loopback_addresses_are_told_apart(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _deferred(built: list[str], fail: bool = False, sessions_fail: bool = False) -> _Deferred:
    @asynccontextmanager
    async def sessions() -> AsyncIterator[None]:
        if sessions_fail:
            raise RuntimeError("task group already running")
        built.append("sessions started")
        try:
            yield
        finally:  # the server's end cancels the task the sessions run in
            built.append("sessions ended")

    def build() -> tuple[Any, Any]:
        built.append("built")
        if fail:
            raise ImportError("no module named 'mcp'")
        return _inner, sessions

    return _Deferred(build)


async def _ask(app: Any) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await app({"type": "http", "method": "POST", "path": "/mcp", "headers": []}, receive, send)
    return sent[0]["status"], sent[1]["body"]


def test_the_mcp_app_is_built_on_the_first_request_once_and_its_sessions_end_with_the_server() -> (
    None
):
    built: list[str] = []
    deferred = _deferred(built)

    async def serve() -> list[tuple[int, bytes]]:
        async with deferred.lifespan():
            assert built == []  # started, not built
            answers = list(await asyncio.gather(_ask(deferred), _ask(deferred)))
            answers.append(await _ask(deferred))
            return answers

    answers = asyncio.run(serve())

    assert answers == [(200, b"through")] * 3
    assert built == ["built", "sessions started", "sessions ended"]


def test_an_mcp_app_that_cannot_be_built_answers_503_saying_why() -> None:
    deferred = _deferred([], fail=True)

    async def serve() -> tuple[int, bytes]:
        async with deferred.lifespan():
            return await _ask(deferred)

    status, body = asyncio.run(serve())

    assert status == 503
    assert "no module named 'mcp'" in json.loads(body)["error"]["message"]


def test_mcp_sessions_that_cannot_start_answer_503_and_the_server_goes_on() -> None:
    deferred = _deferred([], sessions_fail=True)

    async def serve() -> list[tuple[int, bytes]]:
        async with deferred.lifespan():
            return [await _ask(deferred), await _ask(deferred)]

    answers = asyncio.run(serve())

    assert [status for status, _ in answers] == [503, 503]
    assert "task group already running" in json.loads(answers[0][1])["error"]["message"]
