"""The door of `ragd serve`'s HTTP port: every read needs a token once [access] has one.

Owns which paths are read surfaces, finding a request's grant (ragd.service.access) in
its `Authorization: Bearer` header or, for a browser's GETs, the status page's cookie,
and refusing those without one: 401 with `WWW-Authenticate: Bearer` (the status page
answers a browser with a form that sets the cookie), 403 for a grant of some sources
asking for what only an all-sources token may read (/metrics, /v1/index). A granted
request carries its grant to the handlers in `scope["state"]["grant"]` (Starlette's
`request.state.grant`, also the MCP SDK's request context).

`/healthz`, `/openapi.json` and the webhooks (which have their own signatures) stay
open. Denied requests are counted by token name ("unknown" when none matched) and
reason, and logged, at most LOGGED_DENIALS a minute.
"""

from __future__ import annotations

import html
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.service.access import OPEN, Denied, Grant, Tokens
from ragd.service.logs import get_logger

log = get_logger("ragd.service.http")

OPEN_PATHS: Final = frozenset({"/healthz", "/openapi.json"})
WEBHOOKS: Final = "/v1/webhooks/"
LOGIN: Final = "/login"
ALL_SOURCES_ONLY: Final = frozenset({"/metrics", "/v1/index"})
COOKIE: Final = "ragd_token"
MCP_PATH: Final = "/mcp"
# The login form's body: a token and its field name, no more.
MAX_LOGIN_BYTES: Final = 8192
LOGGED_DENIALS: Final = 10  # a minute; the counter counts every one
# How long the status page's cookie lasts (the browser forgets it sooner if told to).
COOKIE_SECONDS: Final = 8 * 3600

Denial = Callable[[str, str], None]
"""Counts a denied request: (token name or "unknown", reason)."""


class AccessGate:
    """ASGI middleware in front of the whole app (see the module doc)."""

    def __init__(self, app: ASGIApp, tokens: Tokens, denied: Denial) -> None:
        self._app = app
        self._tokens = tokens
        self._denied = denied
        self._window = (0.0, 0)  # (minute it began, denials logged in it)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in OPEN_PATHS or path.startswith(WEBHOOKS):
            await self._app(scope, receive, send)
            return
        if path == LOGIN and scope["type"] == "http" and self._tokens.required:
            await self._login(scope, receive, send)
            return
        found = self._grant(scope)
        if isinstance(found, Denied):
            self._deny("unknown", found.reason, path)
            await _unauthorized(scope, send, found.reason)
            return
        if path in ALL_SOURCES_ONLY and not found.everything:
            self._deny(found.name, "scope", path)
            await _answer(scope, send, 403, "this needs a token for every source")
            return
        scope.setdefault("state", {})["grant"] = found
        await self._app(scope, receive, send)

    def _grant(self, scope: Scope) -> Grant | Denied:
        if not self._tokens.required:
            return OPEN
        given = [v for k, v in scope.get("headers") or () if k == b"authorization"]
        if len(given) > 1:
            return Denied("malformed")
        if given:
            return self._tokens.check(given[0].decode("latin-1"))
        cookie = _cookie(scope) if scope.get("method") == "GET" else None
        return Denied("missing") if cookie is None else self._tokens.match(cookie)

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /login from the status page's form: a right token sets the cookie."""
        body = await _body(receive, MAX_LOGIN_BYTES)
        fields = urllib.parse.parse_qs(body.decode("latin-1")) if body is not None else {}
        token = (fields.get("token") or [""])[0]
        found = self._tokens.match(token) if token else Denied("missing")
        if isinstance(found, Denied):
            self._deny("unknown", found.reason, LOGIN)
            await _login_page(send, 401, "That token is not right.")
            return
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = (
            f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_SECONDS}{secure}"
        )
        headers = [(b"location", b"/"), (b"set-cookie", cookie.encode("latin-1"))]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    def _deny(self, name: str, reason: str, path: str) -> None:
        self._denied(name, reason)
        began, logged = self._window
        now = time.monotonic()
        if now - began >= 60:
            began, logged = now, 0
        if logged < LOGGED_DENIALS:
            shown = path if len(path) <= 64 else path[:64] + "…"
            log.warning("request_denied", token=name, reason=reason, path=shown)
        self._window = (began, logged + 1)


def _cookie(scope: Scope) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers") or []
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            name, _, token = part.strip().partition("=")
            if name == COOKIE and token:
                return token
    return None


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None once it passes `limit`."""
    body = bytearray()
    while True:
        message: Message = await receive()
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return bytes(body)


async def _unauthorized(scope: Scope, send: Send, reason: str) -> None:
    if scope["type"] == "http" and scope["path"] == "/" and scope.get("method") == "GET":
        await _login_page(send, 401, "")
        return
    message = "a bearer token is required" if reason == "missing" else "the token is not valid"
    challenge = 'Bearer realm="ragd"' + ("" if reason == "missing" else ', error="invalid_token"')
    await _answer(scope, send, 401, message, ((b"www-authenticate", challenge.encode()),))


async def _answer(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """A JSON error (/mcp's in JSON-RPC's shape); a WebSocket is closed with the message."""
    if scope["type"] != "http":
        await send({"type": "websocket.close", "code": 1008, "reason": message})
        return
    if scope["path"] == MCP_PATH:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    else:
        error = {"error": message}
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(error).encode()})


_FORM: Final = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>ragd: sign in</title>"
    "<link rel=icon href='data:,'></head><body><h1>ragd</h1><p>{note}</p>"
    "<form method=post action=/login><label>Access token "
    "<input type=password name=token autocomplete=current-password required></label> "
    "<button>Open the status page</button></form></body></html>"
)


async def _login_page(send: Send, status: int, note: str) -> None:
    body = _FORM.format(note=html.escape(note or "This status page needs an access token."))
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"www-authenticate", b'Bearer realm="ragd"'),
        (b"cache-control", b"no-store"),
        (b"content-security-policy", b"default-src 'none'; form-action 'self'"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
