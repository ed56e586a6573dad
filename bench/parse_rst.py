"""reStructuredText parse throughput: files/s and MB/s of `parse_document` on real pages.

Usage:
    python bench/parse_rst.py [ROOT ...] [--rounds 3]

Parses every `.rst` file under each ROOT (default: tests/fixtures/rst) in this process,
`rounds` times, and prints the best round's files/s and MB/s in CPU time (the machine's
other load shows in wall time only), with the count of documents refused and why. A
checkout of Kitware/CMake's Help/ (2,458 pages, 3.8 MB) is a realistic corpus.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "daemon"))

from ragd.indexing.parsers import UnsupportedDocument, parse_document  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path, default=[REPO / "tests/fixtures/rst"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pages = [(p.name, p.read_bytes()) for root in args.roots for p in sorted(root.rglob("*.rst"))]
    size = sum(len(data) for _, data in pages)
    best = float("inf")
    refused: Counter[str] = Counter()
    sections = 0
    for _ in range(args.rounds):
        refused.clear()
        sections = 0
        start = time.process_time()
        for name, data in pages:
            try:
                sections += len(parse_document(data, name).sections)
            except UnsupportedDocument as exc:
                refused[exc.reason.partition(":")[0]] += 1
        best = min(best, time.process_time() - start)
    print(
        f"{len(pages)} files, {size / 1e6:.2f} MB, {sections} sections: best of {args.rounds}"
        f" {best:.2f} s CPU = {len(pages) / best:.0f} files/s, {size / 1e6 / best:.2f} MB/s"
    )
    for reason, count in refused.most_common():
        print(f"  refused {count}: {reason}")


if __name__ == "__main__":
    main()
