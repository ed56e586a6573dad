"""A million chunks on one machine: build a ragd data directory of real text, then measure
every stage of it.

Usage:
    python bench/scale.py --work DIR [--copies 26] [--queries 300] [--seconds 20]
                          [--edits 30] [--json] [--report] [--daemon-only]
                          [--probes 20 30 40]

The corpus is tldr-pages (../shared/corpora/tldr-pages.tar.gz: 38,405 Markdown pages in
40 languages, 41,640 chunks) placed `--copies` times under one root, copy-1/ ... copy-N/.
Each copy is an *edition*: its pages' titles end in "(edition n)", and every body line
whose CRC-32 plus n is divisible by 5 is dropped (a different fifth of the lines in each
edition), so no two copies hold the same document or, mostly, the same chunk text: every
chunk is embedded, stored and indexed on its own, as an estate of many product versions
would be. 26 copies give a little over a million chunks (25 give 991,785). A kept `--work`
grows to more copies: the new editions are indexed into the index it holds.

Steps, each skipped when `--work` already holds its result:

1. build: the editions written, then one pass of ragd's own `Indexer` (what `ragd index`
   runs) with the first stage, timed; then the second-stage vectors. A real second-stage
   fill of a million chunks takes ~8 hours on 2 cores, so this one is a STAND-IN, and
   every report says so: each text's first-stage vector projected to the second stage's
   384 dimensions by a fixed random matrix, stored under the real model's keys. Query
   latency and memory with the second stage on are then real (the real model encodes
   every query; re-scoring reads these vectors); its ranking is not. The real model's
   fill rate is `bench/second_stage_index.py`'s figure.
2. measure, in this process with the models loaded: disk per store; query p50/p95/p99 per
   mode through the Searcher; vector recall@10 of the first stage's index against exact
   search over every row; a no-op pass beside a bare stat walk of the tree.
3. measure against a real `ragd serve` on the data directory: start-up, hybrid over HTTP
   from 1 and 4 clients, `ragd status --json` (the CLI through the daemon), GET /v1/status
   and /metrics, edit-to-searchable (a unique word appended to a page; the clock runs
   until a BM25 query over HTTP ranks the page first), and the daemon's RSS.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tarfile
import time
import zlib
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from full_index import walk_seconds  # noqa: E402  (bench/ is on sys.path)
from query_latency import (  # noqa: E402
    DEFAULT_MODEL,
    DEFAULT_RERANK_MODEL,
    in_process,
    over_http,
    rss_mib,
    sample_queries,
    write_config,
)
from ragd.config import load_config  # noqa: E402
from ragd.embedding import Embedder, Matrix, normalise  # noqa: E402
from ragd.indexing.passes import settle_vectors  # noqa: E402
from ragd.indexing.second_stage import fill  # noqa: E402
from ragd.service.runtime import Runtime  # noqa: E402
from tests.integration.daemon import (  # noqa: E402
    free_port,
    scan_finished,
    stop_daemon,
    wait_until,
)

CORPUS = REPO.parent / "shared" / "corpora" / "tldr-pages.tar.gz"
STAND_IN_SEED = 50
STAND_IN_BATCH = 8192  # texts per stand-in fill step: one LanceDB commit each
SECOND_DIM = 384


# -- the corpus -----------------------------------------------------------------------------


def edition(text: str, n: int) -> str:
    """Copy `n` of a page: its title marked with the edition, a fifth of its other lines
    (which fifth depends on n) dropped."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith("# "):
            kept.append(f"{line} (edition {n})")
        elif line.strip() and not line.startswith("#") and (zlib.crc32(line.encode()) + n) % 5 == 0:
            continue
        else:
            kept.append(line)
    return "\n".join(kept) + "\n"


def read_pages(corpus: Path) -> list[tuple[str, str]]:
    """Every Markdown page of the corpus archive: (path inside it, text)."""
    with tarfile.open(corpus) as archive:
        return [
            (member.name, archive.extractfile(member).read().decode())  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile() and member.name.endswith(".md")
        ]


def write_edition(pages: list[tuple[str, str]], n: int, root: Path) -> int:
    """Write edition `n` of the pages under root/copy-n; the number of files written."""
    made: set[Path] = set()
    for name, text in pages:
        target = root / f"copy-{n}" / name
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_text(edition(text, n))
    print(f"  edition {n} written", file=sys.stderr, flush=True)
    return len(pages)


# -- the second stage's stand-in ------------------------------------------------------------


@dataclasses.dataclass
class ProjectedStandIn:
    """A STAND-IN for the second-stage model at index time: the first stage's vector of a
    text, projected to the second stage's width by a fixed random matrix. It answers to
    the real model's identity so the daemon finds every vector stored and fills none."""

    first: Embedder
    identity: str
    dim: int = SECOND_DIM

    def __post_init__(self) -> None:
        rng = np.random.default_rng(STAND_IN_SEED)
        self.projection = rng.standard_normal((self.first.dim, self.dim)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalise(self.first.embed(texts) @ self.projection)


# -- steps ----------------------------------------------------------------------------------


def build(runtime: Runtime, root: Path, copies: int) -> dict[str, Any]:
    """Write the editions, index them with the first stage, fill the stand-in vectors."""
    started = time.perf_counter()
    pages = read_pages(CORPUS)
    figures: dict[str, Any] = {
        "files": sum(write_edition(pages, n, root) for n in range(1, copies + 1))
    }
    figures["write_corpus_s"] = time.perf_counter() - started
    figures.update(index_and_fill(runtime))
    return figures


def index_and_fill(runtime: Runtime) -> dict[str, Any]:
    """One pass of the Indexer over the root (first stage), then the stand-in's fill of
    every missing second-stage vector; figures of each."""
    assert runtime.second_stage is not None
    figures: dict[str, Any] = {}
    with runtime.indexer() as indexer:
        started = time.perf_counter()
        report = indexer.run(progress=progress("pass, files"))
        figures["first_stage_pass_s"] = time.perf_counter() - started
        figures["documents_added"] = report.added
        figures["chunk_texts_embedded"] = report.embedded
        figures["failed"] = report.failed
        started = time.perf_counter()
        stand_in = ProjectedStandIn(runtime.embedder, runtime.second_stage.identity)
        filled = fill(
            indexer.stores,
            stand_in,
            settle=lambda table: settle_vectors(table, runtime.config.schedule.cleanup_older_than),
            batch=STAND_IN_BATCH,
            progress=progress("stand-in fill, chunks"),
        )
        figures["stand_in_fill_s"] = time.perf_counter() - started
        figures["stand_in_texts"] = filled.embedded
    return figures


def progress(label: str) -> Any:
    """A progress callback printing every tenth of the work to stderr."""
    shown = [-1]

    def report(done: int, total: int) -> None:
        tenth = 10 * done // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            print(f"  {label}: {done:,} of {total:,}", file=sys.stderr, flush=True)

    return report


def disk_mib(data: Path) -> dict[str, float]:
    """MiB on disk per store: each LanceDB table, Tantivy, the manifest (with its WAL)."""

    def size(path: Path) -> float:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        return sum(p.stat().st_size for p in files) / 2**20

    sizes = {f"lancedb/{t.name}": size(t) for t in sorted((data / "lancedb").iterdir())}
    sizes["tantivy"] = size(data / "tantivy")
    sizes["manifest"] = sum(size(p) for p in data.glob("state.db*"))
    return sizes


def recall_at_10(
    runtime: Runtime, queries: list[str], candidates: int, probes: int | None = None
) -> dict[str, float]:
    """The first stage's vector search (its index, `candidates` deep as ragd asks, the top
    10 kept, reading `probes` IVF partitions or as many as ragd reads) against exact cosine
    search over every row of the table."""
    import lancedb

    from ragd.stores.vectors import FIRST_STAGE

    table = lancedb.connect(str(runtime.data_dir.lancedb)).open_table(FIRST_STAGE)
    rows = table.to_arrow().select(["chunk_id", "doc_id", "vector"])
    ids = rows["chunk_id"].to_pylist()
    # The page a chunk is of, whatever its edition: copy-N/ left out of its document.
    page = dict(zip(ids, (d.split("/", 1)[1] for d in rows["doc_id"].to_pylist()), strict=True))
    matrix = rows["vector"].combine_chunks().flatten().to_numpy().reshape(len(ids), -1)
    vectors = runtime.embedder.embed(queries)
    recalls: list[float] = []
    pages: list[float] = []
    with runtime.readers(ids_in_memory=True) as stores:
        if probes is not None:
            stores.vectors.probes = probes
        for vector in vectors:
            if not np.any(vector):
                continue
            exact = np.argpartition(-(matrix @ vector), 10)[:10]
            want = {ids[i] for i in exact}
            got = [chunk for chunk, _ in stores.vectors.search(vector, candidates)[:10]]
            recalls.append(len(want & set(got)) / 10)
            wanted = {page[c] for c in want}
            pages.append(len(wanted & {page[c] for c in got}) / len(wanted))
    return {
        "queries": len(recalls),
        "recall_at_10": float(np.mean(recalls)),
        "page_recall_at_10": float(np.mean(pages)),
        "rows": len(ids),
    }


def probe_grid(runtime: Runtime, queries: list[str], probes: Sequence[int]) -> list[Any]:
    """Recall@10 and vector search p50/p95 with each IVF probe count: what
    `ragd.stores.vectors.probes_for` trades (set on the reader for the measurement)."""
    found = []
    candidates = runtime.config.search.candidates
    for nprobes in probes:
        recall = recall_at_10(runtime, queries, candidates, nprobes)
        vectors = runtime.embedder.embed(queries)
        seconds = []
        with runtime.readers(ids_in_memory=True) as stores:
            stores.vectors.probes = nprobes
            for vector in vectors[:20]:
                stores.vectors.search(vector, candidates)
            for vector in vectors:
                started = time.perf_counter()
                stores.vectors.search(vector, candidates)
                seconds.append(time.perf_counter() - started)
        run = latency_figures(seconds, sum(seconds))
        found.append([nprobes, recall["recall_at_10"], run["p50_ms"], run["p95_ms"]])
        print(json.dumps(found[-1]), flush=True)
    return found


def noop_pass(runtime: Runtime, root: Path, rounds: int = 3) -> dict[str, Any]:
    """A pass that finds nothing to do, beside a bare scandir + stat walk, alternating."""
    passes, walks = [], []
    for _ in range(rounds):
        walks.append(walk_seconds(root)[0])
        with runtime.indexer() as indexer:
            started = time.perf_counter()
            report = indexer.run()
            passes.append(time.perf_counter() - started)
        assert report.added == report.changed == report.deleted == 0, report.to_json()
    noop, walk = statistics.median(passes), statistics.median(walks)
    return {"noop_s": noop, "walk_s": walk, "ratio": noop / walk, "rounds": rounds}


def timed(call: Any, rounds: int) -> dict[str, float]:
    """p50 and max seconds of `rounds` calls (after one unmeasured)."""
    call()
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return {"p50_s": statistics.median(seconds), "max_s": max(seconds)}


def edit_latency(port: int, root: Path, edits: int) -> dict[str, float]:
    """Edits one at a time: a unique word appended to a random page; seconds from the
    save until a BM25 query for the word over HTTP returns that page among its 10 hits."""
    import httpx2 as httpx

    rng = random.Random(5)
    pages = [p for p in (root / f"copy-{rng.randint(1, 9)}").rglob("*.md")]
    # A kept --work was edited by earlier runs: new words, of letters only (a word's digits
    # are a search term of their own, which other pages hold many times over).
    run = "".join(chr(ord("g") + int(c, 16)) for c in f"{time.time_ns():x}")
    seconds: list[float] = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False) as http:

        def found(word: str, path: str) -> bool:
            body = {"query": word, "mode": "bm25", "k": 10}
            hits = http.post("/v1/query", json=body).json()["results"]
            return any(hit["path"] == path for hit in hits)

        for n in range(edits):
            page = rng.choice(pages)
            word = "zqx" + run + "".join(chr(ord("a") + int(c)) for c in f"{n:04d}")
            started = time.perf_counter()
            with page.open("a") as handle:
                handle.write(f"\nAn appended line with {word} in it.\n")
            wait_until(partial(found, word, str(page.relative_to(root))), 60, 0.005)
            seconds.append(time.perf_counter() - started)
    seconds.sort()
    return {
        "edits": edits,
        "p50_s": statistics.median(seconds),
        "p95_s": seconds[max(0, math.ceil(0.95 * len(seconds)) - 1)],
        "max_s": seconds[-1],
    }


def with_daemon(config: Path, work: Path, port: int, queries: list[str], args: Any) -> Any:
    """A real `ragd serve` on the data directory: start-up, HTTP queries, status and
    /metrics, edits; its RSS."""
    import httpx2 as httpx

    figures: dict[str, Any] = {}
    base = f"http://127.0.0.1:{port}"
    with (work / "serve.log").open("ab") as log:
        started = time.perf_counter()
        daemon = subprocess.Popen(
            [sys.executable, "-m", "ragd", "--config", str(config), "serve"],
            stdout=log,
            stderr=log,
        )
        try:
            wait_until(lambda: scan_finished(port), 1800, 0.5)
            figures["ready_after_first_scan_s"] = time.perf_counter() - started
            rss = figures["rss_mib"] = {"start-up and first scan": rss_mib(daemon.pid)}
            reset_peak(daemon.pid)
            for clients in (1, 4):
                for rerank in (False, True):
                    latencies = over_http(port, queries, clients, args.seconds, rerank=rerank)
                    name = f"http_hybrid{'+second' if rerank else ''}_{clients}_clients"
                    figures[name] = latency_figures(latencies, args.seconds)
            rss["queries"] = rss_mib(daemon.pid)
            reset_peak(daemon.pid)
            cli = [sys.executable, "-m", "ragd", "--config", str(config), "status", "--json"]
            figures["cli_status_through_daemon"] = timed(
                lambda: subprocess.run(cli, check=True, capture_output=True), 5
            )
            with httpx.Client(base_url=base, timeout=60, trust_env=False) as http:
                figures["get_status"] = timed(lambda: http.get("/v1/status").raise_for_status(), 5)
                figures["get_metrics"] = timed(lambda: http.get("/metrics").raise_for_status(), 5)
            rss["status and metrics"] = rss_mib(daemon.pid)
            reset_peak(daemon.pid)
            figures["edit_to_searchable"] = edit_latency(port, work / "corpus", args.edits)
            rss["edits"] = rss_mib(daemon.pid)
        finally:
            stop_daemon(daemon, timeout=300)
    return figures


def reset_peak(pid: int) -> None:
    """Start the process's peak RSS (VmHWM) again from its current RSS (Linux), so each
    step's peak is its own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def latency_figures(seconds: list[float], duration: float) -> dict[str, float]:
    """Requests, requests/s and p50/p95/p99 ms of one run."""
    ordered = sorted(seconds)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000

    return {
        "requests": len(ordered),
        "per_s": len(ordered) / duration,
        "p50_ms": at(0.5),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
    }


def report(figures: dict[str, Any]) -> None:
    """The figures as Markdown tables."""
    build, daemon = figures["build"], figures["daemon"]
    print(f"\n{figures['chunks']:,} chunks of {figures['documents']:,} documents")
    print("SECOND STAGE: STAND-IN vectors (first-stage vector x a fixed random 256x384 matrix)")
    print("\n| build step | seconds | per second |\n|---|---|---|")
    print(f"| write {build['files']:,} files | {build['write_corpus_s']:.0f} | |")
    pass_s = build["first_stage_pass_s"]
    rate = build["chunk_texts_embedded"] / pass_s
    print(f"| first-stage pass (parse, chunk, embed, write) | {pass_s:.0f} | {rate:,.0f} texts |")
    print(f"| stand-in second-stage fill | {build['stand_in_fill_s']:.0f} | |")
    if grown := figures.get("grow"):
        print(
            f"| one more edition into the index ({grown['files']:,} files) | "
            f"{grown['first_stage_pass_s']:.0f} | |"
        )
    for name, seconds in figures["tidy"].items():
        print(f"| compact and clean up, {name.removesuffix('_s')} table | {seconds:.0f} | |")
    print("\n| store | MiB on disk |\n|---|---|")
    for store, mib in figures["disk_mib"].items():
        print(f"| {store} | {mib:,.0f} |")
    print("\n| mode, in process, one client | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|")
    for mode, run in figures["in_process"].items():
        print(f"| {mode} | {run['p50_ms']:.1f} | {run['p95_ms']:.1f} | {run['p99_ms']:.1f} |")
    print("\n| over HTTP, hybrid | clients | queries/s | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|---|")
    for clients in (1, 4):
        for second in ("", "+second"):
            run = daemon[f"http_hybrid{second}_{clients}_clients"]
            print(
                f"| hybrid{' + second stage' if second else ''} | {clients} | "
                f"{run['per_s']:.0f} | {run['p50_ms']:.1f} | {run['p95_ms']:.1f} | "
                f"{run['p99_ms']:.1f} |"
            )
    recall, noop, edits = (
        figures["vector_recall"],
        figures["noop_pass"],
        daemon["edit_to_searchable"],
    )
    print("\n| figure | value |\n|---|---|")
    print(f"| vector recall@10 against exact search | {recall['recall_at_10']:.3f} |")
    print(
        "| … counting another edition of the same page as found | "
        f"{recall.get('page_recall_at_10', float('nan')):.3f} |"
    )
    print(
        f"| no-op pass / bare stat walk | {noop['noop_s']:.2f} s / {noop['walk_s']:.2f} s = "
        f"{noop['ratio']:.2f}x |"
    )
    print(f"| serve ready (start-up and first scan) | {daemon['ready_after_first_scan_s']:.1f} s |")
    print(
        f"| edit to searchable, p50 / p95 / max | {edits['p50_s']:.3f} / {edits['p95_s']:.3f} / "
        f"{edits['max_s']:.3f} s |"
    )
    for name, label in (
        ("cli_status_through_daemon", "`ragd status --json` through the daemon"),
        ("get_status", "GET /v1/status"),
        ("get_metrics", "GET /metrics"),
    ):
        print(
            f"| {label}, p50 / max | {daemon[name]['p50_s']:.3f} / {daemon[name]['max_s']:.3f} s |"
        )
    print("\n| serve RSS during | peak MiB | at its end MiB |\n|---|---|---|")
    for step, (peak, now) in daemon["rss_mib"].items():
        print(f"| {step} | {peak:,.0f} | {now:,.0f} |")


def grow(runtime: Runtime, root: Path, copies: int) -> dict[str, Any]:
    """Editions beyond those the index holds: written, then one pass indexes them beside
    the million already indexed (what adding a product version costs), and the stand-in
    fills their second-stage vectors."""
    have = sum(1 for _ in root.glob("copy-*"))
    figures: dict[str, Any] = {"editions_before": have, "editions_after": copies}
    pages = read_pages(CORPUS)
    for n in range(have + 1, copies + 1):
        figures["files"] = figures.get("files", 0) + write_edition(pages, n, root)
    figures.update(index_and_fill(runtime))
    return figures


def tidy(runtime: Runtime) -> dict[str, float]:
    """Compact both vector tables and drop their old versions, as the daemon's compaction
    job does hours later (its versions are kept for `cleanup_older_than`), so that disk
    is measured as an operator finds it then; seconds each."""
    figures: dict[str, float] = {}
    with runtime.indexer() as indexer:
        for name, table in (
            ("first_stage", indexer.stores.vectors(runtime.embedder.dim)),
            ("second_stage", indexer.stores.second_vectors()),
        ):
            if table is None:
                continue
            started = time.perf_counter()
            time.sleep(1.0)  # LanceDB keeps versions younger than the cleanup's age
            table.optimize(timedelta(seconds=1))
            figures[f"{name}_s"] = time.perf_counter() - started
    return figures


def in_process_figures(runtime: Runtime, root: Path, queries: list[str]) -> dict[str, Any]:
    """Query latency per mode, vector recall and a no-op pass, in this process."""
    figures: dict[str, Any] = {}
    figures["in_process"] = {
        mode: latency_figures(seconds, sum(seconds))
        for mode, seconds in in_process(runtime, queries).items()
    }
    print(json.dumps(figures["in_process"], indent=1), flush=True)
    candidates = runtime.config.search.candidates
    figures["vector_recall"] = recall_at_10(runtime, queries, candidates)
    print(json.dumps(figures["vector_recall"]), flush=True)
    figures["noop_pass"] = noop_pass(runtime, root)
    print(json.dumps(figures["noop_pass"]), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="Kept between runs.")
    parser.add_argument("--copies", type=int, default=26)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON too.")
    parser.add_argument(
        "--report", action="store_true", help="Print the tables of the last run kept in --work."
    )
    parser.add_argument(
        "--daemon-only",
        action="store_true",
        help="Measure against `ragd serve` only; keep the in-process figures of the last run.",
    )
    parser.add_argument(
        "--probes",
        type=int,
        nargs="+",
        help="Only measure vector recall@10 and latency with each IVF probe count.",
    )
    args = parser.parse_args()
    if args.report:
        report(json.loads((args.work / "figures.json").read_text()))
        return

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["HF_HUB_OFFLINE"] = "1"
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("SECOND STAGE: STAND-IN vectors (first-stage vector x a fixed random 256x384 matrix)")
    root, data = work / "corpus", work / "data"
    port_file = work / "port"
    if not port_file.exists():
        port_file.write_text(str(free_port()))
    port = int(port_file.read_text())
    config = write_config(work, root, data, DEFAULT_MODEL, DEFAULT_RERANK_MODEL, port)
    runtime = Runtime.from_config(load_config(config))
    built = work / "build.json"
    if not built.exists():
        root.mkdir(parents=True, exist_ok=True)
        built.write_text(json.dumps(build(runtime, root, args.copies), indent=1))
    figures: dict[str, Any] = {"build": json.loads(built.read_text())}
    grown = work / "grow.json"
    if sum(1 for _ in root.glob("copy-*")) < args.copies:
        grown.write_text(json.dumps(grow(runtime, root, args.copies), indent=1))
    if grown.exists():
        figures["grow"] = json.loads(grown.read_text())
    tidied = work / "tidy.json"
    if not tidied.exists():
        tidied.write_text(json.dumps(tidy(runtime), indent=1))
    figures["tidy"] = json.loads(tidied.read_text())
    figures["disk_mib"] = disk_mib(data)
    queries = sample_queries(runtime, args.queries)
    if args.probes:
        print("\n| IVF probes | recall@10 | vector p50 ms | p95 ms |\n|---|---|---|---|")
        for nprobes, recall, p50, p95 in probe_grid(runtime, queries, args.probes):
            print(f"| {nprobes} | {recall:.3f} | {p50:.1f} | {p95:.1f} |")
        return
    with runtime.readers() as stores:
        figures["chunks"] = stores.vectors.count()
        manifest = stores.manifest
        figures["documents"] = sum(manifest.indexed_count(s) for s in manifest.sources())
        figures["vector_index"] = stores.vectors.has_vector_index()
    print(f"{figures['chunks']} chunks, {figures['documents']} documents", flush=True)
    if args.daemon_only:  # the in-process figures of the last run are kept
        figures = json.loads((work / "figures.json").read_text()) | figures
    else:
        figures.update(in_process_figures(runtime, root, queries))
    figures["daemon"] = with_daemon(config, work, port, queries, args)
    (work / "figures.json").write_text(json.dumps(figures, indent=1))
    report(figures)
    if args.json:
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
