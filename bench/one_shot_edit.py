"""A one-shot `ragd index` after a one-section edit: what the process costs, and what of
it is the change.

Usage:
    python bench/one_shot_edit.py [--rounds 5] [--corpus DIR]

Copies the corpus (default fastapi-docs) into a temporary root, indexes it with the first
stage (the second stage off, as bench/peers/compare.py runs every system), then, each
round, appends a sentence to the first paragraph under the middle heading of the
median-sized page and times three things, alternating edits between them:

- the whole `ragd index --json` process (interpreter, imports, the pass, exit), and the
  pass's own seconds from its report (the lazy import of lancedb falls inside it);
- the pass in this process with the libraries already imported (lancedb, model2vec,
  tantivy), as bench/peers/compare.py times its peers "in process": from opening the
  state to having persisted it, the model loaded inside the clock.

Prints each round and the medians; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "daemon"), str(REPO)]

from ragd.cli import main as cli_main  # noqa: E402
from tests.conftest import FASTAPI_DOCS, write_config  # noqa: E402

RAGD = [sys.executable, "-m", "ragd"]  # this interpreter, with this checkout's ragd first


def _target(root: Path) -> Path:
    """The median-sized page among those with at least three headings."""
    pages = sorted(
        (p for p in root.rglob("*.md") if p.read_text().count("\n#") >= 3),
        key=lambda p: (p.stat().st_size, str(p)),
    )
    return pages[len(pages) // 2]


def _edit(page: Path, n: int) -> None:
    """Extend the first prose line under the page's middle heading by one sentence."""
    lines = page.read_text().split("\n")
    headings = [i for i, line in enumerate(lines) if line.startswith("#")]
    fenced = False
    for i in range(headings[len(headings) // 2] + 1, len(lines)):
        if lines[i].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[i].strip() and lines[i][0].isalpha():
            lines[i] += f" One more sentence for round {n} of the edit bench."
            page.write_text("\n".join(lines))
            return
    raise SystemExit(f"no prose line under the middle heading of {page}")


def _whole_process(config: Path) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = subprocess.run(
        [*RAGD, "--config", str(config), "index", "--json"],
        capture_output=True,
        check=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=f"{REPO / 'daemon'}:{REPO}"),
    )
    return time.perf_counter() - started, json.loads(done.stdout)


def _in_process(config: Path) -> tuple[float, dict[str, Any]]:
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--config", str(config), "index", "--json"]) == 0
    return time.perf_counter() - started, json.loads(out.getvalue())


def _import_libraries() -> None:
    """What a peer imports before its clock starts: here, what this pass writes with."""
    import lancedb  # noqa: F401
    import model2vec  # noqa: F401
    import tantivy  # noqa: F401


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=FASTAPI_DOCS)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    whole: list[float] = []
    reported: list[float] = []
    here: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ragd-one-shot-") as tmp:
        work = Path(tmp)
        root = work / "docs"
        shutil.copytree(args.corpus, root)
        config = write_config(work, root)
        _whole_process(config)
        page = _target(root)
        print(f"corpus: {args.corpus.name}; edited page: {page.relative_to(root)}; first stage")
        _import_libraries()
        edits = itertools.count()
        for n in range(args.rounds):
            _edit(page, next(edits))
            seconds, report = _whole_process(config)
            assert report["documents"]["changed"] == 1, report
            whole.append(seconds)
            reported.append(float(report["seconds"]))
            _edit(page, next(edits))
            seconds, report = _in_process(config)
            assert report["documents"]["changed"] == 1, report
            here.append(seconds)
            print(
                f"round {n + 1}: process {whole[-1]:.3f} s (its pass {reported[-1]:.3f} s); "
                f"libraries imported: {here[-1]:.3f} s; texts embedded "
                f"{report['chunks']['embedded']}"
            )
    print()
    rows = [
        ("whole process", whole),
        ("its pass (report `seconds`; lancedb is imported inside it)", reported),
        ("in process, libraries imported first (as peers are timed)", here),
    ]
    print("| one-section edit, `ragd index` | median s |")
    print("|---|---|")
    for name, runs in rows:
        print(f"| {name} | {statistics.median(runs):.3f} |")


if __name__ == "__main__":
    main()
