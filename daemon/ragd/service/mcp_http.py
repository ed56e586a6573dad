"""/mcp on `ragd serve`: the MCP server over Streamable HTTP, behind its gates.

Owns how the MCP SDK's Streamable HTTP app is set up inside ragd's HTTP server: at /mcp
on `[http] listen`, its request bodies capped like the API's, its sessions run by the
daemon's HTTP lifespan, and two gates:

- on a loopback address, the SDK's DNS-rebinding protection: a request whose `Host` or
  `Origin` is not this address (a web page's script reaching a local port through a name
  it controls) is refused;
- a bearer token from the environment (`RAGD_MCP_TOKEN`): when it is set, every request
  must carry `Authorization: Bearer <token>`. Off loopback it is required: without it
  /mcp refuses every request (403), since any host that reaches the port could otherwise
  read the index.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "RAGD_MCP_TOKEN"  # noqa: S105 - the variable's name, not a token
PATH = "/mcp"


@dataclass(frozen=True)
class McpEndpoint:
    """The /mcp ASGI app and the context its sessions run in (the HTTP server's lifespan)."""

    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[None]]


def is_loopback(host: str) -> bool:
    """Whether `host` (as [http] listen names it) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def mcp_endpoint(
    server: MCPServer, *, host: str, port: int, max_body_bytes: int, environ: Mapping[str, str]
) -> McpEndpoint:
    """/mcp for `server` on host:port."""
    loopback = is_loopback(host)
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    names = tuple(
        dict.fromkeys((listen, f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"))
    )
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=list(names),
        allowed_origins=[f"http://{name}" for name in names],
    )
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=security,
        host=host,
        max_request_body_size=max_body_bytes,
    )
    token = environ.get(TOKEN_ENV) or None
    return McpEndpoint(_Gate(app, token, required=not loopback), server.session_manager.run)


class _Gate:
    """Lets a request through to `app` only with the bearer token (when one is set or
    required). Others get a JSON-RPC error: 401 for a missing or wrong token, 403 off
    loopback when no token is set (no credential could help). Any other kind of
    connection (a WebSocket) is held to the same gate and closed if refused."""

    def __init__(self, app: ASGIApp, token: str | None, *, required: bool) -> None:
        self._app = app
        self._token = token.encode() if token else None
        self._required = required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = None if scope["type"] == "lifespan" else self._refusal(scope)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, message = refusal
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008, "reason": message})
            return
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
        ).encode()
        headers = [(b"content-type", b"application/json")]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        if self._token is None:
            return (403, f"set {TOKEN_ENV} to use /mcp off loopback") if self._required else None
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credentials = given.strip().partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token):
            return None
        return 401, "a bearer token is required"
