"""Edit-to-searchable latency of a running `ragd serve`.

Usage:
    python bench/edit_latency.py [--files 50] [--edits 50] [--no-rerank] [--save both]

Copies N fastapi-docs pages into a temporary root, starts the real daemon with the local
models (the second stage on unless --no-rerank), waits for the first scan and for every
second-stage vector, then makes M edits one at a time. Each edit appends a sentence with
a unique word to one page, saved in place (append and close) or as an editor's atomic
save (the new file written aside and renamed over), alternately by default; the clock
runs from the save until a BM25 query over HTTP returns that page first. Meanwhile the
daemon's filler embeds each edited chunk's second-stage vector in the background, as in
production. Prints p50/p95/max per kind of save.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import FASTAPI_DOCS, RERANK_MODEL_DIR  # noqa: E402
from tests.integration.daemon import Served, wait_until  # noqa: E402


def _append_and_close(page: Path, text: str) -> None:
    """A save in place: open, append, close (IN_CLOSE_WRITE)."""
    with page.open("a") as handle:
        handle.write(text)


def _atomic_rename(page: Path, text: str) -> None:
    """An editor's atomic save: the whole new file written aside, then renamed over."""
    temp = page.with_name(f".{page.name}.tmp")
    temp.write_text(page.read_text() + text)
    os.replace(temp, page)


SAVE = {"close": _append_and_close, "rename": _atomic_rename}
SAVES = tuple(SAVE)


def _is_top_hit(daemon: Served, word: str, name: str) -> bool:
    """True when a BM25 query for `word` ranks the page `name` first."""
    return daemon.paths_for(word)[:1] == [name]


def _filled(daemon: Served) -> bool:
    """True once every chunk has its second-stage vector."""
    second = daemon.status()["sources"][0]["second_stage"]
    return bool(second["chunks"]) and second["pending"] == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--no-rerank", action="store_true", help="Turn the second stage off.")
    parser.add_argument(
        "--save",
        choices=(*SAVES, "both"),
        default="both",
        help="How each edit is saved: append and close, an atomic rename, or alternating.",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ragd-latency-") as tmp:
        work = Path(tmp)
        root = work / "docs"
        root.mkdir()
        pages = sorted((FASTAPI_DOCS / "docs" / "en" / "docs").rglob("*.md"))[: args.files]
        for page in pages:
            shutil.copyfile(page, root / page.name)
        daemon = Served(work, root, rerank=None if args.no_rerank else RERANK_MODEL_DIR)
        latencies: dict[str, list[float]] = {}
        try:
            daemon.start().wait_ready()
            daemon.wait_scanned()
            if not args.no_rerank:  # start from a filled index, as a daemon that has run
                wait_until(lambda: _filled(daemon), 1800, 1.0)
            targets = sorted(root.glob("*.md"))
            for n in range(args.edits):
                target = targets[n % len(targets)]
                word = f"zqxmarker{n:04d}"
                style = SAVES[n % len(SAVES)] if args.save == "both" else args.save
                started = time.perf_counter()
                SAVE[style](target, f"\n\nAn appended sentence with {word} in it.\n")
                # The top hit: other pages can match the marker's digit part ("0000").
                wait_until(partial(_is_top_hit, daemon, word, target.name), 30, 0.01)
                latencies.setdefault(style, []).append(time.perf_counter() - started)
        finally:
            daemon.stop()

    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"machine: {machine}, Python {platform.python_version()}")
    stages = "first stage only" if args.no_rerank else "second stage filling in the background"
    print(f"root: {args.files} fastapi-docs pages; {args.edits} edits, one at a time; {stages}")
    print()
    print("| save | edits | p50 s | p95 s | max s |")
    print("|---|---|---|---|---|")
    everything = [t for times in latencies.values() for t in times]
    for style, times in [*sorted(latencies.items()), ("all", everything)]:
        times.sort()
        p95 = times[max(0, int(len(times) * 0.95) - 1)]
        median = statistics.median(times)
        print(f"| {style} | {len(times)} | {median:.3f} | {p95:.3f} | {times[-1]:.3f} |")
    print("(from the save until a BM25 query over HTTP, polled every 10 ms, ranks the page first)")


if __name__ == "__main__":
    main()
