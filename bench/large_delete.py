"""Deleting one large document: how long `ragd index` takes, and what it commits.

Usage:
    python bench/large_delete.py [--chunks 1000] [--rounds 3]

Copies fastapi-docs into a temporary root with one more page of `--chunks` sections (each
a heading and a paragraph of about 600 characters, one chunk apiece), indexes it with the
first stage (the second stage off: a delete embeds nothing), then deletes that page and
runs `ragd index --json` in process. Prints the pass's seconds (its report), the chunks
deleted, and how many LanceDB versions and Tantivy commits the delete added. Repeats
`--rounds` times from a fresh copy; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.cli import main as cli_main  # noqa: E402
from ragd.stores.vectors import VectorStore  # noqa: E402
from tests.conftest import FASTAPI_DOCS, write_config  # noqa: E402

SENTENCE = "Each section of this long reference page describes one setting in plain words. "


def _big_page(sections: int) -> str:
    parts = ["# A very long reference page\n"]
    for n in range(sections):
        parts.append(f"\n## Setting number {n}\n\n{SENTENCE * 7}Its code is s{n:05d}.\n")
    return "".join(parts)


def _index(config: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--config", str(config), "index", "--json"]) == 0
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def _tantivy_opstamp(data: Path) -> int:
    return int(json.loads((data / "tantivy" / "meta.json").read_text())["opstamp"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = platform.python_version()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {python}")
    print(f"corpus: fastapi-docs plus one page of {args.chunks} sections; first stage only")
    seconds: list[float] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="ragd-delete-") as tmp:
            work = Path(tmp)
            docs = work / "docs"
            shutil.copytree(FASTAPI_DOCS, docs)
            big = docs / "big-reference.md"
            big.write_text(_big_page(args.chunks))
            config = write_config(work, docs)
            _index(config)
            data = work / "data"
            vectors = VectorStore.open_readonly(data / "lancedb")
            versions, opstamp = vectors.version_count(), _tantivy_opstamp(data)

            big.unlink()
            report = _index(config)

            vectors = VectorStore.open_readonly(data / "lancedb")
            added = vectors.version_count() - versions
            commits = "one commit" if _tantivy_opstamp(data) > opstamp else "no commit"
            seconds.append(float(report["seconds"]))
            print(
                f"deleted {report['chunks']['deleted']} chunks of "
                f"{report['documents']['deleted']} document in {report['seconds']:.3f} s "
                f"(the pass, in process); LanceDB versions added: {added}; Tantivy: {commits}"
            )
    print(f"median of {args.rounds}: {statistics.median(seconds):.3f} s")


if __name__ == "__main__":
    main()
