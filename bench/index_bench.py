"""Index benchmark: full index and no-op re-index of a corpus with the real model.

Usage:
    python bench/index_bench.py CORPUS [--model DIR] [--keep]

CORPUS is a directory (e.g. ../shared/corpora/fastapi-docs) or a .tar.gz to unpack
(e.g. ../shared/corpora/tldr-pages.tar.gz). Every *.md file under it is indexed into a
fresh temporary data_dir by the real `ragd index` command. Prints one table: files,
chunks, full index seconds, chunks/s, no-op re-index seconds, and peak RSS of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"


def run_index(config: Path) -> tuple[dict[str, object], float, int]:
    """Run `ragd index --json`; return its report, wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragd", "--config", str(config), "index", "--json"],
        stdout=subprocess.PIPE,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ragd index failed with exit code {os.waitstatus_to_exitcode(status)}")
    return json.loads(output), seconds, usage.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ragd-bench-") as tmp:
        work = Path(tmp)
        root = args.corpus.resolve()
        if root.is_file():
            with tarfile.open(root) as archive:
                archive.extractall(work / "corpus", filter="data")
            root = work / "corpus"
        files = sum(1 for _ in root.rglob("*.md"))
        config = work / "config.toml"
        config.write_text(
            f'[daemon]\ndata_dir = "{work / "data"}"\n'
            f'[embedding]\nmodel = "{args.model.resolve()}"\n'
            f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
            'include = ["**/*.md"]\n'
        )
        full, full_s, full_rss = run_index(config)
        noop, noop_s, noop_rss = run_index(config)

    chunks = full["chunks"]["embedded"] + full["chunks"]["reused"]  # type: ignore[index]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"corpus:  {args.corpus}")
    print()
    print(
        "| files | chunks | embedded | full index s | chunks/s | peak RSS MiB | no-op re-index s "
        "| no-op peak RSS MiB | no-op embedded |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {files} | {chunks} | {full['chunks']['embedded']} | {full_s:.2f} | "  # type: ignore[index]
        f"{chunks / full_s:.0f} | {full_rss} | {noop_s:.2f} | {noop_rss} | "
        f"{noop['chunks']['embedded']} |"  # type: ignore[index]
    )
    print()
    print(
        "(wall time of the whole `ragd index` process, interpreter start-up included; "
        f"ragd's own timing: full {full['seconds']} s, no-op {noop['seconds']} s)"
    )


if __name__ == "__main__":
    main()
