"""Webhook acknowledgement (202) latency while the writer is busy re-indexing a large folder.

Usage:
    python bench/webhook_latency.py [--files 20000] [--deliveries 300]

Unpacks tldr-pages, starts the real daemon with the local model, and while its start-up
scan indexes the folder, sends signed Standard Webhooks deliveries one after another,
timing each until its 202. The queue is durable (SQLite, synchronous=FULL), so this is
the cost of a fsync'd insert plus signature checks, independent of the embedder.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import SHARED  # noqa: E402
from tests.integration.daemon import Served  # noqa: E402
from tests.integration.test_webhooks import SECRET_TEXT, signed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--deliveries", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ragd-webhook-bench-") as tmp:
        work = Path(tmp)
        with tarfile.open(SHARED / "corpora" / "tldr-pages.tar.gz") as archive:
            members = [m for m in archive.getmembers() if m.isfile()][: args.files]
            archive.extractall(work / "corpus", members=members, filter="data")
        daemon = Served(
            work,
            work / "corpus",
            env={"RAGD_TEST_WEBHOOK_SECRET": SECRET_TEXT},
            extra_sources='\n[[sources]]\nname = "cms"\ntype = "webhook"\n'
            'secret_env = "RAGD_TEST_WEBHOOK_SECRET"\n',
        )
        latencies: list[float] = []
        busy_during = 0
        try:
            daemon.start().wait_ready()
            for n in range(args.deliveries):
                body, headers = signed(
                    {
                        "event": "upsert",
                        "id": f"entry-{n}",
                        "content": f"# Entry {n}\n\nText {n}.\n",
                    }
                )
                started = time.perf_counter()
                status, _ = daemon.post("/v1/webhooks/cms", body, headers)
                latencies.append(time.perf_counter() - started)
                assert status == 202, status
            busy_during = int(daemon.status()["daemon"]["writer"]["busy"])
        finally:
            daemon.stop()

    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"writer busy indexing {args.files} tldr pages; {args.deliveries} sequential deliveries")
    print(f"writer still busy after the last delivery: {bool(busy_during)}")
    print()
    print("| p50 ms | p95 ms | p99 ms | max ms |")
    print("|---|---|---|---|")
    print(
        f"| {statistics.median(latencies) * 1000:.1f} | {pct(0.95):.1f} | {pct(0.99):.1f} | "
        f"{latencies[-1] * 1000:.1f} |"
    )


if __name__ == "__main__":
    main()
