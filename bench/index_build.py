"""What deleted rows cost the vector index's build: ragd's IVF_SQ build over one table of
N rows, with no rows deleted and with a few.

Usage:
    python bench/index_build.py [--rows 250000] [--deleted 0 2 1000 5000] [--dim 256]

Each variant writes N random unit vectors in one commit (one data file, as a compaction
leaves a table of up to a million rows), deletes the given number of rows spread over
it (as edits do), then builds the index as the daemon does
(`VectorStore.ensure_vector_index`) and prints the seconds.

Why: k-means trains on a sample of 256 rows per partition that LanceDB takes by row
offset. A data file whose deleted rows Lance lists (5,000 deleted were still a list
here; 20,000 were a bitmap, which is fast) makes each taken row cost time in proportion
to the file's rows, so the build grows with the square of the file; docs/performance.md
has the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.stores.vectors import VectorRow, VectorStore  # noqa: E402


def unit_rows(rows: int, dim: int, seed: int = 5) -> list[VectorRow]:
    """`rows` random unit vectors, one per chunk of a document of its own."""
    matrix = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [VectorRow(f"docs:{i}.md#0", f"docs:{i}.md", matrix[i]) for i in range(rows)]


def build_seconds(directory: Path, rows: list[VectorRow], deleted: int) -> float:
    """Seconds to build the index over `rows` once `deleted` of them, spread evenly, are gone."""
    store = VectorStore.open(directory, rows[0].vector.shape[0])
    doc_ids = [row.doc_id for row in rows]
    store.replace_documents(doc_ids, rows, new=doc_ids)
    if deleted:
        step = len(rows) // deleted
        store.delete_chunks([rows[i * step + step // 2].chunk_id for i in range(deleted)])
    started = time.perf_counter()
    built = store.ensure_vector_index(min_rows=1)
    seconds = time.perf_counter() - started
    assert built, "the index was not built"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--deleted", type=int, nargs="+", default=[0, 2, 1000, 5000])
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    rows = unit_rows(args.rows, args.dim)
    print("| rows | deleted | index build s |\n|---|---|---|")
    for deleted in args.deleted:
        with tempfile.TemporaryDirectory() as work:
            seconds = build_seconds(Path(work) / "lancedb", rows, deleted)
        print(f"| {args.rows:,} | {deleted:,} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
