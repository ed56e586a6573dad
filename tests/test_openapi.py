"""The checked-in OpenAPI description matches the routes the server really has."""

from __future__ import annotations

import json
from contextlib import nullcontext

from starlette.routing import Route

from ragd.service.http.api import OPENAPI, create_app
from ragd.service.mcp.endpoint import McpEndpoint


async def _no_app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("no request is made")


def test_every_route_is_described_and_every_described_path_is_routed() -> None:
    spec = json.loads(OPENAPI.read_text())
    mcp = McpEndpoint(app=_no_app, lifespan=nullcontext)
    app = create_app(backend=None, mcp=mcp)  # type: ignore[arg-type]  # routes only; no request

    routed = {
        (route.path, method.lower())
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or ())
        if method != "HEAD"
    }
    described = {(path, method) for path, item in spec["paths"].items() for method in item}

    assert routed == described


def test_every_schema_reference_resolves() -> None:
    text = OPENAPI.read_text()
    spec = json.loads(text)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}

    assert refs <= set(spec["components"]["schemas"])
