"""The sessions of /mcp: how many may be open, which one makes room, and what one may hold.

Owns the table of open MCP sessions in front of the SDK's Streamable HTTP app. The SDK opens
a session for every `initialize` sent without a session id and keeps it until the client
ends it or it has been idle for 30 minutes; past its own cap it refuses every new client.
Here instead:

- at most `MAX_SESSIONS_PER_CLIENT` (64) sessions per client address and `MAX_SESSIONS`
  (256) in all: a session opened past either cap ends the least recently used other session
  (of that address, or of all), one with no request in flight first, so a new client is
  always served; an ended session answers 404, on which the MCP specification has its
  client open a new one;
- an `initialize` body is at most `INITIALIZE_BYTES` (8 KiB; a real client's is under
  1 KiB): a session keeps the SDK's own state and what its client declared in `initialize`,
  which a body of nested empty lists multiplies about 25 times in memory. One session holds
  about 40 KiB, at most about 215 KiB, and all of them at most about 55 MiB
  (bench/mcp_sessions.py measures it);
- a request's body is read whole before the SDK sees it, so a client that leaves halfway
  costs the SDK nothing.

A session is ended as its client would end it: a DELETE with its id, through the SDK's app,
so the SDK stops its task and forgets it by its own means.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass
from typing import Final

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_SESSIONS: Final = 256
MAX_SESSIONS_PER_CLIENT: Final = 64
INITIALIZE_BYTES: Final = 8 * 1024

_SESSION_HEADER: Final = b"mcp-session-id"


@dataclass
class _Session:
    client: str
    in_flight: int = 0


class SessionTable:
    """ASGI in front of the SDK's Streamable HTTP `app` at `path`: counts the sessions it
    opens per client address (`scope["client"]`), ends the least recently used past the
    caps, and refuses an `initialize` over `INITIALIZE_BYTES`. `host` is a Host the SDK
    accepts (its DNS-rebinding protection), for the DELETEs that end sessions.

    A session the SDK ended by itself (idle for 30 minutes) stays counted here until a
    request names it (the SDK answers 404) or it is the least recently used, which it then
    is: its DELETE finds it gone."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        host: str,
        max_body_bytes: int,
        max_sessions: int = MAX_SESSIONS,
        per_client: int = MAX_SESSIONS_PER_CLIENT,
    ) -> None:
        self._app = app
        self._path = path
        self._host = host.encode()
        self._max_body_bytes = max_body_bytes
        self._max_sessions = max_sessions
        self._per_client = per_client
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self._clients: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope["method"] == "POST":
            whole = await _whole_body(scope, receive, self._max_body_bytes)
            if whole is None:
                return  # the client left before its body was in: there is no one to answer
            body, receive = whole
            if body is not None and len(body) > INITIALIZE_BYTES and _is_initialize(body):
                limit = f"an initialize body is limited to {INITIALIZE_BYTES} bytes"
                await _refuse(send, 413, limit)
                return
        session_id = _header(scope, _SESSION_HEADER)
        if session_id is None:
            await self._open(scope, receive, send)
        else:
            await self._use(session_id, scope, receive, send)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        status, opened = await _answered(self._app, scope, receive, send)
        if opened is None or status is None or status >= 400:
            return
        client = _client(scope)
        self._sessions[opened] = _Session(client)
        self._clients[client] += 1
        while self._clients[client] > self._per_client:
            if not await self._end_least_recent(opened, client):
                break
        while len(self._sessions) > self._max_sessions:
            if not await self._end_least_recent(opened, None):
                break

    async def _use(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.in_flight += 1
            self._sessions.move_to_end(session_id)
        try:
            status, _ = await _answered(self._app, scope, receive, send)
        finally:
            if session is not None:
                session.in_flight -= 1
        if session_id not in self._sessions:
            return
        if status == 404 or (scope["method"] == "DELETE" and status is not None and status < 300):
            self._forget(session_id)  # ended by its client, or by the SDK (idle too long)
        else:
            self._sessions.move_to_end(session_id)

    async def _end_least_recent(self, keep: str, client: str | None) -> bool:
        """End the least recently used session other than `keep` (of `client`, when
        given), one with no request in flight first; False when there is none."""
        candidates = [
            (session_id, session)
            for session_id, session in self._sessions.items()
            if session_id != keep and (client is None or session.client == client)
        ]
        if not candidates:
            return False
        idle = [session_id for session_id, session in candidates if not session.in_flight]
        victim = idle[0] if idle else candidates[0][0]
        self._forget(victim)
        # Shielded: once out of the table it must end, whatever happens to this request.
        with anyio.CancelScope(shield=True):
            deletion = self._deletion(victim)
            await _answered(self._app, deletion, _replay(_empty_body(), _gone), _discard)
        return True

    def _forget(self, session_id: str) -> None:
        session = self._sessions.pop(session_id)
        self._clients[session.client] -= 1
        if not self._clients[session.client]:
            del self._clients[session.client]

    def _deletion(self, session_id: str) -> Scope:
        """The scope of a DELETE that ends `session_id`, as its client would send it."""
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": self._path,
            "raw_path": self._path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", self._host), (_SESSION_HEADER, session_id.encode())],
            "client": None,
            "server": None,
            "state": {},
        }


async def _whole_body(
    scope: Scope, receive: Receive, limit: int
) -> tuple[bytes | None, Receive] | None:
    """The request's body read whole, and a `receive` that gives it again; None when the
    client left first. A body over `limit` is not kept (None) and is left to the SDK,
    which refuses it."""
    declared = _header(scope, b"content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        return None, receive
    read: deque[Message] = deque()
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # http.disconnect
        size += len(message.get("body", b""))
        read.append(message)
        if size > limit:
            return None, _replay(read, receive)
        if not message.get("more_body", False):
            break
    body = b"".join(message.get("body", b"") for message in read)
    return body, _replay(deque([{"type": "http.request", "body": body}]), receive)


def _replay(messages: deque[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return messages.popleft() if messages else await receive()

    return replay


def _is_initialize(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False  # the SDK answers it with a parse error
    return isinstance(message, dict) and message.get("method") == "initialize"


async def _answered(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send
) -> tuple[int | None, str | None]:
    """Run `app` for one request: the status it answered and the session id it named."""
    status: int | None = None
    session_id: str | None = None

    async def watched(message: Message) -> None:
        nonlocal status, session_id
        if message["type"] == "http.response.start":
            status = message["status"]
            for name, value in message.get("headers") or ():
                if name.lower() == _SESSION_HEADER:
                    session_id = value.decode("latin-1")
        await send(message)

    await app(scope, receive, watched)
    return status, session_id


def _empty_body() -> deque[Message]:
    return deque([{"type": "http.request", "body": b""}])


async def _gone() -> Message:
    return {"type": "http.disconnect"}


async def _discard(message: Message) -> None:
    pass


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})
