"""What a client may hold open on `ragd serve`'s HTTP server, and for how long.

Owns three bounds on a connection while the server waits for its client:

- the header timeout (`[http] header_timeout`, 10 s): a request's headers must arrive
  within it of the connection opening, or of the previous answer on a kept-alive one;
- the body timeout (`[http] body_timeout`, 30 s): its body within it of its headers;
- the connection cap (`[http] max_connections`, 512): a connection that opens while that
  many are open makes room by closing the one that has waited longest for its client (for
  headers or a body); when every open one is being answered, it is refused (503).

A connection closed for any of these is logged and counted by reason (`CLOSE_REASONS`).
A request being answered (a query running, an MCP stream open) is not timed out here.

uvicorn has no header or body timeout of its own, so its HTTP protocol runs inside a
protocol of ours (its `http=` option) that keeps the clock and can close the connection,
and an ASGI wrapper around the app tells that protocol where its request stands. The two
meet through the request scope's `state`, which uvicorn copies from the `app_state` each
protocol is built with: each connection's copy carries the connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from ragd.config.settings import HttpConfig
from ragd.service.logs import get_logger

log = get_logger("ragd.service.http")

# Why a connection was closed: its headers or body took too long, it was the one that had
# waited longest when a new connection needed its place, it was refused on opening
# because every open connection was being answered, or a request's headers ran past
# MAX_HEADER_BYTES.
CLOSE_REASONS: Final = (
    "header_timeout", "body_timeout", "over_limit", "refused", "headers_too_large"
)  # fmt: skip
# What a request line and its headers may hold: uvicorn's own bound (h11's incomplete
# event), answered here with 431, as HTTP says, rather than its bare 400.
MAX_HEADER_BYTES: Final = 16 * 1024

# Where a request's scope["state"] carries its connection (taken out before the app sees it).
STATE_KEY: Final = "ragd.connection"


def _closing_answer(status: bytes, error: str) -> bytes:
    body = json.dumps({"error": error}).encode()
    return (
        b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
        b"connection: close\r\n\r\n%s" % (status, len(body), body)
    )


_REFUSED: Final = _closing_answer(
    b"503 Service Unavailable", "too many open connections; try again"
)
_TOO_LARGE: Final = _closing_answer(
    b"431 Request Header Fields Too Large",
    f"the request's headers are over {MAX_HEADER_BYTES} bytes",
)


@dataclass(frozen=True)
class Limits:
    """The bounds, in seconds and connections."""

    header_timeout: float
    body_timeout: float
    max_connections: int

    @classmethod
    def of(cls, http: HttpConfig) -> Limits:
        return cls(
            http.header_timeout.total_seconds(),
            http.body_timeout.total_seconds(),
            http.max_connections,
        )


class Connections:
    """The open connections of one server, and which of them wait for their client
    (longest first). Used from the server's event loop only."""

    def __init__(self, limits: Limits, closed: Callable[[str], None]) -> None:
        self.limits = limits
        self._closed = closed
        self._open: set[GuardedConnection] = set()
        self._waiting: dict[GuardedConnection, None] = {}  # insertion order: longest first

    def admit(self, connection: GuardedConnection) -> bool:
        """Count a new connection in, closing the longest-waiting one if it needs the
        room; False when there is no room to make."""
        if len(self._open) >= self.limits.max_connections:
            longest = next(iter(self._waiting), None)
            if longest is None:
                return False
            longest.close("over_limit")
        self._open.add(connection)
        return True

    def waiting(self, connection: GuardedConnection) -> None:
        """`connection` waits for its client (a wait already begun keeps its place)."""
        self._waiting.setdefault(connection, None)

    def answering(self, connection: GuardedConnection) -> None:
        """`connection` has its request and is being answered."""
        self._waiting.pop(connection, None)

    def forget(self, connection: GuardedConnection) -> None:
        self._open.discard(connection)
        self._waiting.pop(connection, None)

    def closed(self, reason: str, client: str, waited: float) -> None:
        self._closed(reason)
        log.info("http_connection_closed", reason=reason, client=client, waited=round(waited, 1))


class GuardedConnection(asyncio.Protocol):
    """uvicorn's HTTP/1.1 protocol for one connection, on a clock: while the connection
    waits for its client, a timer runs that closes it. Subclassed per server with its
    `connections` (uvicorn builds the protocol with fixed arguments)."""

    connections: ClassVar[Connections]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._http = H11Protocol(
            config=config,
            server_state=server_state,
            app_state={**app_state, STATE_KEY: self},
            _loop=_loop,
        )
        self._transport: asyncio.Transport | None = None
        self._client = "?"
        self._timer: asyncio.TimerHandle | None = None
        self._since = 0.0
        self._awaiting = ""  # the reason of the clock running: what the client owes
        self._tail = b""  # the last bytes received while headers are awaited
        self._header_bytes = 0  # received of the awaited headers
        self._admitted = False  # uvicorn's protocol has the connection
        self._closed = False  # closed by us (or refused)

    # -- asyncio.Protocol, passed on to uvicorn's ------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "?"
        if not self.connections.admit(self):
            self._closed = True
            transport.write(_REFUSED)
            transport.close()
            self.connections.closed("refused", self._client, 0.0)
            return
        self._admitted = True
        self._http.connection_made(transport)
        self._wait("header_timeout", self.connections.limits.header_timeout)

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        if self._awaiting == "header_timeout":
            # The headers are in when their blank line is, not when the app's task gets
            # to run: on a busy loop that can be later than the header timeout.
            seen = self._tail + data
            if b"\r\n\r\n" in seen:
                self._stop_clock()
                self._wait("body_timeout", self.connections.limits.body_timeout)
            else:
                self._tail = seen[-3:]
                self._header_bytes += len(data)
                if self._header_bytes > MAX_HEADER_BYTES:
                    self._refuse_headers()
                    return
        self._http.data_received(data)

    def eof_received(self) -> None:
        if not self._closed:
            self._http.eof_received()

    def pause_writing(self) -> None:
        if self._admitted:
            self._http.pause_writing()

    def resume_writing(self) -> None:
        if self._admitted:
            self._http.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_clock()
        self.connections.forget(self)
        if self._admitted:
            self._http.connection_lost(exc)

    # -- where its request stands (told by RequestWatch) -------------------------------------

    def request_began(self, *, has_body: bool) -> None:
        """Its headers are in; the body, if it has one, is still to come."""
        if not has_body:
            self._stop_clock()
            self.connections.answering(self)
        elif self._awaiting != "body_timeout":  # its clock started with the blank line
            self._stop_clock()
            self._wait("body_timeout", self.connections.limits.body_timeout)

    def body_read(self) -> None:
        """Nothing more is awaited from the client for this request."""
        self._stop_clock()
        self.connections.answering(self)

    def request_ended(self) -> None:
        """The answer is out; the next request's headers are awaited."""
        if self._closed or self._transport is None or self._transport.is_closing():
            return
        self._stop_clock()
        self._wait("header_timeout", self.connections.limits.header_timeout)

    def close(self, reason: str) -> None:
        """Close the connection now, saying why."""
        if self._closed or self._transport is None:
            return
        self._closed = True
        waited = asyncio.get_running_loop().time() - self._since
        self._stop_clock()
        self.connections.forget(self)
        self.connections.closed(reason, self._client, waited)
        # abort, not close: a client that sends nothing may read nothing either, and a
        # close would wait for it to take what is buffered.
        self._transport.abort()

    def _refuse_headers(self) -> None:
        """Answer 431 and close: what else the client sends is not read."""
        if self._transport is None:
            return
        self._closed = True
        waited = asyncio.get_running_loop().time() - self._since
        self._stop_clock()
        self.connections.forget(self)
        self.connections.closed("headers_too_large", self._client, waited)
        self._transport.write(_TOO_LARGE)
        self._transport.close()

    def _wait(self, reason: str, seconds: float) -> None:
        if self._closed:  # a closed connection waits for nothing, nor holds a place
            return
        loop = asyncio.get_running_loop()
        self._since = loop.time()
        self._timer = loop.call_later(seconds, self.close, reason)
        self._awaiting, self._tail, self._header_bytes = reason, b"", 0
        self.connections.waiting(self)

    def _stop_clock(self) -> None:
        self._awaiting = ""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def guarded_protocol(connections: Connections) -> type[GuardedConnection]:
    """The protocol class for uvicorn's `http=` option, holding connections to `connections`."""

    class Guarded(GuardedConnection):
        pass

    Guarded.connections = connections
    return Guarded


class RequestWatch:
    """ASGI: tells each request's connection when its headers are in, when its body has
    been read (or the app answered without it), and when its answer is out."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state")
        connection = state.pop(STATE_KEY, None) if isinstance(state, dict) else None
        if not isinstance(connection, GuardedConnection):
            await self._app(scope, receive, send)
            return
        connection.request_began(has_body=_has_body(scope))
        # A receive or send after the app returned (a task it left behind) is no news of
        # this request, and the connection may be waiting for the next one by then.
        current = True

        async def receive_watched() -> Message:
            message = await receive()
            if current and (message["type"] != "http.request" or not message.get("more_body")):
                connection.body_read()
            return message

        async def send_watched(message: Message) -> None:
            if current and message["type"] == "http.response.start":
                connection.body_read()
            await send(message)

        try:
            await self._app(scope, receive_watched, send_watched)
        finally:
            current = False
            connection.request_ended()


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers") or ():
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False
