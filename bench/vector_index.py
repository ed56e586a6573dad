"""Choosing the LanceDB vector index by measurement: build time, latency and recall at N rows.

Usage:
    python bench/vector_index.py DATA_DIR [--rows 100000 1000000] [--queries 200]
                                 [--configs none ivf_sq ivf_sq_fine ...] [--model DIR]
                                 [--nprobes 20 40 80] [--refine 0 2 5]

DATA_DIR is a ragd data directory holding an index (e.g. from `ragd index`, or the one
`bench/query_latency.py --work DIR` leaves). Its cached chunk vectors are the base set. A
table of N rows draws base vectors at random and adds Gaussian noise (norm about 0.05 on
unit vectors), so rows are distinct and the table is bigger than the corpus without being
uniform noise. `--rows 0` measures the base set itself, unaltered.

Queries are real: 4-6 consecutive words of a random chunk's text, embedded by the model
(as `ragd query` does). Exact answers come from numpy over the same rows. For each
configuration the table is searched as `VectorStore.search` does (cosine, limit 50,
chunk_id and _distance selected), after a compaction to one file; printed: build seconds,
p50/p95 latency, recall@10 and recall@50 against the exact top 10 and top 50.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
LIMIT = 50  # ragd's [search] candidates default
NOISE = 0.05


def index_configs(rows: int) -> dict[str, Callable[[], Any] | None]:
    """The candidate indexes (None: no index, exact brute force)."""
    from lancedb.index import HnswSq, IvfPq, IvfSq

    from ragd.stores.vectors import ROWS_PER_PARTITION

    fine = max(1, rows // ROWS_PER_PARTITION)
    return {
        "none": None,
        "ivf_sq": lambda: IvfSq(distance_type="cosine"),
        # What ragd builds.
        "ivf_sq_fine": lambda: IvfSq(distance_type="cosine", num_partitions=fine),
        # k-means on 16 rows per partition rather than LanceDB's 256: a faster build, more
        # uneven partitions.
        "ivf_sq_fine_sampled": lambda: IvfSq(
            distance_type="cosine", num_partitions=fine, sample_rate=16
        ),
        "ivf_pq": lambda: IvfPq(distance_type="cosine"),
        "ivf_pq_fine_sampled": lambda: IvfPq(
            distance_type="cosine", num_partitions=fine, sample_rate=16
        ),
        "ivf_hnsw_sq": lambda: HnswSq(distance_type="cosine"),
    }


def base_vectors(data_dir: Path) -> npt.NDArray[np.float32]:
    """The unique chunk vectors ragd cached, as unit rows."""
    conn = sqlite3.connect(f"{(data_dir / 'state.db').as_uri()}?mode=ro", uri=True)
    try:
        blobs = [row[0] for row in conn.execute("SELECT vector FROM vectors")]
    finally:
        conn.close()
    # The cache holds both stages' vectors when the second stage is on: the first stage's
    # are the most common width.
    widths = np.bincount([len(b) for b in blobs])
    width = int(widths.argmax())
    matrix = np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs if len(b) == width])
    norms = np.linalg.norm(matrix, axis=1)
    unit: npt.NDArray[np.float32] = (matrix[norms > 0] / norms[norms > 0, None]).astype(np.float32)
    return unit


def query_texts(data_dir: Path, count: int, seed: int = 11) -> list[str]:
    """`count` snippets of 4-6 consecutive words from random chunks."""
    conn = sqlite3.connect(f"{(data_dir / 'state.db').as_uri()}?mode=ro", uri=True)
    try:
        texts = [row[0] for row in conn.execute("SELECT text FROM chunks")]
    finally:
        conn.close()
    rng = random.Random(seed)
    queries: list[str] = []
    while len(queries) < count:
        words = rng.choice(texts).split()
        if len(words) < 8:
            continue
        size = rng.randint(4, 6)
        start = rng.randrange(len(words) - size)
        queries.append(" ".join(words[start : start + size]))
    return queries


def make_rows(base: npt.NDArray[np.float32], rows: int, seed: int = 3) -> npt.NDArray[np.float32]:
    """`rows` noisy unit vectors drawn from `base`."""
    rng = np.random.default_rng(seed)
    picked = base[rng.integers(0, len(base), rows)]
    noisy = picked + rng.standard_normal(picked.shape, dtype=np.float32) * (
        NOISE / np.sqrt(base.shape[1])
    )
    unit: npt.NDArray[np.float32] = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def exact_top(
    matrix: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], k: int
) -> list[set[int]]:
    """The exact cosine top `k` row numbers per query."""
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    scores = unit @ matrix.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    return [set(map(int, row)) for row in top]


def build_table(directory: Path, matrix: npt.NDArray[np.float32]) -> Any:
    """A LanceDB table of (chunk_id, vector) rows, compacted to one file."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(directory))
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.reshape(-1), type=pa.float32()), matrix.shape[1]
    )
    ids = pa.array([str(i) for i in range(len(matrix))])
    table = db.create_table("chunks", pa.table({"chunk_id": ids, "vector": vectors}))
    return table


def measure(
    table: Any,
    queries: npt.NDArray[np.float32],
    exact10: list[set[int]],
    exact50: list[set[int]],
    nprobes: int | None = None,
    refine: int | None = None,
) -> tuple[float, float, float, float]:
    """p50 and p95 ms, recall@10 and recall@50 over the queries (after a warm-up);
    `nprobes`: partitions an IVF index searches (None: LanceDB's default); `refine`:
    LanceDB's refine factor (that many times the limit re-ranked by the full vectors)."""

    def search(query: npt.NDArray[np.float32]) -> Any:
        found = table.search(query, query_type="vector").distance_type("cosine")
        if nprobes is not None:
            found = found.nprobes(nprobes)
        if refine is not None:
            found = found.refine_factor(refine)
        return found.select(["chunk_id", "_distance"]).limit(LIMIT).to_arrow()

    for query in queries[:20]:
        search(query)
    times: list[float] = []
    recall10: list[float] = []
    recall50: list[float] = []
    for query, want10, want50 in zip(queries, exact10, exact50, strict=True):
        started = time.perf_counter()
        result = search(query)
        times.append((time.perf_counter() - started) * 1000)
        got = [int(i) for i in result["chunk_id"].to_pylist()]
        recall10.append(len(set(got[:10]) & want10) / 10)
        recall50.append(len(set(got) & want50) / 50)
    times.sort()
    return (
        times[len(times) // 2],
        times[int(len(times) * 0.95)],
        float(np.mean(recall10)),
        float(np.mean(recall50)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--configs", nargs="+", default=None)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument(
        "--nprobes",
        type=int,
        nargs="+",
        default=[20],
        help="Partitions an IVF index searches, each measured (20: LanceDB's default).",
    )
    parser.add_argument(
        "--refine",
        type=int,
        nargs="+",
        default=[0],
        help="Refine factors, each measured (0: none, LanceDB's default).",
    )
    args = parser.parse_args()

    from model2vec import StaticModel

    base = base_vectors(args.data_dir)
    model = StaticModel.from_pretrained(str(args.model))
    queries = model.encode(query_texts(args.data_dir, args.queries)).astype(np.float32)
    print(
        f"{datetime.now():%Y-%m-%d %H:%M}  {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {len(base)} base vectors from {args.data_dir}"
    )
    print()
    print("| rows | index | nprobes | refine | build s | p50 ms | p95 ms | recall@10 | recall@50 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rows in args.rows:
        matrix = base if rows == 0 else make_rows(base, rows)
        rows = len(matrix)
        exact10 = exact_top(matrix, queries, 10)
        exact50 = exact_top(matrix, queries, 50)
        configs = index_configs(rows)
        for name in args.configs or list(configs):
            with tempfile.TemporaryDirectory(prefix="ragd-vindex-") as tmp:
                table = build_table(Path(tmp), matrix)
                started = time.perf_counter()
                config = configs[name]
                if config is not None:
                    table.create_index("vector", config=config())
                table.optimize(cleanup_older_than=timedelta(minutes=10))
                built = time.perf_counter() - started
                probes = [None] if config is None else args.nprobes
                refines = [None] if config is None else args.refine
                for nprobes in probes:
                    for refine in refines:
                        p50, p95, r10, r50 = measure(
                            table, queries, exact10, exact50, nprobes, refine or None
                        )
                        print(
                            f"| {rows} | {name} | {nprobes or ''} | {refine or ''} | "
                            f"{built:.1f} | {p50:.2f} | {p95:.2f} | {r10:.3f} | {r50:.3f} |",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
