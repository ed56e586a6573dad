"""httpx behind one adapter: every HTTP request ragd makes, to remote sources and to its daemon.

Owns the httpx clients (the distribution httpx2, the maintained continuation of httpx) and
what ragd asks of them: explicit connect and read timeouts and a deadline for the whole
request (connect to last byte, redirects included), redirects followed one at a time and
only where the caller's rule allows, the body handed over raw (still compressed, in pieces
as they arrive) so the caller can stop reading at its size cap, no cookies kept between
requests, and the standard proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY: httpx's
`trust_env`) for hosts elsewhere. Failures below HTTP are one `HttpFailure` whose message
names no URL (the caller names it, without its query).

httpx has no whole-request deadline: its timeouts bound each connect, read and write, and a
server sending its headers or body a byte at a time, each within the read timeout, would
hold a request forever. A timer shuts the request's socket at the deadline; the socket is
reached through httpcore's public `trace` extension when the connection opens, so each
request opens its own connection (no keep-alive: a reused connection is never seen opening).

httpx is imported by the first session, not with this module: it costs ~0.1 s (twice that
where trio is installed, which httpcore then imports), which a command that makes no HTTP
request should not pay.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

    import httpx2

# What an answer's body comes as: this adapter decodes nothing (see `Answer.chunks`).
_IDENTITY = {"Accept-Encoding": "identity"}


class HttpFailure(Exception):
    """A request failed below HTTP: no connection, a broken answer, a time limit."""


class HttpTimeout(HttpFailure):
    """A connect, a read or the whole request took longer than its limit."""


class ConnectionRefused(HttpFailure):
    """Nothing listens at the address (the host refused the connection)."""


class RedirectRefused(HttpFailure):
    """The caller's rule refused a redirect from `source` to `target`."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"redirected to {target}")
        self.source, self.target = source, target


class TooManyRedirects(HttpFailure):
    """More redirects in a row than the caller allows."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds a connect may take, a read may wait for data, and the whole request may take
    (from the first connect to the last byte, across redirects)."""

    connect: float
    read: float
    total: float


class _Watch:
    """One request's deadline: caps each step's timeouts by the time left, and shuts every
    socket the request opens when the deadline passes."""

    def __init__(self, timeouts: Timeouts) -> None:
        self.timeouts = timeouts
        self.deadline = time.monotonic() + timeouts.total
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self._closed = False

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def step_timeouts(self) -> dict[str, float]:
        """The next hop's timeouts (httpx's `timeout` request extension), none past the deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise HttpTimeout(self.late())
        read = min(self.timeouts.read, left)
        return {
            "connect": min(self.timeouts.connect, left),
            "read": read,
            "write": read,
            "pool": left,
        }

    def late(self) -> str:
        return f"took longer than {self.timeouts.total:g} s"

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace callback: arms the deadline on each connection as it opens."""
        if not event.endswith("connect_tcp.complete"):
            return
        stream = info.get("return_value")
        sock = None if stream is None else stream.get_extra_info("socket")
        if not isinstance(sock, socket.socket):
            return

        def expire() -> None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), expire)
        timer.daemon = True
        with self._lock:
            if self._closed:
                return
            self._timers.append(timer)
        timer.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


@contextlib.contextmanager
def _failures(watch: _Watch) -> Iterator[None]:
    """httpx's errors (and the socket's, under it) as HttpFailure, with a one-line message."""
    import httpx2  # imported by the session already

    try:
        yield
    except HttpFailure:
        raise
    except httpx2.TimeoutException as exc:
        if watch.expired():
            raise HttpTimeout(watch.late()) from None
        limits = watch.timeouts
        if isinstance(exc, httpx2.ConnectTimeout):
            raise HttpTimeout(f"no connection within {limits.connect:g} s") from None
        raise HttpTimeout(f"no data for {limits.read:g} s") from None
    except (httpx2.HTTPError, httpx2.InvalidURL, OSError, ValueError) as exc:
        if watch.expired():  # the deadline shut the socket: whatever broke, that is why
            raise HttpTimeout(watch.late()) from None
        if _refused(exc):
            raise ConnectionRefused(_line(exc)) from None
        if isinstance(exc, httpx2.RemoteProtocolError):
            raise HttpFailure(f"not a valid HTTP answer ({_line(exc)})") from None
        raise HttpFailure(_line(exc)) from None


class Answer:
    """An HTTP answer whose body is still to be read (within the request's deadline)."""

    def __init__(self, response: httpx2.Response, watch: _Watch) -> None:
        self._response = response
        self._watch = watch
        self.status = response.status_code
        self.url = str(response.url)
        self.received = 0  # bytes of the body read so far, as sent (before any decoding)

    def header(self, name: str) -> str | None:
        """A header's value (repeated headers joined by commas), by case-insensitive name."""
        return self._response.headers.get(name)

    def headers(self) -> dict[str, str]:
        """Every header, by lower-case name."""
        return {name.lower(): value for name, value in self._response.headers.items()}

    def chunks(self) -> Iterator[bytes]:
        """The body as sent (still gzip'd, if it was), in pieces as they arrive; the deadline
        is checked after each piece, so a trickling body cannot outlast it."""
        with _failures(self._watch):
            for piece in self._response.iter_raw():
                self.received += len(piece)
                if self._watch.expired():
                    raise HttpTimeout(self._watch.late())
                yield piece

    def read(self, max_bytes: int) -> bytes:
        """The whole body; HttpFailure past `max_bytes`."""
        pieces: list[bytes] = []
        for piece in self.chunks():
            if self.received > max_bytes:
                raise HttpFailure(f"the body exceeds {max_bytes} bytes")
            pieces.append(piece)
        return b"".join(pieces)


Redirects = Callable[[str, str], bool]


class HttpSession:
    """One httpx client: one source's requests, or the CLI's to its daemon (`local`).

    Thread-safe: a source's requests may run at once from several threads. A `local`
    session talks plain HTTP to this machine: it ignores the proxy variables (a proxy must
    not see a request to the daemon on this host) and loads no certificates.
    """

    def __init__(
        self, timeouts: Timeouts, headers: Mapping[str, str] | None = None, *, local: bool = False
    ) -> None:
        import http.cookiejar
        import ssl

        import httpx2

        self.timeouts = timeouts
        # No trust anchors: a local session speaks no TLS, and would verify none if it did.
        tls: ssl.SSLContext | bool = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT) if local else True
        no_cookies = http.cookiejar.CookieJar(
            http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
        )
        self._client = httpx2.Client(
            headers={**_IDENTITY, **(headers or {})},
            cookies=no_cookies,
            verify=tls,
            trust_env=not local,
            follow_redirects=False,
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=0),
        )

    @contextlib.contextmanager
    def request(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        follow: Redirects | None = None,
        max_redirects: int = 0,
    ) -> Iterator[Answer]:
        """Send a request and hand over its answer, body unread. Redirects are followed
        while `follow(from_url, to_url)` allows (RedirectRefused when it does not), at most
        `max_redirects` in a row; without `follow`, a redirect is the answer."""
        watch = _Watch(self.timeouts)
        try:
            with _failures(watch):
                request = self._client.build_request(
                    method, url, content=content, headers=headers, extensions={"trace": watch.trace}
                )
                response = self._send(request, watch, follow, max_redirects)
            try:
                yield Answer(response, watch)
            finally:
                response.close()
        finally:
            watch.close()

    def _send(
        self, request: httpx2.Request, watch: _Watch, follow: Redirects | None, max_redirects: int
    ) -> httpx2.Response:
        redirects = 0
        while True:
            request.extensions = {**request.extensions, "timeout": watch.step_timeouts()}
            response = self._client.send(request, stream=True)
            target = response.next_request  # set by httpx for a redirect with a usable Location
            if target is None or follow is None:
                return response
            response.close()
            source = str(request.url)
            if not follow(source, str(target.url)):
                raise RedirectRefused(source, str(target.url))
            redirects += 1
            if redirects > max_redirects:
                raise TooManyRedirects(f"more than {max_redirects} redirects")
            request = target

    def close(self) -> None:
        self._client.close()
