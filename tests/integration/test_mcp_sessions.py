"""/mcp on a real `ragd serve` under a flood of sessions from one client without a token
(on loopback none is needed): the oldest sessions are ended to make room, a new client is
served, and the daemon grows little. The full 12,000 `initialize` calls of issue 45 (past
the SDK's own cap of 10,000, which refused every new client) take about a minute on two
cores, so they are bench/mcp_sessions.py's; this floods past ragd's caps, well short of it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from ragd.service.mcp.sessions import MAX_SESSIONS
from tests.integration.daemon import Served, small_root
from tests.integration.mcp_clients import INITIALIZE, http_session, initialize_flood, rss_mib

FLOOD = 6 * MAX_SESSIONS
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 5))
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_a_flood_of_initializes_ends_the_oldest_sessions_and_a_new_client_is_served(
    served: Served,
) -> None:
    assert served.process is not None
    before = rss_mib(served.process.pid)
    url = f"http://127.0.0.1:{served.port}/mcp"
    oldest = httpx.post(url, content=INITIALIZE, headers=HEADERS).headers["mcp-session-id"]

    statuses = asyncio.run(initialize_flood(served.port, FLOOD))
    ping = b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}'
    after = httpx.post(url, content=ping, headers={**HEADERS, "mcp-session-id": oldest})

    async def new_client() -> bool:
        async with http_session(served.port) as session:
            result = await session.call_tool("search", {"query": "request body", "k": 3})
            return bool(result.structured_content and result.structured_content["hits"])

    assert statuses == {200: FLOOD}
    assert after.status_code == 404  # ended to make room; its client opens a new one
    assert asyncio.run(asyncio.wait_for(new_client(), 60))
    assert rss_mib(served.process.pid) - before <= 100
