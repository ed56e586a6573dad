"""How long a real `ragd serve` takes to answer hostile query bodies.

Usage:
    python bench/hostile_queries.py [--rounds 5]

Starts the real daemon with the local model over a three-page root (the pages of
tests/integration/test_hostile_inputs.py), warms its query path, then sends each kind of
hostile body `--rounds` times on a fresh connection, timing each from the request to the
parsed answer: queries at and over the length limit, nested parentheses, Tantivy field,
regex and wildcard syntax, NUL bytes, invalid UTF-8, JSON nested 100,000 levels deep, bodies
that are not a JSON object and fields of the wrong type. Prints the status each kind got and
p50/max per kind; the tests check what each answer is, this how long it takes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.daemon import Served  # noqa: E402

MAX_QUERY_CHARS = 2000  # search.max_query_chars default
PAGES = {
    "guide.md": "# Quokka guide\n\nThe quokka guide explains installation.\n\n"
    "## Install\n\nRun the installer and wait while the quokka finishes.\n",
    "settings.md": "# Settings\n\nEvery setting has a default value.\n\n"
    "## Text search\n\nThe text search ranks pages by their words.\n",
    "wombat.md": "# Wombats\n\nWombats dig burrows with strong claws.\n",
}


def _query(payload: dict[str, object]) -> bytes:
    return json.dumps(payload).encode()


def hostile_bodies() -> dict[str, bytes]:
    """One body per kind of hostile request, by label."""
    at_limit = ("quokka " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    depth = (MAX_QUERY_CHARS - len("quokka")) // 2
    return {
        "100 KB query": _query({"query": "quokka " * 15_000}),
        "query at the limit": _query({"query": at_limit}),
        "5000 nested parentheses": _query({"query": "(" * 5000 + "quokka" + ")" * 5000}),
        "parentheses at the limit": _query(
            {"query": "(" * depth + "quokka" + ")" * depth, "mode": "bm25", "k": 50}
        ),
        "field syntax": _query({"query": "chunk_id:[* TO *]", "mode": "bm25", "k": 50}),
        "regex flood, bm25": _query(
            {"query": ("/.*/ " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS], "mode": "bm25"}
        ),
        "regex flood, hybrid": _query(
            {"query": ("/.*/ " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS], "mode": "hybrid"}
        ),
        "wildcard flood": _query({"query": ("a* b* c* " * 1000)[:MAX_QUERY_CHARS]}),
        "escaped NUL": _query({"query": "quokka\u0000guide\u0000", "mode": "bm25"}),
        "raw NUL": b'{"query": "quokka\x00guide"}',
        "lone surrogate": b'{"query": "quokka \\ud800 guide"}',
        "invalid UTF-8": b'{"query": "quokka \xff\xfe guide"}',
        "JSON 100,000 levels deep": b"[" * 100_000 + b"]" * 100_000,
        "not a JSON object": b'["quokka"]',
        "k of the wrong type": _query({"query": "quokka", "k": "10"}),
    }


def post(port: int, body: bytes) -> tuple[int, float]:
    """POST `body` to /v1/query on a fresh connection; (status, seconds to the parsed answer)."""
    with httpx2.Client(timeout=60) as client:
        started = time.perf_counter()
        reply = client.post(
            f"http://127.0.0.1:{port}/v1/query",
            content=body,
            headers={"Content-Type": "application/json"},
        )
        json.loads(reply.content)
        return reply.status_code, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    bodies = hostile_bodies()
    seconds: dict[str, list[float]] = {label: [] for label in bodies}
    statuses: dict[str, set[int]] = {label: set() for label in bodies}
    with tempfile.TemporaryDirectory(prefix="ragd-hostile-bench-") as tmp:
        work = Path(tmp)
        root = work / "docs"
        root.mkdir()
        for name, text in PAGES.items():
            (root / name).write_text(text)
        daemon = Served(work, root)
        try:
            daemon.start().wait_ready()
            daemon.wait_scanned()
            for _ in range(3):  # the first queries open readers and tables
                daemon.query("quokka guide", mode="hybrid")
            for _ in range(args.rounds):  # kinds interleaved, so drift spreads over all
                for label, body in bodies.items():
                    status, took = post(daemon.port, body)
                    statuses[label].add(status)
                    seconds[label].append(took)
            alive = daemon.get("/healthz")["status"]
        finally:
            daemon.stop()

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"{args.rounds} rounds of {len(bodies)} hostile bodies; /healthz after them: {alive}")
    print()
    print("| body | status | p50 ms | max ms |")
    print("|---|---|---|---|")
    for label, taken in seconds.items():
        shown = "/".join(str(s) for s in sorted(statuses[label]))
        print(
            f"| {label} | {shown} | {statistics.median(taken) * 1000:.1f} | "
            f"{max(taken) * 1000:.1f} |"
        )
    every = sorted(t for taken in seconds.values() for t in taken)
    print(f"| all | | {statistics.median(every) * 1000:.1f} | {every[-1] * 1000:.1f} |")


if __name__ == "__main__":
    main()
