"""The MCP tools' arguments as the reader receives them (a recording reader; the tools
over a real index and a real client are in tests/integration/test_mcp.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from ragd.search.parents import ParentHit
from ragd.search.results import QueryRequest, SearchResponse
from ragd.service.mcp.tools import build_server


class _Recording:
    def __init__(self) -> None:
        self.requests: list[QueryRequest] = []

    def search(self, request: QueryRequest) -> SearchResponse:
        self.requests.append(request)
        return SearchResponse(request.query, "hybrid", [])

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        return None

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        return None


def _search(arguments: dict[str, Any]) -> QueryRequest:
    reader = _Recording()
    server = build_server(reader, dict)
    asyncio.run(server.call_tool("search", arguments))
    return reader.requests[0]


def test_a_search_without_a_mode_leaves_it_to_the_configured_default() -> None:
    assert _search({"query": "q"}).mode is None


def test_a_search_with_a_mode_passes_it_on() -> None:
    assert _search({"query": "q", "mode": "bm25"}).mode == "bm25"


def test_a_search_passes_its_filters_on() -> None:
    request = _search({"query": "q", "source": ["docs"], "path": "guide/*.md"})

    assert request.filters.sources == ("docs",)
    assert request.filters.path == "guide/*.md"
