"""The HTTP API of `ragd serve` (Starlette): routes, body limits, JSON errors.

Owns request parsing and response shapes only; what a query or the status report does
is the backend's business (see `ragd.service.serve`). Every error is a JSON object
`{"error": "..."}` with a 4xx/5xx code; nothing a client sends can raise past here.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ragd.errors import RagdError, UsageError
from ragd.search.context import DEFAULT_CONTEXT_CHARS
from ragd.search.filters import QueryFilter
from ragd.search.results import MODES, QueryRequest
from ragd.service.access import OPEN, Grant, scoped_status
from ragd.service.http.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from ragd.service.http.page import CSP
from ragd.service.mcp.endpoint import PATH as MCP_PATH
from ragd.service.mcp.endpoint import McpEndpoint
from ragd.sources.cms.formats import WebhookRequest

OPENAPI = Path(__file__).with_name("openapi.json")


class Backend(Protocol):
    """What the HTTP layer needs from the daemon."""

    @property
    def max_body_bytes(self) -> int:
        """Largest request body accepted."""
        ...

    def search(self, request: QueryRequest) -> Any:
        """Run a query; returns the query contract's JSON object."""
        ...

    def context(self, request: QueryRequest, max_chars: int) -> Any:
        """A query's prompt-ready context (ragd.search.context) as JSON."""
        ...

    def status(self) -> dict[str, object]:
        """The status report's JSON object, with a daemon section."""
        ...

    def index(self, full: bool) -> dict[str, object]:
        """A pass over every folder source, as `ragd index --json` reports it; UsageError
        where this server does not index."""
        ...

    def serves(self, data_dir: str) -> bool:
        """Whether `data_dir` (a path as the asking process resolved it) is the data
        directory this server answers from."""
        ...

    def health(self) -> dict[str, object]:
        """Liveness and readiness: {"status": "ok" | "starting" | "stopping", ...}."""
        ...

    def has_webhook_source(self, source: str) -> bool:
        """True when `source` is a configured webhook source."""
        ...

    def webhook(self, source: str, request: WebhookRequest) -> tuple[int, dict[str, Any]]:
        """Handle one delivery; returns (HTTP status, JSON body)."""
        ...

    def note_webhook(self, source: str, outcome: str) -> None:
        """Count a delivery refused before it reached `webhook` (e.g. too large)."""
        ...

    def metrics_text(self) -> bytes:
        """The Prometheus text exposition."""
        ...

    def status_page(self, grant: Grant) -> str:
        """The status page's HTML (ragd.service.http.page), of the grant's sources."""
        ...


# How far past the body limit a declared body is still read (and dropped) before the 413.
DRAIN_FACTOR = 4
# The data directory a CLI command asking the daemon means: an answer from a daemon of
# another data directory would be someone else's (409 says so, without naming its own).
DATA_DIR_HEADER = "x-ragd-data-dir"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 once it is known to exceed `limit`.

    A body declared too big but within `DRAIN_FACTOR` times the limit is read and
    dropped first: answering while the client still sends makes the server close a
    connection with unread data, and the client sees a reset (a broken pipe) instead of
    the 413. Anything bigger is refused at once.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise HTTPException(400, "invalid Content-Length")
        if int(declared) > limit:
            if int(declared) <= DRAIN_FACTOR * limit:
                async for _ in request.stream():
                    pass
            raise HTTPException(413, f"body is {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise HTTPException(413, f"body exceeds the limit of {limit} bytes")
    return bytes(body)


def _json_object(body: bytes) -> Mapping[str, Any]:
    try:
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise HTTPException(400, "body is not valid UTF-8") from None
    except (json.JSONDecodeError, RecursionError):
        raise HTTPException(400, "body is not valid JSON") from None
    if not isinstance(value, dict):
        raise HTTPException(400, "body must be a JSON object")
    return value


_QUERY_FIELDS = {"query", "k", "mode", "exclude_stale", "expand", "rerank", "source", "path"}


def _flag(payload: Mapping[str, Any], name: str, default: bool) -> bool:
    value = payload.get(name, default)
    if not isinstance(value, bool):
        raise HTTPException(400, f"'{name}' must be true or false")
    return value


def _query_request(payload: Mapping[str, Any], extra: frozenset[str] = frozenset()) -> QueryRequest:
    """The body of POST /v1/query as a request; 400 naming the first bad field. `extra`
    names fields another endpoint reads besides."""
    unknown = set(payload) - _QUERY_FIELDS - extra
    if unknown:
        raise HTTPException(400, f"unknown field(s): {', '.join(sorted(unknown))}")
    query = payload.get("query")
    if not isinstance(query, str):
        raise HTTPException(400, "'query' must be a string")
    k = payload.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000):
        raise HTTPException(400, "'k' must be an integer from 1 to 1000")
    mode = payload.get("mode")
    if mode is not None and mode not in MODES:
        raise HTTPException(400, f"'mode' must be one of {', '.join(MODES)}")
    sources = payload.get("source", [])
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise HTTPException(400, "'source' must be a source name or a list of them")
    path = payload.get("path")
    if path is not None and not isinstance(path, str):
        raise HTTPException(400, "'path' must be a glob string")
    try:
        filters = QueryFilter(tuple(sources), path)
    except UsageError as exc:
        raise HTTPException(400, str(exc)) from None
    return QueryRequest(
        query,
        k=k,
        mode=mode,
        exclude_stale=_flag(payload, "exclude_stale", False),
        expand=_flag(payload, "expand", False),
        rerank=_flag(payload, "rerank", True),
        filters=filters,
    )


async def _answered(work: Callable[..., object], *args: object, refused: int = 400) -> Response:
    """`work(*args)` off the event loop, as JSON; its UsageError is `refused`, any other
    RagdError 503 (the stores cannot answer now)."""
    try:
        return JSONResponse(await run_in_threadpool(work, *args))
    except UsageError as exc:
        return _error(refused, str(exc))
    except RagdError as exc:
        return _error(503, str(exc))


class _Endpoints:
    """The route handlers, bound to one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def _same_data_dir(self, request: Request) -> None:
        asked = request.headers.get(DATA_DIR_HEADER)
        if asked is not None and not self.backend.serves(asked):
            raise HTTPException(409, "this daemon serves another data directory")

    async def query(self, request: Request) -> Response:
        self._same_data_dir(request)
        payload = _json_object(await read_body(request, self.backend.max_body_bytes))
        return await _answered(self.backend.search, _scoped(_query_request(payload), request))

    async def context(self, request: Request) -> Response:
        self._same_data_dir(request)
        payload = _json_object(await read_body(request, self.backend.max_body_bytes))
        query = _scoped(_query_request(payload, frozenset({"max_chars"})), request)
        max_chars = payload.get("max_chars", DEFAULT_CONTEXT_CHARS)
        if isinstance(max_chars, bool) or not isinstance(max_chars, int):
            raise HTTPException(400, "'max_chars' must be an integer")
        return await _answered(self.backend.context, query, max_chars)

    async def status(self, request: Request) -> Response:
        self._same_data_dir(request)
        grant = _grant(request)
        return await _answered(lambda: scoped_status(self.backend.status(), grant))

    async def index(self, request: Request) -> Response:
        """`ragd index` beside the daemon: from this machine only, since a pass (a full
        one above all) costs what a query does not."""
        if request.client is None or not _is_loopback(request.client.host):
            raise HTTPException(403, "an index pass is asked for from this machine only")
        self._same_data_dir(request)
        payload = _json_object(await read_body(request, self.backend.max_body_bytes))
        unknown = set(payload) - {"full"}
        if unknown:
            raise HTTPException(400, f"unknown field(s): {', '.join(sorted(unknown))}")
        # A daemon that does not index (a read replica) refuses for what it is, not for
        # what was asked: a conflict, not a bad request.
        return await _answered(self.backend.index, _flag(payload, "full", False), refused=409)

    async def webhook(self, request: Request) -> Response:
        source = request.path_params["source"]
        if not self.backend.has_webhook_source(source):
            empty = WebhookRequest({}, b"")
            status, answer = await run_in_threadpool(self.backend.webhook, source, empty)
            return JSONResponse(answer, status_code=status)
        try:
            body = await read_body(request, self.backend.max_body_bytes)
        except HTTPException as exc:
            if exc.status_code == 413:
                self.backend.note_webhook(source, "too_large")
            raise
        delivery = WebhookRequest(
            headers=_single_headers(request),
            body=body,
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
        )
        status, answer = await run_in_threadpool(self.backend.webhook, source, delivery)
        return JSONResponse(answer, status_code=status)

    async def status_page(self, request: Request) -> Response:
        try:
            page = await run_in_threadpool(self.backend.status_page, _grant(request))
        except RagdError as exc:
            return _error(503, str(exc))
        headers = {
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
        }
        return HTMLResponse(page, headers=headers)

    async def metrics(self, request: Request) -> Response:
        body = await run_in_threadpool(self.backend.metrics_text)
        return Response(body, media_type=METRICS_CONTENT_TYPE)

    async def openapi(self, request: Request) -> Response:
        return Response(OPENAPI.read_bytes(), media_type="application/json")

    async def healthz(self, request: Request) -> Response:
        health = self.backend.health()
        return JSONResponse(health, status_code=200 if health.get("status") == "ok" else 503)


def _grant(request: Request) -> Grant:
    """The grant the access gate found for the request (ragd.service.http.gate)."""
    found = getattr(request.state, "grant", OPEN)
    return found if isinstance(found, Grant) else OPEN


def _scoped(query: QueryRequest, request: Request) -> QueryRequest:
    """The query limited to the sources the request's token may read."""
    return replace(query, filters=_grant(request).scoped(query.filters))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _single_headers(request: Request) -> dict[str, str]:
    """Lower-case header names to values; a header sent twice keeps both, comma-joined,
    so that no scheme can be fooled into reading one copy while a proxy read the other."""
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    return headers


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(exc.status_code, str(exc.detail))


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client left before its body was in (or the server closed it for taking too
    # long, ragd.service.http.connections): nobody reads this answer, and it is no error.
    return Response(status_code=400)


async def _server_error(request: Request, exc: Exception) -> Response:
    return _error(500, f"internal error: {type(exc).__name__}")


def create_app(backend: Backend, mcp: McpEndpoint | None = None) -> Starlette:
    """The ASGI application for a backend, with the MCP server at /mcp when given (its
    sessions run for as long as the application's lifespan). `ragd serve` puts it behind
    the access gate (ragd.service.http.gate), which gives each request its grant."""
    api = _Endpoints(backend)
    routes = [
        Route("/", api.status_page, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/v1/query", api.query, methods=["POST"]),
        Route("/v1/context", api.context, methods=["POST"]),
        Route("/v1/status", api.status, methods=["GET"]),
        Route("/v1/index", api.index, methods=["POST"]),
        Route("/v1/webhooks/{source}", api.webhook, methods=["POST"]),
        Route("/metrics", api.metrics, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
    ]
    lifespan = None
    if mcp is not None:
        routes.append(Route(MCP_PATH, mcp.app, methods=["GET", "POST", "DELETE"]))

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with mcp.lifespan():
                yield

    return Starlette(
        routes=routes,
        exception_handlers={
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            Exception: _server_error,
        },
        lifespan=lifespan,
    )
