"""Query latency and throughput at a given index size.

Usage:
    python bench/query_latency.py CORPUS [--copies N] [--queries 500] [--clients 4]
                                  [--seconds 20] [--model DIR] [--rerank-model DIR]
                                  [--no-rerank] [--work DIR] [--ab-held-ids] [--auth]

CORPUS is a directory or a .tar.gz (e.g. ../shared/corpora/tldr-pages.tar.gz). With
`--copies N` the corpus is placed N times under one root (copy-1/, copy-2/, ...) to reach
100k+ chunks; copies embed the same texts, so the vector cache makes their indexing cheap,
but every copy is a separate document with its own rows in all three stores.

The second stage is on (the shared ONNX model, or `--rerank-model`) unless `--no-rerank`:
`ragd index` then embeds every distinct chunk text with it once (~30 texts/s on 2 cores;
copies add no texts), and `--work` keeps the result for later runs.

Steps, each printed: `ragd index` (a no-op when --work already holds the index); then, in
this process with the models loaded, `--queries` queries per mode (bm25, vector, hybrid
without the second stage, and hybrid+rerank) through the same Searcher the CLI and
daemon use, staleness checks included: p50/p95/p99; then a real `ragd serve` on the
index with `--clients` concurrent HTTP clients for `--seconds` (hybrid, re-scored when
the second stage is on): queries per second, latency, and the daemon's peak RSS (start-up
and first scan included) and its RSS at the end.

With `--ab-held-ids`, the vector and hybrid modes are also timed, query by query in
alternating order, over read handles that hold no chunk ids (a vector hit's chunk id is
then read from the table): what the ids held by row id are worth, A against B in one run.

With `--auth`, the HTTP step runs again on a daemon whose [access] has tokens (ten, the
one used scoped to the corpus's source, so the scope filter runs inside both retrievers),
every request carrying `Authorization: Bearer`: the two rows and their p50 ratio show
what checking a token and scoping a query cost.

Queries are drawn from the indexed text itself (seeded): half are 2-4 words of a chunk's
heading path, half 4-6 consecutive words of its body, so each has a findable answer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.config import load_config  # noqa: E402
from ragd.search.searcher import MODES  # noqa: E402
from ragd.service.runtime import Runtime  # noqa: E402
from tests.integration.daemon import free_port, scan_finished, stop_daemon, wait_until  # noqa: E402

DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
DEFAULT_RERANK_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-v2-onnx-int8"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{2,}")


def percentiles(seconds: list[float]) -> str:
    """p50 / p95 / p99 in milliseconds."""
    ordered = sorted(seconds)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000

    return f"{at(0.50):.1f} | {at(0.95):.1f} | {at(0.99):.1f}"


def prepare_root(corpus: Path, copies: int, work: Path) -> Path:
    """The source root: the corpus (unpacked if an archive) placed `copies` times."""
    root = work / "corpus"
    if corpus.is_file():
        with tarfile.open(corpus) as archive:
            archive.extractall(work / "unpacked", filter="data")
        corpus = work / "unpacked"
    for n in range(1, copies + 1):
        shutil.copytree(corpus, root / f"copy-{n}", symlinks=True)  # ragd skips symlinks
    return root


def write_config(
    work: Path, root: Path, data_dir: Path, model: Path, rerank: Path | None, port: int
) -> Path:
    """A one-source config over `root`; the second stage runs `rerank` (None: off)."""
    second = "enabled = false" if rerank is None else f'model = "{rerank.resolve()}"'
    config = work / "config.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{data_dir}"\nlog_format = "json"\n'
        f'[http]\nlisten = "127.0.0.1:{port}"\n'
        f'[embedding]\nmodel = "{model.resolve()}"\n'
        f"[rerank]\n{second}\n"
        f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
        'include = ["**/*.md"]\n'
    )
    return config


def sample_queries(runtime: Runtime, count: int) -> list[str]:
    """`count` queries drawn from the indexed chunks (seeded, so runs compare)."""
    rng = random.Random(0)
    with runtime.readers() as stores:
        ids = sorted(stores.manifest.chunk_ids())
        chunks = stores.manifest.chunks(rng.sample(ids, min(len(ids), count * 2)))
    queries: list[str] = []
    for n, chunk in enumerate(chunks.values()):
        words = _WORD.findall(" ".join(chunk.heading_path) if n % 2 else chunk.text)
        if len(words) < 2:
            continue
        size = rng.randint(2, 4) if n % 2 else rng.randint(4, 6)
        start = rng.randrange(max(1, len(words) - size))
        queries.append(" ".join(words[start : start + size]))
        if len(queries) == count:
            break
    return queries


def in_process(runtime: Runtime, queries: list[str]) -> dict[str, list[float]]:
    """Latency of every query in every mode through the Searcher (model already loaded),
    over read handles set up as the daemon's are (chunk ids by row id held in memory)."""
    timings: dict[str, list[float]] = {}
    modes = [(mode, False) for mode in MODES]
    if runtime.second_stage is not None:
        modes.append(("hybrid", True))
    with runtime.readers(ids_in_memory=True) as stores:
        searcher = runtime.searcher(stores)
        for query in queries[:20]:  # warm caches and the models, as a running daemon has
            searcher.search(query, mode="hybrid")
        for mode, rerank in modes:
            name = "hybrid+rerank" if rerank else mode
            timings[name] = []
            for query in queries:
                started = time.perf_counter()
                searcher.search(query, mode=mode, rerank=rerank)
                timings[name].append(time.perf_counter() - started)
    return timings


def held_ids_ab(runtime: Runtime, queries: list[str]) -> dict[str, list[float]]:
    """Latency of every query in the vector and hybrid modes (first stage) over handles
    holding chunk ids and over handles reading them from the table, alternating."""
    timings: dict[str, list[float]] = {}
    with runtime.readers(ids_in_memory=True) as held, runtime.readers() as column:
        searchers = {"held": runtime.searcher(held), "column": runtime.searcher(column)}
        for searcher in searchers.values():
            for query in queries[:20]:
                searcher.search(query, mode="hybrid", rerank=False)
        for mode in ("vector", "hybrid"):
            for n, query in enumerate(queries):
                order = list(searchers.items())
                for name, searcher in order if n % 2 else reversed(order):
                    started = time.perf_counter()
                    searcher.search(query, mode=mode, rerank=False)
                    timings.setdefault(f"{mode}, ids {name}", []).append(
                        time.perf_counter() - started
                    )
    return timings


def over_http(
    port: int,
    queries: list[str],
    clients: int,
    seconds: float,
    token: str | None = None,
    rerank: bool = True,
) -> list[float]:
    """Run `clients` keep-alive HTTP clients for `seconds` of hybrid queries (re-scored by
    the second stage when it is on, unless `rerank` is false); every request's latency."""
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        mine: list[float] = []
        n = offset
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30, trust_env=False) as connection:
            while time.monotonic() < deadline:
                query = queries[n % len(queries)]
                body = json.dumps({"query": query, "mode": "hybrid", "rerank": rerank})
                headers = {"Content-Type": "application/json"}
                if token is not None:
                    headers["Authorization"] = f"Bearer {token}"
                started = time.perf_counter()
                reply = connection.post("/v1/query", content=body, headers=headers)
                if reply.status_code != 200:
                    raise SystemExit(f"query answered HTTP {reply.status_code}")
                mine.append(time.perf_counter() - started)
                n += clients
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


# --auth: ten tokens, the one the clients send scoped to the corpus's one source.
AUTH_TOKEN = "b" * 64
AUTH_ENVIRON = {f"RAGD_BENCH_TOKEN_{n}": f"{n:02d}" * 32 for n in range(9)} | {
    "RAGD_BENCH_TOKEN_9": AUTH_TOKEN
}
ACCESS_TABLES = "".join(
    f'\n[[access.tokens]]\nname = "t{n}"\ntoken_env = "RAGD_BENCH_TOKEN_{n}"\nsources = ["bench"]\n'
    for n in range(10)
)


def serve_and_ask(
    config: Path,
    work: Path,
    port: int,
    queries: list[str],
    args: argparse.Namespace,
    environ: dict[str, str],
    token: str | None,
) -> tuple[list[float], float, float]:
    """Start `ragd serve`, wait until it answers a query, run the HTTP clients; their
    latencies and the daemon's peak and final RSS."""
    with (work / "serve.log").open("ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "ragd", "--config", str(config), "serve"],
            stdout=log,
            stderr=log,
            env=environ,
        )
        try:
            wait_until(lambda: answers(port, token), 600, 0.2)
            latencies = over_http(port, queries, args.clients, args.seconds, token)
            peak, rss = rss_mib(daemon.pid)
        finally:
            stop_daemon(daemon)
    return latencies, peak, rss


def answers(port: int, token: str | None) -> bool:
    """Whether the daemon on `port` is ready: its start-up scan finished (without tokens),
    or, asked with a token of some sources (which sees no writer figures), it says ok
    (`ragd index` ran first, so its scan has nothing to do)."""
    if token is None:
        return scan_finished(port)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        reply = httpx.get(f"http://127.0.0.1:{port}/v1/status", headers=headers, timeout=30)
    except httpx.HTTPError:
        return False
    return reply.status_code == 200 and reply.json()["daemon"]["state"] == "ok"


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmHWM, VmRSS) of a running process: its peak and current resident memory, MiB."""
    values = {"VmHWM": float("nan"), "VmRSS": float("nan")}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in values:
            values[name] = int(rest.split()[0]) / 1024
    return values["VmHWM"], values["VmRSS"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rerank-model", type=Path, default=DEFAULT_RERANK_MODEL)
    parser.add_argument("--no-rerank", action="store_true", help="Turn the second stage off.")
    parser.add_argument(
        "--work", type=Path, help="Keep corpus copy, config and index here (reused if present)."
    )
    parser.add_argument("--ab-held-ids", action="store_true")
    parser.add_argument("--auth", action="store_true", help="Also time HTTP with tokens.")
    args = parser.parse_args()

    scratch = None if args.work else tempfile.TemporaryDirectory(prefix="ragd-query-bench-")
    work = args.work.resolve() if args.work else Path(scratch.name)  # type: ignore[union-attr]
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    root = work / "corpus"
    if not root.exists():
        root = prepare_root(args.corpus.resolve(), args.copies, work)
    rerank = None if args.no_rerank else args.rerank_model
    config = write_config(work, root, work / "data", args.model, rerank, free_port())
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), "index"],
        check=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    print(f"ragd index: {time.perf_counter() - started:.1f} s (a no-op when the index was kept)")

    runtime = Runtime.from_config(load_config(config))
    with runtime.readers() as stores:
        chunks, rows = len(stores.manifest.chunk_ids()), stores.vectors.count()
        indexed = stores.vectors.has_vector_index()
        second = None if stores.second is None else stores.second.count()
    queries = sample_queries(runtime, args.queries)
    timings = in_process(runtime, queries)
    print(
        f"corpus: {args.corpus} x{args.copies}; {chunks} chunks; vector index: {indexed}; "
        f"second-stage rows: {'off' if second is None else second}"
    )
    print()
    print(f"| mode | queries | p50 ms | p95 ms | p99 ms |   ({len(queries)} queries, one client)")
    print("|---|---|---|---|---|")
    for mode, seconds in timings.items():
        print(f"| {mode} | {len(seconds)} | {percentiles(seconds)} |")
    assert rows == chunks, f"LanceDB has {rows} rows for {chunks} manifest chunks"
    if args.ab_held_ids:
        ab = held_ids_ab(runtime, queries)
        print()
        print("| mode, first stage | p50 ms | p95 ms | p99 ms |   (chunk ids held or read)")
        print("|---|---|---|---|")
        for mode, seconds in ab.items():
            print(f"| {mode} | {percentiles(seconds)} |")
        for mode in ("vector", "hybrid"):
            held, read = ab[f"{mode}, ids held"], ab[f"{mode}, ids column"]
            ratio = statistics.median(read) / statistics.median(held)
            print(f"{mode}: p50 reading the column / p50 holding the ids = {ratio:.2f}x")

    port = int(config.read_text().split("127.0.0.1:")[1].split('"')[0])
    print()
    print(
        "| HTTP clients | tokens | requests | queries/s | p50 ms | p95 ms | p99 ms "
        "| serve RSS MiB: peak / at the end |"
    )
    print("|---|---|---|---|---|---|---|---|")
    runs = [None, AUTH_TOKEN] if args.auth else [None]
    medians = []
    for token in runs:
        if token is not None:
            with config.open("a") as out:
                out.write(ACCESS_TABLES)
        environ = dict(os.environ, HF_HUB_OFFLINE="1", **(AUTH_ENVIRON if token else {}))
        latencies, peak, rss = serve_and_ask(config, work, port, queries, args, environ, token)
        medians.append(statistics.median(latencies))
        print(
            f"| {args.clients} | {'yes' if token else 'none'} | {len(latencies)} | "
            f"{len(latencies) / args.seconds:.0f} | {percentiles(latencies)} | "
            f"{peak:.0f} / {rss:.0f} |"
        )
    if args.auth:
        print(f"p50 with tokens / p50 without: {medians[1] / medians[0]:.2f}x")
    if scratch is not None:
        scratch.cleanup()


if __name__ == "__main__":
    main()
