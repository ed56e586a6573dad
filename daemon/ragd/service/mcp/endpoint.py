"""/mcp on `ragd serve`: the MCP server over Streamable HTTP, behind its gates.

Owns how the MCP SDK's Streamable HTTP app is set up inside ragd's HTTP server: at /mcp
on `[http] listen`, its request bodies capped like the API's, its sessions run by the
daemon's HTTP lifespan and held to the caps of ragd.service.mcp.sessions, built on the
first request that passes the gates (the SDK's import alone holds ~50 MiB, which a daemon
nobody asks over MCP need not carry). On a loopback address the SDK's DNS-rebinding
protection refuses a request whose `Host` or `Origin` is not this address (a web page's
script reaching a local port through a name it controls). Tokens are the HTTP server's
access gate's, as for every read surface (ragd.service.http.gate); the tools read what
the request's grant allows (ragd.service.mcp.tools).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from ragd.service.access import is_loopback
from ragd.service.logs import get_logger
from ragd.service.mcp.sessions import MAX_SESSIONS, SessionTable

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ragd.service.mcp.tools import Reader

log = get_logger("ragd.service.mcp.tools")

PATH = "/mcp"


@dataclass(frozen=True)
class McpEndpoint:
    """The /mcp ASGI app and the context its sessions run in (the HTTP server's lifespan)."""

    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[None]]


def ragd_server(reader: Reader, status: Callable[[], dict[str, Any]]) -> Callable[[], MCPServer]:
    """What makes ragd's MCP server over `reader`, importing the SDK only when called."""

    def build() -> MCPServer:
        from ragd.service.mcp.tools import build_server

        return build_server(reader, status)

    return build


def mcp_endpoint(
    server: Callable[[], MCPServer],
    *,
    host: str,
    port: int,
    max_body_bytes: int,
    max_connections: int,
) -> McpEndpoint:
    """/mcp on host:port for the server `server()` makes, when a request first needs it.
    `max_connections` is the HTTP server's cap on open connections."""
    loopback = is_loopback(host)
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    names = tuple(
        dict.fromkeys((listen, f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"))
    )

    def build() -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
        from mcp.server.transport_security import TransportSecuritySettings

        made = server()
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=loopback,
            allowed_hosts=list(names),
            allowed_origins=[f"http://{name}" for name in names],
        )
        app = made.streamable_http_app(
            streamable_http_path=PATH,
            transport_security=security,
            host=host,
            max_request_body_size=max_body_bytes,
            # The table below ends sessions past its caps once a new one is open, so the
            # SDK may hold that many more for a moment: one per connection opening one.
            # Its own cap, which refuses new clients, is then never what holds them back.
            max_sessions=MAX_SESSIONS + max_connections,
        )
        table = SessionTable(app, path=PATH, host=names[0], max_body_bytes=max_body_bytes)
        return table, made.session_manager.run

    deferred = _Deferred(build)
    return McpEndpoint(deferred, deferred.lifespan)


class _Deferred:
    """The SDK's app, built on the first request. Its sessions run in a task of the HTTP
    lifespan's own (the SDK's session manager must be left by the task that entered it),
    started when that first request asks and cancelled when the lifespan ends."""

    def __init__(
        self, build: Callable[[], tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]]
    ) -> None:
        self._build = build
        self._app: ASGIApp | None = None
        self._error: str | None = None
        self._asked: anyio.Event | None = None
        self._ready: anyio.Event | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self._asked, self._ready = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._run_when_asked, self._asked, self._ready)
            try:
                yield
            finally:
                group.cancel_scope.cancel()

    async def _run_when_asked(self, asked: anyio.Event, ready: anyio.Event) -> None:
        await asked.wait()
        try:
            app, sessions = self._build()
            async with sessions():
                self._app = app
                ready.set()
                await anyio.sleep_forever()
        except Exception as exc:  # a broken SDK must not take the daemon's HTTP with it
            self._app, self._error = None, f"{type(exc).__name__}: {exc}"
            log.error("mcp_unavailable", error=self._error)
            ready.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._asked is None or self._ready is None:
            await _refuse(scope, send, 503, "the MCP server is not running")
            return
        self._asked.set()
        await self._ready.wait()
        if self._app is None:
            await _refuse(scope, send, 503, f"the MCP server could not start: {self._error}")
            return
        await self._app(scope, receive, send)


async def _refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    """Answer with a JSON-RPC error (a WebSocket is closed with the message)."""
    if scope["type"] != "http":
        await send({"type": "websocket.close", "code": 1008, "reason": message})
        return
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    ).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
