"""The MCP SDK's own clients on ragd: stdio on `ragd mcp`, Streamable HTTP on `ragd
serve`'s /mcp (for tests/integration/test_mcp.py and bench/mcp_latency.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO


@asynccontextmanager
async def stdio_session(config: Path) -> AsyncIterator[ClientSession]:
    """The SDK's stdio client on `ragd mcp`, initialised."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragd", "--config", str(config), "mcp"],
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(port: int) -> AsyncIterator[ClientSession]:
    """The SDK's Streamable HTTP client on `ragd serve`'s /mcp, initialised."""
    async with (
        streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
