"""The HTTP server's start: it returns once uvicorn serves, or says it could not."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ragd.config.settings import HttpConfig
from ragd.errors import RagdError
from ragd.service.http.server import HttpServer


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _hello(_: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


def _on(port: int) -> HttpConfig:
    return HttpConfig(listen=f"127.0.0.1:{port}")


def _ignore(reason: str) -> None:
    pass


def _start_session_manager() -> None:
    raise RuntimeError("no session manager")


def test_start_returns_with_the_server_answering() -> None:
    port = _free_port()
    server = HttpServer(Starlette(routes=[Route("/", _hello)]), _on(port), closed=_ignore)
    try:
        server.start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            assert answer.read() == b"hello"
    finally:
        server.begin_stop()
        server.join(5)
        server.close()


def test_an_app_whose_start_up_fails_is_a_ragd_error() -> None:
    @asynccontextmanager
    async def broken(_: Starlette) -> AsyncIterator[None]:
        _start_session_manager()
        yield

    server = HttpServer(Starlette(lifespan=broken), _on(_free_port()), closed=_ignore)
    try:
        with pytest.raises(RagdError, match="did not start"):
            server.start()
    finally:
        server.join(5)
        server.close()


def test_a_busy_port_is_a_ragd_error_naming_it() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(RagdError, match=f"cannot listen on 127.0.0.1:{port}"):
            HttpServer(Starlette(), _on(port), closed=_ignore)
