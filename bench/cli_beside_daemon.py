"""What `ragd status`, `ragd query` and a one-shot `ragd index` cost beside a running
`ragd serve` of their data directory (they ask it over its local HTTP API), and what
`ragd status` costs without one.

Usage:
    python bench/cli_beside_daemon.py [--runs 5] [--second-stage]

Copies fastapi-docs into a temporary root, starts `ragd serve` on it (the first stage
only, unless --second-stage: then it waits until every chunk has its second-stage vector,
which takes a minute or two here), and times whole processes (`ragd` console script:
interpreter, imports, the request, exit), `--runs` each, medians printed:

- `ragd status --json`;
- `ragd query --json` for a few questions, checking that its hits are /v1/query's;
- `ragd index --json` after a one-section edit of a page, checking that the edit is
  searchable when the command returns;
- `ragd status --json` once the daemon has stopped (it then reads the stores itself).

Asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import FASTAPI_DOCS, RERANK_MODEL_DIR  # noqa: E402
from tests.integration.daemon import Served  # noqa: E402

RAGD = REPO / ".venv" / "bin" / "ragd"
QUESTIONS = ("how do I declare a request body?", "path parameters with types", "CORS")


def _timed(config: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    began = time.perf_counter()
    done = subprocess.run(
        [str(RAGD), "--config", str(config), *args], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"ragd {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds, done


def _median(figures: list[float]) -> str:
    return f"{statistics.median(figures):.3f} s (min {min(figures):.3f}, max {max(figures):.3f})"


def _edit(page: Path, n: int) -> str:
    """Add a sentence with a word of its own under the page's first heading; the word."""
    word = f"quagga{n}x"
    lines = page.read_text().split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith("#"))
    lines.insert(first + 1, f"\nThe {word} grazes here.\n")
    page.write_text("\n".join(lines))
    return word


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--second-stage", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragd-beside-"))
    try:
        root = work / "fastapi-docs"
        shutil.copytree(FASTAPI_DOCS, root)
        daemon = Served(work, root, rerank=RERANK_MODEL_DIR if args.second_stage else None)
        daemon.start().wait_ready(timeout=300)
        daemon.wait_scanned(timeout=600)
        if args.second_stage:
            while (daemon.status().get("second_stage") or {}).get("pending", 0):
                time.sleep(2)
        chunks = sum(s["chunks"] for s in daemon.status()["sources"])
        print(f"fastapi-docs, {chunks} chunks, second stage {'on' if args.second_stage else 'off'}")
        print(f"{os.cpu_count()} cores, Python {platform.python_version()}, {args.runs} runs each")
        try:
            status = [_timed(daemon.config, "status", "--json")[0] for _ in range(args.runs)]
            print(f"ragd status --json, daemon running:   {_median(status)}")
            queries, same = [], 0
            for n in range(args.runs):
                question = QUESTIONS[n % len(QUESTIONS)]
                seconds, done = _timed(daemon.config, "query", question, "--json")
                queries.append(seconds)
                served = daemon.query(question, mode="hybrid")
                same += json.loads(done.stdout)["results"] == served["results"]
            print(f"ragd query --json, daemon running:    {_median(queries)}")
            print(f"  hits equal to /v1/query's: {same} of {args.runs}")
            page = sorted(root.rglob("*.md"), key=lambda p: p.stat().st_size)[-10]
            edits, found = [], 0
            for n in range(args.runs):
                word = _edit(page, n)
                seconds, _ = _timed(daemon.config, "index", "--json")
                edits.append(seconds)
                found += any(word in h["text"] for h in daemon.query(word)["results"])
            print(f"ragd index --json after an edit:      {_median(edits)}")
            print(f"  the edit searchable when it returned: {found} of {args.runs}")
        finally:
            daemon.stop()
        alone = [_timed(daemon.config, "status", "--json")[0] for _ in range(args.runs)]
        print(f"ragd status --json, no daemon:        {_median(alone)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
