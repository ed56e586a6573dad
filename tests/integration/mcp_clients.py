"""The MCP SDK's own clients on ragd: stdio on `ragd mcp`, Streamable HTTP on `ragd
serve`'s /mcp (for tests/integration/test_mcp.py and bench/mcp_latency.py); and a flood of
bare `initialize` requests (tests/integration/test_mcp_sessions.py, bench/mcp_sessions.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
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
async def http_session(port: int, token: str | None = None) -> AsyncIterator[ClientSession]:
    """The SDK's Streamable HTTP client on `ragd serve`'s /mcp, initialised; with `token`,
    it sends `Authorization: Bearer <token>` on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (
            read,
            write,
            *_,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"},
        },
    }
).encode()


async def initialize_flood(port: int, count: int, connections: int = 8) -> Counter[int]:
    """Send `count` `initialize` requests to /mcp, each opening a session that is never
    used again, over `connections` kept-alive connections of a bare HTTP/1.1 client (an
    SDK client costs more CPU than the server's answer); the answers' status codes."""
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n"
    ).encode() + INITIALIZE
    statuses: Counter[int] = Counter()
    left = iter(range(count))

    async def send_some() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in left:
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                statuses[int(head.split(b" ", 2)[1])] += 1
                await _skip_body(reader, head)
        finally:
            writer.close()

    await asyncio.gather(*(send_some() for _ in range(connections)))
    return statuses


async def _skip_body(reader: asyncio.StreamReader, head: bytes) -> None:
    fields = dict(line.lower().split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
    if fields.get(b"transfer-encoding", b"").strip() == b"chunked":
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    else:
        await reader.readexactly(int(fields.get(b"content-length", b"0")))


def rss_mib(pid: int) -> float:
    """The resident memory of process `pid`, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")
