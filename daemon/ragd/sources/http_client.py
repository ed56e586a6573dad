"""HTTP GETs of remote sources: what ragd allows itself on hosts it does not control.

Owns the rules of every request ragd makes to a CMS, a sitemap or a site: a deadline for
the whole request (connect to last byte), a size cap (a gzip body counts as what it
inflates to), a content-type check, at most `per_host` requests at once to one host,
http(s) only, and at most MAX_REDIRECTS redirects, each staying on the host it started
from (a page must not send ragd to another host, such as one on the internal network).
Failures are one `FetchError` with a one-line message that names the URL without its
query (which may carry an API key).

The HTTP itself is ragd.adapters.httpx's, one session per source: this module keeps only
the policy, so a reader finds what ragd permits in one place and how httpx does it in another.
"""

from __future__ import annotations

import email.message
import threading
import urllib.parse
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ragd.adapters.httpx import (
    Answer,
    HttpFailure,
    HttpSession,
    HttpTimeout,
    RedirectRefused,
    Timeouts,
    TooManyRedirects,
)
from ragd.errors import RagdError
from ragd.sources.json_body import decode_json

USER_AGENT = "ragd"  # the service names its version (ragd.service.remote_sources)
MAX_REDIRECTS = 5
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


def _may_redirect(url: str, target: str) -> bool:
    """A redirect is followed only to http(s) on the host it comes from."""
    return urllib.parse.urlsplit(target).scheme in ("http", "https") and same_host(url, target)


def _media_type(content_type: str | None) -> tuple[str, str | None]:
    """A Content-Type's media type and charset, by the email rules HTTP shares: lower
    case, and text/plain when the header is missing or malformed."""
    message = email.message.Message()
    if content_type is not None:
        message["Content-Type"] = content_type
    return message.get_content_type(), message.get_content_charset()


class HttpClient:
    """GETs for one source: its limits, its headers (tokens: never logged), its session."""

    def __init__(self, limits: Limits, headers: Mapping[str, str] | None = None) -> None:
        self.limits = limits
        # Only the deadline is configured (fetch_timeout): a connect or a read may use it all.
        timeouts = Timeouts(connect=limits.timeout, read=limits.timeout, total=limits.timeout)
        # gzip is the one encoding inflated here, within the size cap.
        defaults = {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}
        self._session = HttpSession(timeouts, {**defaults, **(headers or {})})
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
            return self._get(url, accept, headers or {})

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

    def _get(self, url: str, accept: Collection[str], headers: Mapping[str, str]) -> Fetched:
        where = f"GET {shown(url)}"
        try:
            with self._session.request(
                "GET", url, headers=headers, follow=_may_redirect, max_redirects=MAX_REDIRECTS
            ) as answer:
                if not 200 <= answer.status < 300:
                    raise FetchError(f"{where}: HTTP {answer.status}", status=answer.status)
                kind, charset = _media_type(answer.header("Content-Type"))
                gzipped = kind in GZIP_TYPES or answer.header("Content-Encoding") == "gzip"
                # A gzip file's media type is its content's, unknown: the first of `accept`.
                # A gzip-encoded body has its own Content-Type, checked like any other.
                if kind not in accept and kind not in GZIP_TYPES:
                    raise FetchError(f"{where}: unexpected content type '{kind[:80]}'")
                data = self._read(answer, where)
                final, answer_headers = answer.url, answer.headers()
        except RedirectRefused as exc:
            where = f"GET {shown(exc.source)}"
            raise FetchError(f"{where}: redirected off the host to {shown(exc.target)}") from None
        except TooManyRedirects:
            raise FetchError(f"{where}: more than {MAX_REDIRECTS} redirects") from None
        except HttpFailure as exc:
            raise FetchError(f"{where}: {exc}") from None
        if gzipped:
            data = self._inflate(data, where)
            kind = next(iter(accept)) if kind in GZIP_TYPES else kind
        return Fetched(final, kind, data, answer_headers, charset)

    def _read(self, answer: Answer, where: str) -> bytes:
        """The body as sent, in pieces, refused as soon as it passes the size cap."""
        pieces: list[bytes] = []
        try:
            for piece in answer.chunks():
                if answer.received > self.limits.max_bytes:
                    raise FetchError(f"{where}: the body exceeds {self.limits.max_bytes} bytes")
                pieces.append(piece)
        except HttpTimeout:
            raise
        except HttpFailure:
            promised = answer.header("Content-Length")
            if promised is not None and promised.isdigit() and int(promised) > answer.received:
                missing = int(promised) - answer.received
                raise FetchError(f"{where}: the body ended {missing} bytes early") from None
            raise
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
