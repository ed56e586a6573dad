"""HTTP GETs of remote sources: bounded in time, size and concurrency, http(s) only.

Owns every request ragd makes to a CMS, a sitemap or a site: a deadline for the whole
request (connect to last byte), a size cap (a gzip body counts as what it inflates to),
a content-type check, at most `per_host` requests at once to one host, and redirects
that stay on the host they started from (a page must not send ragd to another host, such
as one on the internal network). Failures are one `FetchError` with a one-line message
that names the URL without its query (which may carry an API key).

The standard library's urllib does the HTTP: ragd needs GET, redirects and TLS with the
system's certificates, and nothing that would justify another dependency.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from http.client import HTTPMessage
from typing import IO, Any

from ragd.errors import RagdError
from ragd.sources.json_body import decode_json

USER_AGENT = "ragd"  # the service names its version (ragd.service.remote_sources)
MAX_REDIRECTS = 5
_READ_BYTES = 65536
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip"})
# What CMS read APIs answer with (Contentful names its own JSON types).
JSON_TYPES = frozenset(
    {
        "application/json",
        "application/vnd.contentful.delivery.v1+json",
        "application/vnd.api+json",
    }
)


class FetchError(RagdError):
    """A GET failed: `status` is the HTTP status when the server answered with one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def gone(self) -> bool:
        """The server says the resource does not exist (404 or 410)."""
        return self.status in (404, 410)


@dataclass(frozen=True)
class Limits:
    """How long a request may take in all, how big its body may be, and how many
    requests may go to one host at once."""

    timeout: float = 10.0
    max_bytes: int = 5_000_000
    per_host: int = 4


@dataclass(frozen=True)
class Fetched:
    """A successful GET: the final URL (after redirects), its media type and its body."""

    url: str
    content_type: str
    data: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    charset: str | None = None

    def text(self) -> str:
        """The body as text, in its declared charset (UTF-8 if none, or an unknown one);
        bytes that do not decode become U+FFFD rather than failing the page."""
        try:
            return self.data.decode(self.charset or "utf-8", errors="replace")
        except LookupError:
            return self.data.decode("utf-8", errors="replace")


def shown(url: str) -> str:
    """`url` as it may appear in a message or a log: without its query and fragment."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def same_host(url: str, other: str) -> bool:
    """Whether `other` is on `url`'s host and port: the same host name, and the same
    port, or both on their scheme's default (an http-to-https move stays on the host;
    a move to another port, such as a database's on the same machine, does not)."""
    a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(other)
    try:
        ports = (a.port, b.port)
    except ValueError:  # a port that is not a number
        return False
    defaults = {"http": 80, "https": 443}
    port_a, port_b = ports[0] or defaults.get(a.scheme), ports[1] or defaults.get(b.scheme)
    same_port = port_a == port_b or ports == (None, None)
    return bool(a.hostname) and a.hostname == b.hostname and same_port


class _Deadline:
    """Shuts a connection's socket at the request's deadline. The socket timeout bounds
    each read, not the whole answer, and http.client reads the status line and headers
    a line at a time: a server sending them a byte at a time would hold ragd forever."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def watch(self, sock: socket.socket) -> threading.Timer:
        def expire() -> None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), expire)
        timer.daemon = True
        timer.start()
        return timer


def _watched(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline = deadline
            self._timer: threading.Timer | None = None

        def connect(self) -> None:
            super().connect()
            self._timer = self._deadline.watch(self.sock)

        def close(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            super().close()

    return Watched


_WatchedHTTP = _watched(http.client.HTTPConnection)
_WatchedHTTPS = _watched(http.client.HTTPSConnection)


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTP, req, deadline=self.deadline)


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self.deadline = deadline
        self.ssl_context = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPS, req, context=self.ssl_context, deadline=self.deadline)


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follows at most MAX_REDIRECTS redirects, each to http(s) on the same host."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        scheme = urllib.parse.urlsplit(newurl).scheme
        if scheme not in ("http", "https") or not same_host(req.full_url, newurl):
            fp.close()  # the redirect's own answer: its socket, not left to the collector
            where = f"GET {shown(req.full_url)}"
            raise FetchError(f"{where}: redirected off the host to {shown(newurl)}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class HttpClient:
    """GETs for one source: its limits and its headers (tokens: never logged)."""

    def __init__(self, limits: Limits, headers: Mapping[str, str] | None = None) -> None:
        self.limits = limits
        self._headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self._tls = ssl.create_default_context()
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._slots_lock = threading.Lock()

    def get(
        self,
        url: str,
        *,
        accept: Collection[str],
        headers: Mapping[str, str] | None = None,
    ) -> Fetched:
        """GET `url`; its media type must be one of `accept` (a gzip body is inflated
        and taken as the first of them). FetchError otherwise, or on any failure."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchError(f"GET {shown(url)}: not an http(s) URL")
        with self._slot(parts.hostname):
            return self._get(url, accept, {**self._headers, **(headers or {})})

    def get_json(self, url: str, *, headers: Mapping[str, str] | None = None) -> object:
        """GET `url` and parse its JSON body; FetchError for anything but JSON."""
        fetched = self.get(
            url, accept=JSON_TYPES, headers={"Accept": "application/json", **(headers or {})}
        )
        try:
            return decode_json(fetched.data)
        except ValueError as exc:
            raise FetchError(f"GET {shown(url)}: the answer {exc}") from None

    def _slot(self, host: str) -> threading.BoundedSemaphore:
        with self._slots_lock:
            slot = self._slots.get(host)
            if slot is None:
                slot = self._slots[host] = threading.BoundedSemaphore(self.limits.per_host)
            return slot

    def _get(self, url: str, accept: Collection[str], headers: dict[str, str]) -> Fetched:
        where = f"GET {shown(url)}"
        deadline = time.monotonic() + self.limits.timeout
        # The URL is http(s): checked in `get`, and redirects are held to it.
        request = urllib.request.Request(url, headers=headers, method="GET")  # noqa: S310
        # An opener per request: its handlers carry this request's deadline.
        watch = _Deadline(deadline)
        opener = urllib.request.build_opener(
            _SameHostRedirects(), _DeadlineHTTP(watch), _DeadlineHTTPS(watch, self._tls)
        )
        try:
            with opener.open(request, timeout=self.limits.timeout) as reply:
                kind = reply.headers.get_content_type()
                gzipped = kind in GZIP_TYPES or reply.headers.get("Content-Encoding") == "gzip"
                # A gzip file's media type is its content's, unknown: the first of `accept`.
                # A gzip-encoded body has its own Content-Type, checked like any other.
                if kind not in accept and kind not in GZIP_TYPES:
                    raise FetchError(f"{where}: unexpected content type '{kind[:80]}'")
                data = self._read(reply, deadline, where)
                if time.monotonic() > deadline:  # the watch cut the answer short
                    raise FetchError(f"{where}: took longer than {self.limits.timeout:g} s")
                final = reply.geturl()
                answer_headers = {k.lower(): v for k, v in reply.headers.items()}
                charset = reply.headers.get_content_charset()
        except FetchError:
            raise
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the answer and its socket
            raise FetchError(f"{where}: HTTP {exc.code}", status=exc.code) from None
        except http.client.HTTPException as exc:  # a status line or a chunk that is not HTTP
            raise FetchError(f"{where}: not a valid HTTP answer ({type(exc).__name__})") from None
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FetchError(f"{where}: {str(reason)[:200]}") from None
        if gzipped:
            data = self._inflate(data, where)
            kind = next(iter(accept)) if kind in GZIP_TYPES else kind
        return Fetched(final, kind, data, answer_headers, charset)

    def _read(self, reply: http.client.HTTPResponse, deadline: float, where: str) -> bytes:
        """The body, in pieces, checking the size cap and the deadline between pieces."""
        pieces: list[bytes] = []
        size = 0
        # read1, not read: read(n) waits for all n bytes, so a body trickling a byte at a
        # time (each within the socket timeout) would never reach the deadline check.
        while piece := reply.read1(_READ_BYTES):
            size += len(piece)
            if size > self.limits.max_bytes:
                raise FetchError(f"{where}: the body exceeds {self.limits.max_bytes} bytes")
            if time.monotonic() > deadline:
                raise FetchError(f"{where}: took longer than {self.limits.timeout:g} s")
            pieces.append(piece)
        if reply.length:  # Content-Length promised more than came before the close
            raise FetchError(f"{where}: the body ended {reply.length} bytes early")
        return b"".join(pieces)

    def _inflate(self, data: bytes, where: str) -> bytes:
        """A gzip body, inflated to at most the size cap (a small bomb stays small)."""
        inflater = zlib.decompressobj(wbits=31)
        try:
            out = inflater.decompress(data, self.limits.max_bytes + 1)
        except zlib.error as exc:
            raise FetchError(f"{where}: the gzip body is corrupt ({exc})") from None
        if len(out) > self.limits.max_bytes or inflater.unconsumed_tail:
            raise FetchError(f"{where}: the body inflates past {self.limits.max_bytes} bytes")
        return out
