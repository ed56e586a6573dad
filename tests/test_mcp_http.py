"""/mcp's app, built on the first request, and telling loopback addresses apart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ragd.service.access import is_loopback
from ragd.service.mcp.endpoint import _Deferred


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"through"})


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
