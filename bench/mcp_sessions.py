"""What a flood of MCP sessions costs `ragd serve`: 12,000 `initialize` calls to /mcp from
one client without a token (issue 45's figure).

Usage:
    python bench/mcp_sessions.py [--initializes N] [--connections C]

Starts the real daemon on five fastapi-docs pages (loopback, where /mcp needs no token),
reads its resident memory before any MCP request (so the SDK's import counts as growth),
sends N `initialize` requests over C kept-alive connections of a bare HTTP/1.1 client, each
opening a session it never uses again, then has the MCP SDK's own client initialise and
call `search`. Prints the answers' status codes, the time taken, the daemon's resident
memory before and after and its peak, and whether the new client was served.

Then, in this process, what one session holds (Python's allocations, traced, per session
over 200 sessions of the SDK's app behind ragd's session table with no caps): opened by
the `initialize` above, and by the worst one ragd accepts, `INITIALIZE_BYTES` of nested
empty lists in its declared capabilities.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx2 as httpx  # noqa: E402

from ragd.search.parents import ParentHit  # noqa: E402
from ragd.search.results import QueryRequest, SearchResponse  # noqa: E402
from ragd.service.mcp.sessions import INITIALIZE_BYTES, SessionTable  # noqa: E402
from ragd.service.mcp.tools import build_server  # noqa: E402
from tests.integration.daemon import Served, small_root  # noqa: E402
from tests.integration.mcp_clients import (  # noqa: E402
    INITIALIZE,
    http_session,
    initialize_flood,
)

SESSIONS_TRACED = 200


def _memory_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a running process: its resident memory now and at its peak, MiB."""
    values = {"VmRSS": float("nan"), "VmHWM": float("nan")}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in values:
            values[name] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


async def _search_as_a_new_client(port: int) -> bool:
    async with http_session(port) as session:
        result = await session.call_tool("search", {"query": "request body", "k": 3})
        return not result.is_error


def _new_client(port: int) -> str:
    """Whether a new SDK client initialised and searched; if not, why."""
    try:
        served = asyncio.run(asyncio.wait_for(_search_as_a_new_client(port), 60))
    except Exception as exc:  # what went wrong is the figure
        return f"NO ({type(exc).__name__}: {exc})"
    return "yes" if served else "NO (the search was an error)"


class _NoIndex:
    def search(self, request: QueryRequest) -> SearchResponse:
        return SearchResponse(request.query, "hybrid", [])

    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None:
        return None

    def document(self, doc_id: str, max_chars: int) -> ParentHit | None:
        return None


def _nested_initialize() -> bytes:
    """An `initialize` of INITIALIZE_BYTES whose capabilities are nested empty lists: the
    most Python objects per byte that a session keeps."""
    message = json.loads(INITIALIZE)
    message["params"]["capabilities"] = {"experimental": {"x": {"y": "LISTS"}}}
    text = json.dumps(message)
    lists = "[" + ",".join(["[]"] * ((INITIALIZE_BYTES - len(text)) // 3)) + "]"
    return text.replace('"LISTS"', lists).encode()


async def _kib_per_session(initialize: bytes) -> float:
    made = build_server(_NoIndex(), dict)
    app = made.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    table = SessionTable(
        app,
        path="/mcp",
        host="127.0.0.1:8750",
        max_body_bytes=1 << 20,
        max_sessions=SESSIONS_TRACED + 1,  # and the first, opened before the count
        per_client=SESSIONS_TRACED + 1,
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    transport = httpx.ASGITransport(app=table)
    async with (
        made.session_manager.run(),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8750") as client,
    ):
        await client.post("/mcp", content=initialize, headers=headers)  # imports, caches
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(SESSIONS_TRACED):
            answer = await client.post("/mcp", content=initialize, headers=headers)
            assert answer.status_code == 200, answer.text
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    return held / SESSIONS_TRACED / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--initializes", type=int, default=12_000)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()

    print(
        f"{args.initializes} initializes over {args.connections} connections, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="ragd-mcp-sessions-") as tmp:
        work = Path(tmp)
        daemon = Served(work, small_root(work / "docs", 5))
        try:
            daemon.start().wait_ready(timeout=120)
            daemon.wait_scanned()
            assert daemon.process is not None
            pid = daemon.process.pid
            before, _ = _memory_mib(pid)
            started = time.perf_counter()
            statuses = asyncio.run(
                initialize_flood(daemon.port, args.initializes, args.connections)
            )
            seconds = time.perf_counter() - started
            after, peak = _memory_mib(pid)
            print(f"answers: {dict(sorted(statuses.items()))} in {seconds:.1f} s")
            print(
                f"serve RSS: {before:.0f} MiB before, {after:.0f} MiB after "
                f"(+{after - before:.0f} MiB), peak {peak:.0f} MiB"
            )
            print(f"a new SDK client initialised and searched: {_new_client(daemon.port)}")
        finally:
            daemon.stop()
    logging.disable(logging.INFO)  # the SDK logs each session it opens and ends
    plain = asyncio.run(_kib_per_session(INITIALIZE))
    nested = _nested_initialize()
    worst = asyncio.run(_kib_per_session(nested))
    print(
        f"one session holds {plain:.1f} KiB ({len(INITIALIZE)}-byte initialize), "
        f"{worst:.1f} KiB ({len(nested)}-byte initialize of nested lists, the worst accepted)"
    )


if __name__ == "__main__":
    main()
