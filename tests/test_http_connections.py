"""What a client may hold open on the HTTP server: the connection cap makes room by closing
the connection that waited longest for its client, or refuses a new one when every open
one is being answered; a kept-alive connection is held to the header timeout again for
its next request; a request being answered is never timed out. (Half-sent headers and
bodies on a real `ragd serve`: tests/integration/test_slow_clients.py.)"""

from __future__ import annotations

import inspect
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from ragd.config.settings import HttpConfig
from ragd.service.http.server import HttpServer

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
SLOW_REQUEST = b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BLOCKING_REQUEST = b"GET /block HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


class Served:
    """An HttpServer in this process: `/` answers at once, `/slow` once `release` is set;
    `closed` lists the reasons of the connections it closed on their clients."""

    def __init__(self, http: HttpConfig) -> None:
        self.release = threading.Event()
        self.blocking = threading.Event()
        self.in_slow = 0
        self.closed: list[str] = []
        self.server = HttpServer(
            Starlette(
                routes=[
                    Route("/", self._hello),
                    Route("/slow", self._slow),
                    Route("/block", self._block),
                    Route("/read", self._read, methods=["POST"]),
                ]
            ),
            http,
            closed=self.closed.append,
        )
        self.port = http.port
        self.sockets: list[socket.socket] = []

    async def _hello(self, _: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    async def _slow(self, _: Request) -> PlainTextResponse:
        self.in_slow += 1
        while not self.release.is_set():
            await anyio.sleep(0.01)
        return PlainTextResponse("slow hello")

    async def _block(self, _: Request) -> PlainTextResponse:
        """Holds the event loop itself for 2.5 s, as a loop too busy to run a task would."""
        self.blocking.set()
        time.sleep(2.5)
        return PlainTextResponse("blocked")

    async def _read(self, request: Request) -> PlainTextResponse:
        await request.body()
        return PlainTextResponse("hello")

    def connect(self, send: bytes = b"") -> socket.socket:
        """A new connection that has sent `send` (the server takes connections in the
        order they were made: its listening socket's queue is first in, first out)."""
        connection = socket.create_connection(("127.0.0.1", self.port))
        self.sockets.append(connection)
        connection.sendall(send)
        return connection


def _wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(**limits: object) -> Served:
        served = Served(HttpConfig(listen=f"127.0.0.1:{_free_port()}", **limits))  # type: ignore[arg-type]
        served.server.start()
        started.append(served)
        return served

    yield start
    for served in started:
        for connection in served.sockets:
            connection.close()
        served.release.set()
        served.server.begin_stop()
        served.server.join(5)
        served.server.close()


def _answer(connection: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the server sends until the answer's body is in or it closes."""
    connection.settimeout(timeout)
    received = b""
    while b"hello" not in received:
        piece = connection.recv(4096)
        if not piece:
            break
        received += piece
    return received


def _is_closed(connection: socket.socket, within: float) -> bool:
    readable, _, _ = select.select([connection], [], [], within)
    if not readable:
        return False
    try:
        return connection.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_a_connection_past_the_cap_closes_the_one_that_waited_longest_for_its_client(
    serve: Callable[..., Served],
) -> None:
    served = serve(max_connections=3)
    longest, second, third = (served.connect() for _ in range(3))

    newest = served.connect(REQUEST)

    assert b"200 OK" in _answer(newest)
    assert _is_closed(longest, within=5)
    assert not _is_closed(second, within=0.2) and not _is_closed(third, within=0.2)
    assert served.closed == ["over_limit"]


def test_a_connection_that_finds_every_open_one_answered_is_refused_with_503(
    serve: Callable[..., Served],
) -> None:
    served = serve(max_connections=2)
    answering = [served.connect(SLOW_REQUEST) for _ in range(2)]
    _wait_until(lambda: served.in_slow == 2)

    refused = served.connect(REQUEST)
    answer = refused.recv(4096)
    served.release.set()

    assert answer.startswith(b"HTTP/1.1 503 ")
    assert b"too many open connections" in answer
    assert _is_closed(refused, within=5)
    assert all(b"slow hello" in _answer(connection) for connection in answering)
    assert served.closed == ["refused"]


def test_a_kept_alive_connection_that_stalls_in_its_next_request_is_closed(
    serve: Callable[..., Served],
) -> None:
    served = serve(header_timeout=timedelta(seconds=0.5))
    connection = served.connect(REQUEST)
    assert b"200 OK" in _answer(connection)

    connection.sendall(b"GET / HTTP/1.1\r\nHost: 127.")

    assert _is_closed(connection, within=4)  # uvicorn's keep-alive timer alone: never
    assert served.closed == ["header_timeout"]


def test_a_request_being_answered_is_not_timed_out(serve: Callable[..., Served]) -> None:
    served = serve(header_timeout=timedelta(seconds=0.2), body_timeout=timedelta(seconds=0.2))
    connection = served.connect(SLOW_REQUEST)
    _wait_until(lambda: served.in_slow == 1)
    time.sleep(0.6)  # three times either timeout
    served.release.set()

    assert b"slow hello" in _answer(connection)
    assert served.closed == []


def test_headers_in_while_the_loop_is_busy_are_held_to_the_body_timeout_not_the_header_one(
    serve: Callable[..., Served],
) -> None:
    served = serve(header_timeout=timedelta(seconds=1), body_timeout=timedelta(seconds=3))
    waiting = served.connect()  # its header clock runs from here
    time.sleep(0.2)  # accepted
    served.connect(BLOCKING_REQUEST)
    assert served.blocking.wait(10)

    # Whole headers and part of a body, sent while the loop cannot run the request's task
    # before the header clock is out.
    waiting.sendall(b"POST /read HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc")

    assert _is_closed(waiting, within=30)
    assert served.closed == ["body_timeout"]


def test_an_idle_kept_alive_connection_lives_out_its_header_timeout_and_is_counted(
    serve: Callable[..., Served],
) -> None:
    # Longer than uvicorn's own keep-alive default (5 s), which must not close it first.
    served = serve(header_timeout=timedelta(seconds=5.5))
    asked = time.monotonic()  # before the answer that starts the server's clock
    connection = served.connect(REQUEST)
    assert b"200 OK" in _answer(connection)

    assert _is_closed(connection, within=60)
    assert time.monotonic() - asked >= 5.5
    assert served.closed == ["header_timeout"]  # uvicorn's close would not be counted


def test_uvicorns_protocol_is_built_as_the_wrapper_builds_it() -> None:
    # The version guard of http_connections.GuardedConnection, which builds uvicorn's h11
    # protocol itself (pyproject pins the uvicorn versions this holds for).
    parameters = list(inspect.signature(H11Protocol.__init__).parameters)

    assert parameters == ["self", "config", "server_state", "app_state", "_loop"]
