"""The HTTP server of `ragd serve`: uvicorn on a socket bound before it starts.

Owns binding the listening socket (so a busy port fails at start-up, before any indexing,
with a one-line error) and running uvicorn on it in a thread of its own, its connections
held to `[http]`'s timeouts and cap (ragd.service.http.connections). Off the main thread
uvicorn leaves signals alone: the daemon's lifecycle handles them.
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

from ragd.config.settings import HttpConfig
from ragd.errors import RagdError
from ragd.service.http.connections import Connections, Limits, RequestWatch, guarded_protocol

# Seconds uvicorn gives open connections to finish once told to stop.
GRACEFUL_SECONDS = 2
# Seconds uvicorn may take to run the app's start-up (the MCP session manager's).
STARTUP_SECONDS = 30


class HttpServer:
    """uvicorn serving `app` on `[http] listen`; the socket is bound and listening on
    return. `closed` is told the reason of every connection closed on its client
    (http_connections.CLOSE_REASONS)."""

    def __init__(self, app: ASGIApp, http: HttpConfig, *, closed: Callable[[str], None]) -> None:
        host, port, listen = http.host, http.port, http.listen
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on connections of a
        # socket whose protocol says TCP, and without it every answer on a kept-alive
        # connection waits ~40 ms for the client's delayed ACK (Nagle).
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(2048)
        except OSError as exc:
            self._socket.close()
            raise RagdError(
                f"cannot listen on {listen}: {exc.strerror or exc}",
                hint="is another process using the port? set [http] listen",
            ) from exc
        self._socket.set_inheritable(True)
        connections = Connections(Limits.of(http), closed)
        config = uvicorn.Config(
            RequestWatch(app),
            http=guarded_protocol(connections),
            # No WebSocket: ragd serves none, and uvicorn would hand an upgraded connection
            # to a protocol of its own, out of the connections' count.
            ws="none",
            log_config=None,
            access_log=False,
            lifespan="on",  # the MCP server's sessions run within it
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            # A kept-alive connection idles up to header_timeout, as any wait for headers
            # does, and is then closed and counted by ragd's clock, not before by uvicorn's.
            timeout_keep_alive=math.ceil(http.header_timeout.total_seconds()) + 1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._run,
            name="ragd-http",
            daemon=True,
        )

    def _run(self) -> None:
        # SystemExit is uvicorn's word for a failed start-up, which `start` reports.
        with contextlib.suppress(SystemExit):
            self._server.run(sockets=[self._socket])

    def start(self) -> None:
        """Serve on a thread of its own, returning once uvicorn serves; RagdError if its
        start-up failed (uvicorn has logged why)."""
        self._thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                self._server.should_exit = True
                break
            time.sleep(0.01)
        if not self._server.started:
            raise RagdError(
                "the HTTP server did not start", hint="see the log lines before this one"
            )

    def begin_stop(self) -> None:
        """Ask uvicorn to stop: it closes the socket to new connections and finishes the
        requests in hand."""
        self._server.should_exit = True

    def join(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the server's thread."""
        if self._thread.is_alive():
            self._thread.join(timeout)

    def close(self) -> None:
        """Close the listening socket."""
        self._socket.close()
