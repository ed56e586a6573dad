"""Search latency as an LLM application sees it: MCP over stdio and Streamable HTTP,
beside the plain HTTP API.

Usage:
    python bench/mcp_latency.py [--queries N] [--no-rerank]

Starts the real daemon on a copy of fastapi-docs with the local models (the second stage
on unless --no-rerank), waits until every chunk has its second-stage vector, then runs
the gold set's questions (the first N, default all) one at a time, k=8, hybrid, through
three clients:

- `POST /v1/query` (httpx, one kept-alive connection);
- the MCP SDK's Streamable HTTP client on `ragd serve`'s /mcp (one session);
- the MCP SDK's stdio client on `ragd mcp` beside the daemon (one session).

The clock runs from the call to the parsed answer. Prints p50/p95/max per client, and
checks that every client's top hit agrees with /v1/query's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx2 as httpx  # noqa: E402
from mcp import ClientSession  # noqa: E402

from tests.conftest import FASTAPI_DOCS, GOLD, RERANK_MODEL_DIR  # noqa: E402
from tests.integration.daemon import Served, wait_until  # noqa: E402
from tests.integration.mcp_clients import http_session, stdio_session  # noqa: E402

K = 8


def _questions(limit: int) -> list[str]:
    lines = GOLD.read_text().splitlines()
    return [json.loads(line)["query"] for line in lines][:limit]


def _filled(daemon: Served) -> bool:
    second = daemon.status()["sources"][0].get("second_stage")
    return second is None or (bool(second["chunks"]) and second["pending"] == 0)


async def _timed(
    call: Callable[[str], Awaitable[str]], questions: list[str]
) -> tuple[list[float], list[str]]:
    """Seconds per question and each answer's top chunk id."""
    await call("warm up")
    seconds, tops = [], []
    for question in questions:
        started = time.perf_counter()
        tops.append(await call(question))
        seconds.append(time.perf_counter() - started)
    return seconds, tops


async def _over_http_api(port: int, questions: list[str]) -> tuple[list[float], list[str]]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:

        async def call(question: str) -> str:
            answer = await client.post("/v1/query", json={"query": question, "k": K})
            results = answer.json()["results"]
            return str(results[0]["chunk_id"]) if results else ""

        return await _timed(call, questions)


async def _over_session(
    session: ClientSession, questions: list[str]
) -> tuple[list[float], list[str]]:
    async def call(question: str) -> str:
        result = await session.call_tool("search", {"query": question, "k": K})
        hits = (result.structured_content or {}).get("hits") or []
        return str(hits[0]["chunk_id"]) if hits else ""

    return await _timed(call, questions)


async def _over_mcp_http(port: int, questions: list[str]) -> tuple[list[float], list[str]]:
    async with http_session(port) as session:
        return await _over_session(session, questions)


async def _over_mcp_stdio(config: Path, questions: list[str]) -> tuple[list[float], list[str]]:
    async with stdio_session(config) as session:
        return await _over_session(session, questions)


def _report(name: str, seconds: list[float]) -> None:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(
        f"{name:<24} p50 {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   max {ms[-1]:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=None, help="Only the first N questions.")
    parser.add_argument("--no-rerank", action="store_true", help="Turn the second stage off.")
    args = parser.parse_args()
    questions = _questions(args.queries)

    with tempfile.TemporaryDirectory(prefix="ragd-mcp-") as tmp:
        work = Path(tmp)
        root = shutil.copytree(FASTAPI_DOCS, work / "docs")
        daemon = Served(work, root, rerank=None if args.no_rerank else RERANK_MODEL_DIR)
        try:
            daemon.start().wait_ready(timeout=120)
            daemon.wait_scanned(timeout=600)
            wait_until(lambda: _filled(daemon), timeout=900, interval=1)
            chunks = sum(s["chunks"] for s in daemon.status()["sources"])
            print(
                f"fastapi-docs, {chunks} chunks, {len(questions)} questions, k={K}, "
                f"second stage {'off' if args.no_rerank else 'on'}; "
                f"{os.cpu_count()} cores, Python {platform.python_version()}"
            )
            api, api_tops = asyncio.run(_over_http_api(daemon.port, questions))
            mcp_http, http_tops = asyncio.run(_over_mcp_http(daemon.port, questions))
            mcp_stdio, stdio_tops = asyncio.run(_over_mcp_stdio(daemon.config, questions))
        finally:
            daemon.stop()
    _report("POST /v1/query", api)
    _report("MCP Streamable HTTP", mcp_http)
    _report("MCP stdio (ragd mcp)", mcp_stdio)
    agree = sum(a == h == s for a, h, s in zip(api_tops, http_tops, stdio_tops, strict=True))
    print(f"top hit the same over all three: {agree}/{len(questions)}")


if __name__ == "__main__":
    main()
