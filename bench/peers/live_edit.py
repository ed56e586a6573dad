"""Edit-to-visible latency, in one run, of ragd's daemon and CocoIndex's live mode.

Usage (the repository's venv; CocoIndex runs under its own, see bench/peers/README.md):
    .venv/bin/python bench/peers/live_edit.py [--files 50] [--edits 50] [--rerank] [--json]

Copies the same N fastapi-docs pages (the first N that bench/edit_latency.py draws from, with
their folders) into two temporary roots. One is watched by a real `ragd serve` (second stage
off unless --rerank), the other by the CocoIndex app of compare.py run with
`update(live=True)` in a process of its own, whose localfs source watches the root. Once both
have indexed every page, it makes M edits, each to the same page of both roots, alternately
saved in place (append and close) and as an editor's atomic save (written aside, then renamed
over); each appends a sentence with a word no page has. Per edit and system the clock runs
from the save until
- ragd: a BM25 query over HTTP ranks that page first;
- CocoIndex: a reader sees a row holding the word in its LanceDB table (a table handle that
  checks out the latest version before each count);
both polled every --poll-ms. One clock runs at a time: the edit is made to one system, timed
until visible, then to the other (which goes first alternates). Prints p50/p95/max per system
and kind of save.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
from compare import COCO_TABLE, DEFAULT_MODEL, DEFAULT_PEER_PYTHON, OFFLINE_ENV, REPO

FASTAPI_PAGES = REPO.parent / "shared" / "corpora" / "fastapi-docs" / "docs" / "en" / "docs"
RERANK_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-v2-onnx-int8"
DEFAULT_RAGD = REPO / ".venv" / "bin" / "ragd"
SYSTEMS = ("ragd", "cocoindex")


# --------------------------------------------------------------------------- the edits


def _append_and_close(page: Path, text: str) -> None:
    """A save in place: open, append, close."""
    with page.open("a") as handle:
        handle.write(text)


def _atomic_rename(page: Path, text: str) -> None:
    """An editor's atomic save: the whole new file written aside (a name neither system
    indexes), then renamed over."""
    temp = page.with_name(f".{page.name}.tmp")
    temp.write_text(page.read_text() + text)
    os.replace(temp, page)


SAVE: dict[str, Callable[[Path, str], None]] = {
    "close": _append_and_close,
    "rename": _atomic_rename,
}


def marker(number: int) -> str:
    """A word no page has, letters only (digits would match other pages' numbers in BM25)."""
    letters = ""
    for _ in range(3):
        number, digit = divmod(number, 26)
        letters = chr(ord("a") + digit) + letters
    return f"zqxmark{letters}"


def copy_pages(dest: Path, files: int) -> None:
    """The first `files` fastapi-docs pages (as bench/edit_latency.py picks them), keeping
    their folders (a few names repeat in different folders)."""
    for page in sorted(FASTAPI_PAGES.rglob("*.md"))[:files]:
        target = dest / page.relative_to(FASTAPI_PAGES)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)


def pages_under(root: Path) -> list[str]:
    """The pages under root, relative POSIX paths, in a stable order."""
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*.md"))


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float, what: str) -> None:
    """Poll until predicate() is truthy; SystemExit naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it is still there after `timeout` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --------------------------------------------------------------------------- ragd's daemon


def free_port() -> int:
    """A TCP port on loopback nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RagdDaemon:
    """A `ragd serve` watching one folder source, queried over HTTP on loopback."""

    def __init__(self, ragd: Path, home: Path, root: Path, rerank: Path | None) -> None:
        self.port = free_port()
        self.home = home
        second = f'model = "{rerank}"' if rerank else "enabled = false"
        self.config = home / "config.toml"
        self.config.write_text(
            f'[daemon]\ndata_dir = "{home / "state"}"\n'
            f'[http]\nlisten = "127.0.0.1:{self.port}"\n'
            f'[embedding]\nmodel = "{DEFAULT_MODEL}"\n'
            f"[rerank]\n{second}\n"
            "[chunking]\nmax_chars = 900\noverlap = 120\n"
            f'[[sources]]\nname = "docs"\ntype = "folder"\npath = "{root}"\n'
            'include = ["**/*.md"]\n'
        )
        self.log = (home / "serve.log").open("ab")
        self.process = subprocess.Popen(
            [str(ragd), "--config", str(self.config), "serve"],
            stdout=self.log,
            stderr=self.log,
            env=dict(os.environ, RAGD_LOG_FORMAT="json", **OFFLINE_ENV),
            cwd=home,
        )
        # On loopback: no proxy, whatever the environment says.
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", timeout=30, trust_env=False
        )

    def request(self, path: str, body: dict[str, Any] | None = None) -> Any:
        if body is None:
            reply = self.http.get(path)
        else:
            reply = self.http.post(path, content=json.dumps(body).encode())
        reply.raise_for_status()
        return reply.json()

    def _alive(self) -> None:
        if self.process.poll() is not None:
            log = (self.home / "serve.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"ragd serve exited early:\n{log}")

    def healthy(self) -> bool:
        self._alive()
        try:
            return bool(self.request("/healthz")["status"] == "ok")
        except httpx.HTTPError:
            return False

    def indexed(self, files: int, rerank: bool) -> bool:
        """Start-up scan done, queue empty, every page indexed (and, with the second stage,
        every chunk's second-stage vector filled, as in a daemon that has run a while)."""
        self._alive()
        status = self.request("/v1/status")
        daemon, source = status["daemon"], status["sources"][0]
        idle = daemon["writer"]["last_scan_at"] and daemon["queue_depth"] == 0
        done = idle and not daemon["writer"]["busy"] and source["indexed"] == files
        if done and rerank:
            second = source["second_stage"]
            return bool(second["chunks"]) and second["pending"] == 0
        return bool(done)

    def visible(self, word: str, page: str) -> bool:
        """A BM25 query for the word ranks the page first."""
        hits = self.request("/v1/query", {"query": word, "mode": "bm25", "k": 10})["results"]
        return bool(hits) and hits[0]["path"] == page

    def stop(self) -> None:
        stop_process(self.process)
        self.http.close()
        self.log.close()


# --------------------------------------------------------------------------- CocoIndex live


def serve_cocoindex(root: Path, state: Path, model: Path) -> None:
    """In CocoIndex's venv: run compare.py's app live over root; write state/ready once its
    first update has caught up, then keep applying changes until terminated."""
    import asyncio

    os.environ.update(OFFLINE_ENV)  # before cocoindex is imported
    import cocoindex as coco
    from compare import cocoindex_app

    app, _ = cocoindex_app(root, state, model, live=True)

    async def run() -> None:
        handle = app.update(live=True)
        async for snapshot in handle.watch():
            if snapshot.status == coco.UpdateStatus.READY and not (state / "ready").exists():
                (state / "ready").touch()

    asyncio.run(run())


class CocoLive:
    """compare.py's CocoIndex app in live mode, in its own process and venv; this process
    reads its LanceDB table as any reader would."""

    def __init__(self, python: Path, home: Path, root: Path) -> None:
        self.state = home / "state"
        self.state.mkdir(parents=True)
        self.home = home
        self.log = (home / "cocoindex.log").open("ab")
        argv = [str(python), str(Path(__file__).resolve()), "--serve-cocoindex"]
        argv += ["--root", str(root), "--state", str(self.state)]
        self.process = subprocess.Popen(
            argv, stdout=self.log, stderr=self.log, env=dict(os.environ, **OFFLINE_ENV)
        )
        self.table: Any = None

    def indexed(self, files: int) -> bool:
        """Its first update caught up and the table holds rows of every page."""
        if self.process.poll() is not None:
            log = (self.home / "cocoindex.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"CocoIndex live process exited early:\n{log}")
        if not (self.state / "ready").exists():
            return False
        if self.table is None:
            import lancedb

            self.table = lancedb.connect(str(self.state / "lancedb")).open_table(COCO_TABLE)
        self.table.checkout_latest()
        return len(self.table.to_arrow().column("path").unique()) == files

    def visible(self, word: str, page: str) -> bool:
        """A row holding the word is in the latest version of the table."""
        del page  # the word is in no other page
        self.table.checkout_latest()
        return bool(self.table.count_rows(f"text LIKE '%{word}%'"))

    def stop(self) -> None:
        stop_process(self.process)
        self.log.close()


# --------------------------------------------------------------------------- the run

Watcher = RagdDaemon | CocoLive


def time_edit(
    visible: Callable[[str, str], bool],
    root: Path,
    page: str,
    style: str,
    word: str,
    args: argparse.Namespace,
) -> float:
    """Save the edit, then poll until it is visible; seconds from the save."""
    started = time.perf_counter()
    SAVE[style](root / page, f"\n\nAn appended sentence with {word} in it.\n")
    wait_for(lambda: visible(word, page), args.timeout, args.poll_ms / 1000, f"{word} in {page}")
    return time.perf_counter() - started


def summarize(
    latencies: dict[tuple[str, str], list[float]], polls: dict[str, float]
) -> list[dict[str, Any]]:
    """p50/p95/max per (system, save), then per system over both kinds of save; and what
    one poll costs that system."""
    rows = []
    systems = sorted({system for system, _ in latencies}, key=SYSTEMS.index)
    for system in systems:
        kinds = [
            (style, latencies[system, style]) for style in SAVE if (system, style) in latencies
        ]
        everything = [t for _, times in kinds for t in times]
        for style, times in [*kinds, ("all", everything)]:
            ordered = sorted(times)
            rows.append(
                {
                    "system": system,
                    "save": style,
                    "edits": len(ordered),
                    "p50_s": statistics.median(ordered),
                    "p95_s": ordered[math.ceil(len(ordered) * 0.95) - 1],  # nearest rank
                    "max_s": ordered[-1],
                    "poll_s": polls[system],
                }
            )
    return rows


def start(args: argparse.Namespace, work: Path, watchers: dict[str, Watcher]) -> None:
    """Start each system on its own copy of the pages and wait until it has indexed them,
    one system after the other (each gets the machine to itself for its first index)."""
    if "ragd" in args.systems:
        root = work / "ragd" / "docs"
        copy_pages(root, args.files)
        rerank = RERANK_MODEL if args.rerank else None
        ragd = watchers["ragd"] = RagdDaemon(args.ragd, work / "ragd", root, rerank)
        wait_for(ragd.healthy, 60, 0.1, "ragd serve healthy")
        wait_for(lambda: ragd.indexed(args.files, args.rerank), 1800, 0.2, "ragd's first index")
    if "cocoindex" in args.systems:
        root = work / "cocoindex" / "docs"
        copy_pages(root, args.files)
        coco = watchers["cocoindex"] = CocoLive(args.cocoindex_python, work / "cocoindex", root)
        wait_for(lambda: coco.indexed(args.files), 600, 0.1, "CocoIndex's first update")


def time_edits(
    args: argparse.Namespace, work: Path, watchers: dict[str, Watcher]
) -> dict[tuple[str, str], list[float]]:
    """The edits, each to the same page of every system, one clock at a time."""
    latencies: dict[tuple[str, str], list[float]] = {}
    order = [system for system in SYSTEMS if system in watchers]
    for number in range(args.edits):
        style = tuple(SAVE)[number % len(SAVE)]
        word = marker(number)
        for system in order if number % 2 == 0 else order[::-1]:  # who goes first alternates
            root = work / system / "docs"
            page = pages_under(root)[number % args.files]
            seconds = time_edit(watchers[system].visible, root, page, style, word, args)
            latencies.setdefault((system, style), []).append(seconds)
            time.sleep(args.settle)  # its follow-up work (compaction, merges) before the next clock
    return latencies


def poll_cost(watcher: Watcher, root: Path, edits: int, files: int) -> float:
    """Median seconds of one check that finds the last edit: the floor under every figure."""
    page = pages_under(root)[(edits - 1) % files]
    times = []
    for _ in range(20):
        started = time.perf_counter()
        if not watcher.visible(marker(edits - 1), page):
            raise SystemExit(f"the last edit to {page} is no longer visible")
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Start the systems, wait for their first index, time the edits, stop the systems."""
    with tempfile.TemporaryDirectory(prefix="ragd-live-edit-") as tmp:
        work = Path(tmp)
        watchers: dict[str, Watcher] = {}
        try:
            start(args, work, watchers)
            print(f"indexed; {args.edits} edits ...", file=sys.stderr, flush=True)
            latencies = time_edits(args, work, watchers)
            polls = {
                system: poll_cost(watcher, work / system / "docs", args.edits, args.files)
                for system, watcher in watchers.items()
            }
        finally:
            for watcher in watchers.values():
                watcher.stop()
    return summarize(latencies, polls)


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    stage = "second stage on, filling in the background" if args.rerank else "second stage off"
    print(
        f"root: {args.files} fastapi-docs pages per system; {args.edits} edits, one clock at a "
        f"time; ragd: {stage}; polled every {args.poll_ms:g} ms"
    )
    print()
    print("| system | save | edits | p50 s | p95 s | max s | one poll s |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['system']} | {row['save']} | {row['edits']} | {row['p50_s']:.3f} "
            f"| {row['p95_s']:.3f} | {row['max_s']:.3f} | {row['poll_s']:.4f} |"
        )
    print(
        "(ragd: from the save until a BM25 query over HTTP ranks the page first; CocoIndex: "
        "until a row holding the new word is in the latest version of its LanceDB table. "
        "One poll: the median cost of one such check once the edit is visible.)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument(
        "--rerank", action="store_true", help=f"ragd's second stage on, with {RERANK_MODEL}"
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="ragd,cocoindex or one")
    parser.add_argument("--ragd", type=Path, default=DEFAULT_RAGD, help="the ragd executable")
    parser.add_argument(
        "--cocoindex-python",
        type=Path,
        default=DEFAULT_PEER_PYTHON["cocoindex"],
        help="the interpreter of CocoIndex's venv (default: .venv-cocoindex/bin/python)",
    )
    parser.add_argument("--poll-ms", type=float, default=5.0, help="poll interval, both systems")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds one edit may take")
    parser.add_argument(
        "--settle", type=float, default=0.2, help="pause after each edit became visible"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    # Internal: CocoIndex's live process, under its venv's interpreter.
    parser.add_argument("--serve-cocoindex", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve_cocoindex:
        serve_cocoindex(args.root, args.state, args.model)
        return
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not args.systems or set(args.systems) - set(SYSTEMS):
        parser.error(f"--systems: a subset of {','.join(SYSTEMS)}")
    if "cocoindex" in args.systems and not args.cocoindex_python.exists():
        parser.error(f"no interpreter at {args.cocoindex_python} (see bench/peers/README.md)")

    rows = run(args)
    if args.json:
        body = {
            "machine": {"arch": platform.machine(), "cores": os.cpu_count()},
            "files": args.files,
            "edits": args.edits,
            "rerank": args.rerank,
            "poll_ms": args.poll_ms,
            "results": rows,
        }
        print(json.dumps(body, indent=2))
    else:
        print_table(rows, args)


if __name__ == "__main__":
    main()
