"""The cost of one /metrics scrape of a daemon whose index holds 100k documents.

Usage:
    python bench/metrics_scrape.py [--documents 100000] [--chunks 5] [--queued 1000]
                                   [--scan-age-days 0] [--scrapes 50] [--dim 16]

Writes synthetic documents through the real stores API (the manifest's intent and commit,
LanceDB and Tantivy rows through WriterStores, so the stores agree), nine in ten to a
folder source and the rest to a webhook source. They were indexed 30 days ago and the
folder's last complete scan began `--scan-age-days` ago: 0 is a daemon's steady state
(hourly rescans vouch for every file), 30 leaves every document unconfirmed past the
default max_age of 7 days, the costliest count. `--queued` of the folder's documents
have a watch event queued (half of their files edited since), so a scrape stats that
many files, as it would mid-burst.
Then it times what GET /metrics runs, `Metrics.render()` (ragd.service.http.scrape's snapshot
and prometheus_client's exposition) in-process over the real Runtime, Readers and job
queue, and reports the median and 95th percentile; HTTP adds well under a millisecond.
No model is loaded: the vectors are random, `--dim` wide (a count does not read them).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.config import load_config  # noqa: E402
from ragd.indexing.pipeline import manifest_keyword_rows  # noqa: E402
from ragd.search.freshness import measure_freshness  # noqa: E402
from ragd.service.daemon.writer import WriterStats  # noqa: E402
from ragd.service.http.metrics import Metrics  # noqa: E402
from ragd.service.http.scrape import Scraper  # noqa: E402
from ragd.service.readers import Readers  # noqa: E402
from ragd.service.runtime import Runtime  # noqa: E402
from ragd.sources.watcher import WatchHealth  # noqa: E402
from ragd.stores.data_dir import WriterStores  # noqa: E402
from ragd.stores.jobs import JobQueue  # noqa: E402
from ragd.stores.keywords import KeywordRow  # noqa: E402
from ragd.stores.manifest_counts import ManifestCounts  # noqa: E402
from ragd.stores.records import ChunkRecord, DocumentWrite, doc_id_of, format_time  # noqa: E402
from ragd.stores.vectors import VectorRow  # noqa: E402
from tests.conftest import MODEL_DIR  # noqa: E402

BATCH = 2000  # documents per write, as a pass's later batches are


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=5, help="chunks per document")
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--scan-age-days", type=float, default=0.0)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--dim", type=int, default=16)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ragd-metrics-bench-") as tmp:
        work = Path(tmp)
        runtime = Runtime.from_config(load_config(_config(work)))
        started = time.perf_counter()
        _write_index(runtime, args.documents, args.chunks, args.dim, args.scan_age_days)
        queued = _queue_edits(runtime, work / "docs", args.queued)
        built = time.perf_counter() - started

        readers = Readers(runtime)
        queue = JobQueue(runtime.data_dir.manifest)
        scraper = Scraper(
            runtime,
            readers,
            queue,
            WriterStats(),
            lambda: True,
            lambda: WatchHealth(True, 0, ()),
            {},
        )
        metrics = Metrics(scraper.snapshot)
        try:
            scrapes = _timed(metrics.render, args.scrapes)
            counts = ManifestCounts.open(runtime.data_dir.manifest)
            policies, fingerprint = runtime.policies(), runtime.pipeline.fingerprint
            freshness = _timed(
                lambda: measure_freshness(
                    counts, policies, fingerprint=fingerprint, now=datetime.now(UTC)
                ),
                args.scrapes,
            )
            stores = _timed(readers.chunk_counts, args.scrapes)
            text = metrics.render().decode()
            counts.close()
        finally:
            queue.close()
            readers.close()

    stale = [line for line in text.splitlines() if line.startswith("ragd_documents_stale{")]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.platform()}, Python {platform.python_version()}"
    )
    print(f"command: python bench/{Path(__file__).name} {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"index: {args.documents} documents ({args.chunks} chunks each), "
        f"{queued} with a queued watch event; built in {built:.0f} s"
    )
    print(
        f"last complete scan {args.scan_age_days:g} days ago; "
        f"{args.scrapes} scrapes each, after 3 unmeasured"
    )
    print()
    print("| what | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, seconds in (
        ("Metrics.render() (what GET /metrics runs)", scrapes),
        ("  of which measure_freshness (SQL + stats)", freshness),
        ("  of which Readers.chunk_counts (three stores)", stores),
    ):
        print(f"| {name} | {_ms(seconds, 0.5)} | {_ms(seconds, 0.95)} | {_ms(seconds, 1.0)} |")
    print()
    print("\n".join(stale))


def _config(work: Path) -> Path:
    root = work / "docs"
    root.mkdir()
    path = work / "config.toml"
    path.write_text(
        f'[daemon]\ndata_dir = "{work / "data"}"\n\n[embedding]\nmodel = "{MODEL_DIR}"\n\n'
        f'[rerank]\nenabled = false\n\n[[sources]]\nname = "docs"\ntype = "folder"\n'
        f'path = "{root}"\n\n[[sources]]\nname = "cms"\ntype = "webhook"\n'
        'secret_env = "RAGD_BENCH_UNUSED"\n'
    )
    return path


def _source(n: int) -> str:
    return "cms" if n % 10 == 0 else "docs"


def _key(n: int) -> str:
    return f"section-{n % 100:02d}/page-{n:06d}.md"


def _write_index(
    runtime: Runtime, documents: int, chunks: int, dim: int, scan_age_days: float
) -> None:
    """Every document written as a pass writes it: intent, both search stores, commit."""
    fingerprint = runtime.pipeline.fingerprint
    checked_at = format_time(datetime.now(UTC) - timedelta(days=30))
    rng = np.random.default_rng(7)
    stores = WriterStores(runtime.data_dir, keyword_rows=manifest_keyword_rows)
    try:
        vectors, keywords = stores.vectors(dim), stores.keywords()
        for start in range(0, documents, BATCH):
            writes = [
                _document(n, chunks, fingerprint)
                for n in range(start, min(documents, start + BATCH))
            ]
            ids = [w.doc_id for w in writes]
            stores.manifest.mark_pending(
                (w.doc_id, w.source, w.key, w.uri, "pending") for w in writes
            )
            rows = [c for w in writes for c in w.chunks]
            matrix = rng.standard_normal((len(rows), dim)).astype(np.float32)
            vectors.replace_documents(
                ids,
                [VectorRow(c.chunk_id, c.doc_id, v) for c, v in zip(rows, matrix, strict=True)],
                new=ids,
            )
            keywords.replace_documents(
                ids, [KeywordRow(c.chunk_id, c.doc_id, c.text) for c in rows], new=ids
            )
            stores.manifest.commit(writes, checked_at=checked_at)
        scanned = datetime.now(UTC) - timedelta(days=scan_age_days)
        stores.manifest.confirm_sources(["docs"], checked_at=format_time(scanned))
        stores.manifest.mark_clean()
    finally:
        stores.close()


def _document(n: int, chunks: int, fingerprint: str) -> DocumentWrite[ChunkRecord]:
    source, key = _source(n), _key(n)
    doc_id = doc_id_of(source, key)
    return DocumentWrite(
        doc_id,
        source,
        key,
        f"file:///srv/docs/{key}",
        "indexed",
        title=f"Page {n}",
        size=100 + n % 50,
        mtime_ns=_mtime(n),
        content_hash=f"{n:064x}",
        fingerprint=fingerprint,
        chunks=tuple(
            ChunkRecord(
                f"{doc_id}#{i}",
                doc_id,
                i,
                (f"Page {n}", f"Part {i}"),
                f"Part {i} of page {n}: words about topic {n % 997} and more.",
                f"embed-{n}-{i}",
            )
            for i in range(chunks)
        ),
    )


def _mtime(n: int) -> int:
    return 1_700_000_000_000_000_000 + n * 1000


def _queue_edits(runtime: Runtime, root: Path, queued: int) -> int:
    """Watch events for `queued` folder documents; half their files edited since indexed."""
    keys = [_key(n) for n in range(queued * 2) if _source(n) == "docs"][:queued]
    for i, key in enumerate(keys):
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        n = int(key[-9:-3])
        if i % 2:
            path.write_bytes(b"edited" * 30)
        else:  # as indexed: same size and mtime
            path.write_bytes(b"x" * (100 + n % 50))
            os.utime(path, ns=(_mtime(n), _mtime(n)))
    queue = JobQueue(runtime.data_dir.manifest)
    try:
        queue.enqueue_many(("path", "docs", key) for key in keys)
    finally:
        queue.close()
    return len(keys)


def _timed(call: Callable[[], object], times: int) -> list[float]:
    for _ in range(3):
        call()
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return sorted(seconds)


def _ms(seconds: list[float], share: float) -> str:
    if share == 0.5:
        return f"{statistics.median(seconds) * 1000:.1f}"
    return f"{seconds[min(len(seconds) - 1, int(len(seconds) * share))] * 1000:.1f}"


if __name__ == "__main__":
    main()
