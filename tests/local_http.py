"""A real HTTP server on 127.0.0.1 for the tests of ragd's HTTP client and polled sources.

Routes answer canned `Reply`s, or a function of the request; a reply may wait before
its status line (a server that hangs) or send its body a byte at a time (one that
trickles). The server records every request and the most it was answering at once.
Nothing here reaches the network, and nothing in the client is mocked.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    """What the server answers: `delay` seconds of silence first, then the status and
    headers, then the body (one byte every `trickle` seconds when that is set), or `raw`
    bytes instead of status, headers and body (trickled too when `trickle` is set)."""

    status: int = 200
    body: bytes = b""
    content_type: str | None = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    raw: bytes | None = None  # sent as is instead of all the above: a server that is not HTTP


def json_reply(
    payload: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Reply:
    """A JSON answer, as the CMS and site APIs the tests imitate send one."""
    body = json.dumps(payload).encode()
    return Reply(status, body, "application/json; charset=utf-8", headers or {})


@dataclass(frozen=True)
class Seen:
    """A request as the server received it."""

    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]


App = Callable[[Seen], Reply]


class LocalServer:
    """A ThreadingHTTPServer on 127.0.0.1 and a free port, serving in a thread."""

    def __init__(self, app: App | None = None) -> None:
        self.app = app
        self.routes: dict[str, Reply | App] = {}
        self.seen: list[Seen] = []
        self.most_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # Join every handler thread on close: none outlives its test.
        self._server.daemon_threads = False
        self._server.block_on_close = True
        self.port = self._server.server_address[1]
        # A short poll interval: `shutdown` waits for the loop to look, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def url(self, path: str, *, host: str = "127.0.0.1") -> str:
        """An absolute URL of `path` on this server, named by `host` (another name for
        the same server, such as "localhost", is another host to a client)."""
        return f"http://{host}:{self.port}{path}"

    def route(self, path: str, reply: Reply | App) -> None:
        self.routes[path] = reply

    def hits(self, path: str) -> int:
        """How many requests asked for `path`."""
        with self._lock:
            return sum(1 for seen in self.seen if seen.path == path)

    def close(self) -> None:
        self._closing.set()  # ends delays and trickles at once
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _answer(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
        route = self.routes.get(seen.path, self.app)
        if route is None:
            return Reply(404, b"not found")
        return route if isinstance(route, Reply) else route(seen)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
                reply = server._answer(Seen(parts.path, query, dict(self.headers.items())))
                # In flight from the request to its status line: the client cannot send
                # its next request before that, so the count never runs ahead of it.
                with server._lock:
                    server._in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server._in_flight)
                server._closing.wait(reply.delay)
                with server._lock:
                    server._in_flight -= 1
                # The client may have given up (a deadline, a size cap): that is the test.
                with contextlib.suppress(OSError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.raw is not None:
                    self._write(reply.raw, reply.trickle)
                    return
                self.send_response(reply.status)
                if reply.content_type is not None:
                    self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self._write(reply.body, reply.trickle)

            def _write(self, data: bytes, trickle: float) -> None:
                if not trickle:
                    self.wfile.write(data)
                    return
                for index in range(len(data)):
                    if server._closing.wait(trickle):
                        return
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@contextlib.contextmanager
def local_server(app: App | None = None) -> Iterator[LocalServer]:
    """A LocalServer for the length of a `with` block."""
    server = LocalServer(app)
    try:
        yield server
    finally:
        server.close()
