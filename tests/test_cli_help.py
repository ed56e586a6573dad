"""`ragd COMMAND --help` says what the code does: the routes `ragd serve` really has, the
fusion `ragd query` really uses by default."""

from __future__ import annotations

import re
from contextlib import nullcontext

import pytest
from starlette.routing import Route

from ragd.cli import main
from ragd.config.settings import SearchConfig
from ragd.service.http.api import create_app
from ragd.service.mcp.endpoint import McpEndpoint

# A route line of `ragd serve --help`: methods, then the path.
_ROUTE_LINE = re.compile(r"^\s+((?:GET|POST|DELETE)(?:\|(?:GET|POST|DELETE))*)\s+(/\S*)")


async def _no_app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("no request is made")


def _help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


def test_serve_help_lists_every_route_the_server_has(capsys: pytest.CaptureFixture[str]) -> None:
    mcp = McpEndpoint(app=_no_app, lifespan=nullcontext)
    app = create_app(backend=None, mcp=mcp)  # type: ignore[arg-type]  # routes only; no request
    routed = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or ())
        if method != "HEAD"
    }

    listed = {
        (method, found.group(2).replace("<", "{").replace(">", "}"))
        for line in _help(capsys, "serve").splitlines()
        if (found := _ROUTE_LINE.match(line))
        for method in found.group(1).split("|")
    }

    assert listed == routed


def test_query_help_names_the_default_fusion(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(_help(capsys, "query").split())

    assert SearchConfig().fusion == "convex"
    assert "hybrid (the default)" in text and "convex fusion merges them" in text
    assert 'search.fusion = "rrf" fuses by weighted reciprocal rank' in text


@pytest.mark.parametrize("command", ["index", "query", "status", "eval", "serve", "mcp"])
def test_every_command_takes_config_and_debug_after_its_name(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = _help(capsys, command)

    assert "--config PATH" in text and "--debug" in text
