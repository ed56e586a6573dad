"""Soak run: a real `ragd serve` under a steady stream of edits and queries.

Usage:
    python bench/soak.py [--minutes 10] [--files-per-tick 20] [--webhook-upserts 2]
                         [--qps 4] [--compact-interval 90s] [--cleanup-older-than 60s]
                         [--second-stage] [--replica] [--json] [--save FILE] [--keep]

Copies the fastapi-docs corpus into a temporary root and starts the real daemon on it with
the local model, offline, with the scheduled compaction shortened so that it runs several
times during the soak. For --minutes it then, all at once:

- changes --files-per-tick distinct files every --tick-seconds: a new paragraph in one
  section (most changes), a whole-file rewrite, a new file, a deleted file; and sends
  --webhook-upserts signed CMS upserts per tick to a fixed set of entries;
- sends POST /v1/query at about --qps (hybrid, bm25 and vector in turn), timing each;
- samples every --sample-seconds: the daemon's RSS, the LanceDB version count, the bytes on
  disk of each store, the queue depth and the writer's counters.

Then it stops the load (deleting every CMS entry, so the final sources are the folder
alone), waits for the queue to drain and for a scheduled compaction that starts once the
last write's LanceDB versions are old enough to be cleaned up, records disk use, stops the
daemon with SIGTERM (it must exit 0), indexes the same final folder from scratch with
`ragd index` into another data_dir, and compares the two: disk use (issue #7's target is
at most 1.5x the rebuild), chunk id sets, and `ragd status` agreement.

With --second-stage the second-stage model is on; with --replica the index lives on a
local S3 server (SeaweedFS) and a `ragd serve --reader` beside the writer gets the same
queries (docs/soak.md).

It prints figures and asserts nothing about timings: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import re
import shutil
import signal
import sqlite3
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import ragd  # noqa: E402
from ragd.config import parse_duration  # noqa: E402
from tests.conftest import (  # noqa: E402
    FASTAPI_DOCS,
    GOLD,
    MODEL_DIR,
    RERANK_MODEL_DIR,
    storage_section,
    write_config,
)
from tests.integration.daemon import Served  # noqa: E402
from tests.integration.test_webhooks import SECRET_TEXT, signed  # noqa: E402
from tests.s3_server import running_s3_server  # noqa: E402

MIB = 1024 * 1024
# The paragraph a section edit adds starts with this, so the next edit of that section
# can find and replace it: files change on every edit but do not grow without bound.
MARK = "Soak revision "
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^#{1,6}\s")
WEBHOOK_SOURCE = "cms"
WEBHOOK_ENTRIES = 20  # CMS entry ids the upserts cycle through
MODES = ("hybrid", "bm25", "vector")


# -- measuring ---------------------------------------------------------------------------


def disk_use(data_dir: Path) -> dict[str, int]:
    """Bytes allocated on disk (as `du` counts them) under data_dir, by store.

    os.walk rather than rglob: compaction deletes LanceDB files while we walk, and a
    vanished directory or file must be skipped, not fail the sample.
    """
    use = {"lancedb": 0, "tantivy": 0, "sqlite": 0, "other": 0}
    for directory, _, names in os.walk(data_dir):
        top = Path(directory).relative_to(data_dir).parts
        for name in names:
            try:
                info = os.lstat(Path(directory) / name)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if top and top[0] in ("lancedb", "tantivy"):
                store = top[0]
            elif ".db" in name:  # state.db and its -wal / -shm files
                store = "sqlite"
            else:
                store = "other"
            use[store] += info.st_blocks * 512
    use["total"] = sum(use.values())
    return use


def rss_kib(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) of a process in KiB, from /proc/PID/status."""
    values = {"VmRSS": 0, "VmHWM": 0}
    with Path(f"/proc/{pid}/status").open() as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in values:
                values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-quantile (0..1) of an ascending list, nearest rank; 0 for an empty list."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(p * len(sorted_values)) - 1))
    return sorted_values[index]


def log_time(stamp: str) -> float:
    """A structlog ISO timestamp as unix seconds."""
    return datetime.fromisoformat(stamp).timestamp()


@dataclass
class Sample:
    """One look at the running daemon."""

    t: float  # seconds since the load started (negative: before it)
    wall: float  # unix time, to line samples up with log events
    rss_mib: float
    versions: int | None
    disk: dict[str, int]
    queue_depth: int | None
    documents_indexed: int | None
    documents_deleted: int | None
    documents_failed: int | None
    writer_errors: int | None
    stores_agree: bool | None
    status_error: str | None = None


def take_sample(daemon: Served, data_dir: Path, started: float) -> Sample:
    """Sample the daemon now; a failed status call is recorded, not raised."""
    pid = daemon.process.pid if daemon.process else 0
    rss, _ = rss_kib(pid)
    disk = disk_use(data_dir)
    try:
        status = daemon.status()
    except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
        # A 503's body is the reason the daemon could not build its report.
        reason = ""
        if isinstance(exc, urllib.error.HTTPError):
            reason = exc.read()[:300].decode(errors="replace")
        return Sample(
            t=time.monotonic() - started,
            wall=time.time(),
            rss_mib=rss / 1024,
            versions=None,
            disk=disk,
            queue_depth=None,
            documents_indexed=None,
            documents_deleted=None,
            documents_failed=None,
            writer_errors=None,
            stores_agree=None,
            status_error=f"{exc} {reason}".strip(),
        )
    writer = status["daemon"]["writer"]
    return Sample(
        t=time.monotonic() - started,
        wall=time.time(),
        rss_mib=rss / 1024,
        versions=status["daemon"]["lancedb_versions"],
        disk=disk,
        queue_depth=status["daemon"]["queue_depth"],
        documents_indexed=writer["documents_indexed"],
        documents_deleted=writer["documents_deleted"],
        documents_failed=writer["documents_failed"],
        writer_errors=writer["errors"],
        stores_agree=status["stores_agree"],
    )


class Sampler(threading.Thread):
    """Takes a Sample every `interval` seconds until stopped, and asks a reader replica
    (if any) for its status at the same time."""

    def __init__(
        self,
        daemon: Served,
        data_dir: Path,
        started: float,
        interval: float,
        reader: Served | None = None,
    ) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.daemon_ = daemon
        self.data_dir = data_dir
        self.started = started
        self.interval = interval
        self.reader = reader
        self.samples: list[Sample] = []
        self.reader_calls = 0
        self.reader_errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.samples.append(take_sample(self.daemon_, self.data_dir, self.started))
            if self.reader is not None:
                self._ask_reader(self.reader)

    def _ask_reader(self, reader: Served) -> None:
        self.reader_calls += 1
        try:
            reader.status()
        except (OSError, ValueError) as exc:
            self.reader_errors.append(f"t={time.monotonic() - self.started:.0f} s: {exc}")


class QueryLoad(threading.Thread):
    """POSTs /v1/query at about `qps`, cycling through the gold queries and the three modes."""

    def __init__(self, port: int, queries: list[str], qps: float) -> None:
        super().__init__(name="soak-queries", daemon=True)
        self.url = f"http://127.0.0.1:{port}/v1/query"
        self.queries = queries
        self.period = 1.0 / qps
        self.answered: list[tuple[float, str, float]] = []  # (time.time(), mode, seconds)
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        # A new connection per query, as a client that comes and goes would open; no proxy.
        limits = httpx.Limits(max_keepalive_connections=0)
        with httpx.Client(timeout=30, limits=limits, trust_env=False) as http:
            self._load(http)

    def _load(self, http: httpx.Client) -> None:
        n = 0
        while not self.stop.is_set():
            mode = MODES[n % len(MODES)]
            text = self.queries[n % len(self.queries)]
            n += 1
            body = json.dumps({"query": text, "mode": mode, "k": 10}).encode()
            started = time.perf_counter()
            try:
                reply = http.post(self.url, content=body)
                if reply.status_code != 200:
                    raise ValueError(f"HTTP {reply.status_code}: {reply.content[:200]!r}")
                answer = reply.json()
                if "results" not in answer:
                    raise ValueError(f"no results in the answer: {str(answer)[:200]}")
                self.answered.append((time.time(), mode, time.perf_counter() - started))
            except (httpx.HTTPError, ValueError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            # A fixed period from the start of each query, so a slow answer is not followed
            # by a burst; when answers are slower than the period, queries run back to back.
            self.stop.wait(max(0.0, self.period - (time.perf_counter() - started)))

    @property
    def latencies(self) -> dict[str, list[float]]:
        """Answer times in seconds by mode."""
        by_mode: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _, mode, seconds in self.answered:
            by_mode[mode].append(seconds)
        return by_mode


# -- the edit stream ---------------------------------------------------------------------


def heading_lines(lines: list[str]) -> list[int]:
    """Indexes of markdown heading lines, skipping `#` lines inside code fences."""
    found: list[int] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        opened = FENCE.match(line)
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
        elif fence is None and HEADING.match(line):
            found.append(i)
    return found


class Editor:
    """Changes the files under `root` the way writers and tools do, and counts what it did."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.files = sorted(root.rglob("*.md"))
        self.initial = len(self.files)
        self.sections: list[str] = []  # whole sections of the original pages, for new text
        words: set[str] = set()
        for path in self.files:
            lines = path.read_text(errors="replace").splitlines()
            starts = [*heading_lines(lines), len(lines)]
            for start, end in itertools.pairwise(starts):
                section = "\n".join(lines[start:end]).strip()
                if start and 200 < len(section) < 4000 and not section.startswith("# "):
                    self.sections.append(section)
            words.update(w for w in re.findall(r"[a-z]{4,12}", " ".join(lines)))
        self.words = sorted(words)
        self.serial = 0
        self.done: Counter[str] = Counter()

    def sentence(self) -> str:
        """A fresh paragraph: a serial number (so every change is a real change) and words."""
        self.serial += 1
        body = " ".join(self.rng.choices(self.words, k=self.rng.randint(8, 24)))
        return f"{MARK}{self.serial}: {body}."

    def page(self) -> str:
        """A plausible new page: a title and three to eight sections of the corpus."""
        picked = self.rng.sample(self.sections, self.rng.randint(3, 8))
        return f"# Soak page {self.serial}\n\n{self.sentence()}\n\n" + "\n\n".join(picked) + "\n"

    def tick(self, count: int) -> None:
        """Change `count` distinct files: about 60% section edits, 15% rewrites, 25% churn."""
        targets = self.rng.sample(self.files, min(count, len(self.files)))
        for path in targets:
            roll = self.rng.random()
            if roll < 0.60:
                self.edit_section(path)
            elif roll < 0.75:
                self.rewrite(path)
            # Churn keeps the file count within 20% of the start, so disk use compares fairly.
            elif len(self.files) < self.initial * 1.2 and (
                roll < 0.875 or len(self.files) <= self.initial * 0.8
            ):
                self.create()
            else:
                self.delete(path)

    def edit_section(self, path: Path) -> None:
        """Replace the soak paragraph under one heading (or add one): one section changes."""
        lines = path.read_text(errors="replace").splitlines()
        heads = heading_lines(lines) or [-1]
        head = self.rng.choice(heads)
        end = next((i for i in heads if i > head), len(lines))
        for i in range(end - 1, head, -1):
            if lines[i].startswith(MARK):
                del lines[i - 1 if i > 0 and not lines[i - 1] else i : i + 1]
        lines[head + 1 : head + 1] = ["", self.sentence()]
        path.write_text("\n".join(lines) + "\n")  # in place, like most editors
        self.done["section edits"] += 1

    def rewrite(self, path: Path) -> None:
        """Replace the whole file by write-and-rename, as git checkouts and some editors do."""
        temporary = path.with_name(f".soak-{self.serial}.tmp")  # not *.md: never indexed
        temporary.write_text(self.page())
        temporary.replace(path)
        self.done["rewrites"] += 1

    def create(self) -> None:
        path = self.root / "soak" / f"page-{self.serial:05d}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(self.page())
        self.files.append(path)
        self.done["creates"] += 1

    def delete(self, path: Path) -> None:
        path.unlink()
        self.files.remove(path)
        self.done["deletes"] += 1


class Cms:
    """Sends signed upserts (and, at the end, deletes) for a fixed set of CMS entries."""

    def __init__(self, daemon: Served, editor: Editor) -> None:
        self.daemon = daemon
        self.editor = editor
        self.touched: set[str] = set()
        self.sent: Counter[str] = Counter()
        self.errors: list[str] = []

    def send(self, payload: dict[str, Any]) -> None:
        body, headers = signed(payload)
        try:
            status, answer = self.daemon.post(f"/v1/webhooks/{WEBHOOK_SOURCE}", body, headers)
        except OSError as exc:
            self.errors.append(f"{payload['event']} {payload['id']}: {exc}")
            return
        if status != 202:
            self.errors.append(f"{payload['event']} {payload['id']}: HTTP {status} {answer}")
        self.sent[payload["event"]] += 1

    def upserts(self, count: int) -> None:
        for _ in range(count):
            entry = f"entry-{self.editor.rng.randrange(WEBHOOK_ENTRIES)}"
            self.touched.add(entry)
            self.send({"event": "upsert", "id": entry, "content": self.editor.page()})

    def delete_all(self) -> None:
        for entry in sorted(self.touched):
            self.send({"event": "delete", "id": entry})


# -- after the run ---------------------------------------------------------------------


def run_ragd(config: Path, *args: str) -> tuple[int, Any, float]:
    """Run a ragd CLI command with --json; (exit code, parsed stdout or None, seconds)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), *args, "--json"],
        capture_output=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1", RAGD_TEST_WEBHOOK_SECRET=SECRET_TEXT),
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        parsed = json.loads(done.stdout)
    except ValueError:
        parsed = None
        print(f"ragd {' '.join(args)}: {done.stderr.decode(errors='replace')[-500:]}")
    return done.returncode, parsed, seconds


def manifest_facts(data_dir: Path) -> tuple[set[str], dict[str, int]]:
    """The manifest's chunk ids, and row and page counts that explain its size.

    Read-only, once the daemon has stopped. `vectors` is the manifest's embedding cache
    (one row per embedded text); `free_pages` are pages SQLite keeps after deletes.
    """
    with sqlite3.connect(f"file:{data_dir / 'state.db'}?mode=ro", uri=True) as conn:
        ids = {row[0] for row in conn.execute("SELECT chunk_id FROM chunks")}
        facts = {
            name: int(conn.execute(sql).fetchone()[0])
            for name, sql in (
                ("documents", "SELECT count(*) FROM documents"),
                ("chunks", "SELECT count(*) FROM chunks"),
                ("vectors", "SELECT count(*) FROM vectors"),
                ("pages", "PRAGMA page_count"),
                ("free_pages", "PRAGMA freelist_count"),
                ("page_size", "PRAGMA page_size"),
            )
        }
    return ids, facts


@dataclass
class LogSummary:
    """What the daemon's JSON log says about the run."""

    levels: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)  # warning+ events by name
    examples: list[str] = field(default_factory=list)
    raw_lines: list[str] = field(default_factory=list)  # not JSON: Rust or Python stderr
    compactions: list[float] = field(default_factory=list)  # unix times of "compacted"


def read_log(path: Path) -> LogSummary:
    summary = LogSummary()
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            if line.strip():
                summary.raw_lines.append(line[:300])
            continue
        level = str(event.get("level", "?"))
        summary.levels[level] += 1
        if event.get("event") == "compacted":
            summary.compactions.append(log_time(event["timestamp"]))
        if level in ("warning", "error", "critical"):
            summary.problems[f"{level}:{event.get('event')}"] += 1
            if len(summary.examples) < 10:
                summary.examples.append(line[:400])
    return summary


def wait_for_compaction(daemon: Served, after: float, timeout: float) -> float:
    """Wait for a scheduled compaction that starts at or after unix time `after`.

    The scheduler's next run time is read once `after` has passed, so the compaction that
    follows surely cleans up every version older than cleanup_older_than at that point.
    Returns the unix time of its "compacted" log event.
    """
    time.sleep(max(0.0, after - time.time()))
    next_run = log_time(daemon.status()["daemon"]["next_jobs"]["compact"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [t for t in read_log(daemon.log_path).compactions if t >= next_run]
        if done:
            return done[0]
        time.sleep(1)
    raise RuntimeError(f"no compaction within {timeout:.0f}s after {next_run}")


# -- the run -----------------------------------------------------------------------------


def git_commit() -> str:
    """The checkout's commit, "-dirty" when tracked files have uncommitted changes."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=10"],
        capture_output=True,
        check=False,
    )
    return done.stdout.decode().strip() or "not a git checkout"


def start_daemon(
    args: argparse.Namespace, work: Path, storage: str
) -> tuple[Served, Served | None, Path, str]:
    """Copy the corpus and start `ragd serve` on it, and with --replica a `ragd serve
    --reader` beside it; (daemon, reader or None, source root, webhook source)."""
    root = work / "fastapi-docs"
    shutil.copytree(FASTAPI_DOCS, root)
    for path in root.rglob("*"):  # the shared copy is read-only; ours must be writable
        path.chmod(0o755 if path.is_dir() else 0o644)
    (work / "live").mkdir()
    webhook_source = (
        f'\n[[sources]]\nname = "{WEBHOOK_SOURCE}"\ntype = "webhook"\n'
        'secret_env = "RAGD_TEST_WEBHOOK_SECRET"\n'
    )
    schedule = (
        "[schedule]\n"
        f'compact_interval = "{args.compact_interval}"\n'
        f'cleanup_older_than = "{args.cleanup_older_than}"\n'
        f'rescan_interval = "{args.rescan_interval}"\n'
    )
    rerank = RERANK_MODEL_DIR if args.second_stage else None
    daemon = Served(
        work / "live",
        root,
        schedule=schedule,
        env={"RAGD_TEST_WEBHOOK_SECRET": SECRET_TEXT},
        extra_sources=webhook_source,
        rerank=rerank,
        sections=storage,
    )
    daemon.start().wait_ready(timeout=120)
    reader = None
    if args.replica:
        reader = Served(work / "reader", root, rerank=rerank, sections=storage, reader=True)
        reader.start().wait_ready(timeout=120)
    return daemon, reader, root, webhook_source


@dataclass
class Live:
    """What the live phase saw: load, samples, settling, compaction and the stop."""

    baseline: dict[str, Any]  # writer counters once the start-up scan was done
    initial_scan_seconds: float
    started_wall: float
    ticks: int
    load: QueryLoad
    samples: list[Sample]  # in time order, the settled and final samples included
    settled: Sample  # load stopped, queue drained: before the final compaction
    final: Sample  # after the final compaction
    drain_seconds: float
    compacted_at: float
    peak_rss_kib: int
    exit_code: int
    reader_load: QueryLoad | None  # the replica's queries (--replica)
    reader_status_calls: int
    reader_status_errors: list[str]


def run_live(
    args: argparse.Namespace, daemon: Served, reader: Served | None, editor: Editor, cms: Cms
) -> Live:
    """Drive edits and queries for --minutes, settle, wait for compaction, SIGTERM."""
    data_dir = daemon.workdir / "data"
    queries = [json.loads(line)["query"] for line in GOLD.read_text().splitlines() if line]
    ready = time.monotonic()
    baseline = daemon.wait_scanned(timeout=600)["daemon"]["writer"]
    initial_scan_seconds = time.monotonic() - ready
    started, started_wall = time.monotonic(), time.time()
    sampler = Sampler(daemon, data_dir, started, args.sample_seconds, reader)
    sampler.samples.append(take_sample(daemon, data_dir, started))
    load = QueryLoad(daemon.port, queries, args.qps)
    # The replica is asked the same questions at the same rate, through the whole run.
    reader_load = QueryLoad(reader.port, queries, args.qps) if reader is not None else None
    sampler.start()
    load.start()
    if reader_load is not None:
        reader_load.start()
    deadline = started + args.minutes * 60
    ticks = 0
    while time.monotonic() < deadline:
        tick_started = time.monotonic()
        if daemon.process is not None and daemon.process.poll() is not None:
            code = daemon.process.returncode
            raise RuntimeError(f"ragd serve exited with {code} during the soak")
        editor.tick(args.files_per_tick)
        cms.upserts(args.webhook_upserts)
        ticks += 1
        time.sleep(max(0.0, args.tick_seconds - (time.monotonic() - tick_started)))
    load.stop.set()
    cms.delete_all()  # the final sources are the folder alone, as the rebuild sees them
    last_write = time.time()
    load.join()

    time.sleep(2)  # the watcher waits 0.3 s for events to settle; then they are queued
    daemon.wait_idle(timeout=900)
    drained = time.time()  # the last write is committed by now, not at the last request
    drain_seconds = drained - last_write
    settled = take_sample(daemon, data_dir, started)
    cleanup = parse_duration(args.cleanup_older_than, key="--cleanup-older-than").total_seconds()
    compact = parse_duration(args.compact_interval, key="--compact-interval").total_seconds()
    compacted_at = wait_for_compaction(daemon, after=drained + cleanup + 1, timeout=compact + 180)
    time.sleep(2)  # let the compaction's cleanup finish deleting before we measure
    final = take_sample(daemon, data_dir, started)
    sampler.stop.set()
    sampler.join()
    if reader_load is not None:
        reader_load.stop.set()
        reader_load.join()
    _, peak_rss_kib = rss_kib(daemon.process.pid if daemon.process else 0)
    daemon.signal(signal.SIGTERM)
    exit_code = daemon.wait_exit(60)
    return Live(
        baseline=baseline,
        initial_scan_seconds=initial_scan_seconds,
        started_wall=started_wall,
        ticks=ticks,
        load=load,
        samples=sorted([*sampler.samples, settled, final], key=lambda s: s.wall),
        settled=settled,
        final=final,
        drain_seconds=drain_seconds,
        compacted_at=compacted_at,
        peak_rss_kib=peak_rss_kib,
        exit_code=exit_code,
        reader_load=reader_load,
        reader_status_calls=sampler.reader_calls,
        reader_status_errors=sampler.reader_errors,
    )


@dataclass
class Comparison:
    """The stopped incremental index against a fresh `ragd index` of the same sources."""

    stopped_disk: dict[str, int]
    rebuilt_disk: dict[str, int]
    live_status: dict[str, Any]
    live_status_rc: int
    index_rc: int
    index_report: dict[str, Any]
    index_seconds: float
    rebuilt_status: dict[str, Any]
    rebuilt_status_rc: int
    live_ids: set[str]
    rebuilt_ids: set[str]
    live_manifest: dict[str, int]
    rebuilt_manifest: dict[str, int]


def compare_with_rebuild(
    args: argparse.Namespace, daemon: Served, root: Path, webhook_source: str, rebuild_storage: str
) -> Comparison:
    """Measure the stopped daemon's data_dir, rebuild from scratch beside it, compare."""
    data_dir = daemon.workdir / "data"
    stopped_disk = disk_use(data_dir)  # the WAL is checkpointed and truncated on exit
    live_status_rc, live_status, _ = run_ragd(daemon.config, "status")
    rebuild_dir = daemon.workdir.parent / "rebuild"
    rebuild_dir.mkdir()
    rebuild_config = write_config(
        rebuild_dir,
        root,
        extra=webhook_source,
        rerank=RERANK_MODEL_DIR if args.second_stage else None,
        sections=rebuild_storage,
    )
    index_rc, index_report, index_seconds = run_ragd(rebuild_config, "index")
    rebuilt_status_rc, rebuilt_status, _ = run_ragd(rebuild_config, "status")
    live_ids, live_manifest = manifest_facts(data_dir)
    rebuilt_ids, rebuilt_manifest = manifest_facts(rebuild_dir / "data")
    return Comparison(
        stopped_disk=stopped_disk,
        rebuilt_disk=disk_use(rebuild_dir / "data"),
        live_status=live_status or {},
        live_status_rc=live_status_rc,
        index_rc=index_rc,
        index_report=index_report or {},
        index_seconds=index_seconds,
        rebuilt_status=rebuilt_status or {},
        rebuilt_status_rc=rebuilt_status_rc,
        live_ids=live_ids,
        rebuilt_ids=rebuilt_ids,
        live_manifest=live_manifest,
        rebuilt_manifest=rebuilt_manifest,
    )


def soak(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run the whole soak in `work` and return the figures; with --replica, on a real S3
    server (a replica reads what the writer publishes there)."""
    if not args.replica:
        return soak_with(args, work, storage="", rebuild_storage="")
    with running_s3_server(work / "s3") as s3:
        os.environ.update(s3.env)  # the daemons' and the CLI's processes inherit them
        bucket = s3.create_bucket("ragd-soak")
        return soak_with(
            args,
            work,
            storage=storage_section(f"{bucket}/live", "1s"),
            rebuild_storage=storage_section(f"{bucket}/rebuild", "1s"),
        )


def soak_with(
    args: argparse.Namespace, work: Path, storage: str, rebuild_storage: str
) -> dict[str, Any]:
    daemon, reader, root, webhook_source = start_daemon(args, work, storage)
    editor = Editor(root, args.seed)
    cms = Cms(daemon, editor)
    try:
        live = run_live(args, daemon, reader, editor, cms)
    finally:
        daemon.stop()  # a no-op when it exited; SIGKILL after 15 s if it hangs
        if reader is not None:
            reader.stop()
    return figures(
        args,
        live,
        compare_with_rebuild(args, daemon, root, webhook_source, rebuild_storage),
        editor,
        cms,
        read_log(daemon.log_path),
        read_log(reader.log_path) if reader is not None else None,
    )


def figures(
    args: argparse.Namespace,
    live: Live,
    c: Comparison,
    editor: Editor,
    cms: Cms,
    log: LogSummary,
    reader_log: LogSummary | None,
) -> dict[str, Any]:
    """Everything the run measured, as one JSON-able dict."""
    samples, first, settled, final = live.samples, live.samples[0], live.settled, live.final
    load_samples = [s for s in samples if s.t <= args.minutes * 60 + args.sample_seconds]
    counters_end = final if final.documents_indexed is not None else settled
    baseline = live.baseline
    applied_before = int(baseline["documents_indexed"]) + int(baseline["documents_deleted"])

    def updates(sample: Sample) -> int | None:
        if sample.documents_indexed is None or sample.documents_deleted is None:
            return None  # the status call failed
        return sample.documents_indexed + sample.documents_deleted - applied_before

    latencies = sorted(x for values in live.load.latencies.values() for x in values)

    def query_p50_ms(until: float) -> float | None:
        """The median answer time of queries answered in the minute before `until` (s)."""
        window = [
            seconds
            for at, _, seconds in live.load.answered
            if until - 60 < at - live.started_wall <= until
        ]
        return round(statistics.median(window) * 1000, 1) if window else None

    return dict(
        machine=f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB RAM, "
        f"Python {platform.python_version()}",
        load_average_end=[round(x, 2) for x in os.getloadavg()],
        commit=git_commit(),
        ragd_source=str(Path(ragd.__file__).parent),
        settings={k: v for k, v in vars(args).items() if k not in ("json", "keep", "save")},
        initial_scan_seconds=round(live.initial_scan_seconds, 1),
        drain_seconds=round(live.drain_seconds, 1),
        initial_files=editor.initial,
        final_files=len(editor.files),
        ticks=live.ticks,
        edits=dict(editor.done),
        webhook_deliveries=dict(cms.sent),
        updates_applied=updates(counters_end),
        rss_mib={
            "start": round(first.rss_mib, 1),
            "peak_sampled": round(max(s.rss_mib for s in samples), 1),
            "peak_vmhwm": round(live.peak_rss_kib / 1024, 1),
            "end": round(final.rss_mib, 1),
        },
        lancedb_versions={
            "start": first.versions,
            "peak": max((s.versions or 0) for s in samples),
            "settled_before_final_compaction": settled.versions,
            "after_final_compaction": final.versions,
        },
        compactions=compaction_effects(samples, log.compactions, live.started_wall),
        final_compaction_t=round(live.compacted_at - live.started_wall),
        disk_bytes={
            "start": first.disk,
            "peak_total": max(s.disk["total"] for s in samples),
            "settled_before_final_compaction": settled.disk,
            "after_final_compaction": final.disk,
            "after_stop": c.stopped_disk,
            "rebuild": c.rebuilt_disk,
        },
        ratio_after_compaction=round(final.disk["total"] / c.rebuilt_disk["total"], 2),
        ratio_after_stop=round(c.stopped_disk["total"] / c.rebuilt_disk["total"], 2),
        ratio_by_store_after_stop={
            k: round(c.stopped_disk[k] / c.rebuilt_disk[k], 2) if c.rebuilt_disk[k] else None
            for k in ("lancedb", "tantivy", "sqlite")
        },
        manifest={"incremental": c.live_manifest, "rebuild": c.rebuilt_manifest},
        queue_depth_max=max((s.queue_depth or 0) for s in load_samples),
        queries={
            "answered": len(latencies),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
            "max_ms": round((latencies or [0.0])[-1] * 1000, 1),
            "by_mode_p50_ms": {
                m: round(percentile(sorted(v), 0.5) * 1000, 1)
                for m, v in live.load.latencies.items()
            },
            "errors": len(live.load.errors),
            "error_examples": live.load.errors[:5],
        },
        errors={
            "exit_code_on_sigterm": live.exit_code,
            "webhook_errors": cms.errors[:5],
            "status_call_failures": sum(1 for s in samples if s.status_error),
            "status_call_examples": [
                f"t={s.t:.0f} s: {s.status_error}" for s in samples if s.status_error
            ][:5],
            "samples_with_stores_disagreeing": sum(1 for s in samples if s.stores_agree is False),
            "documents_failed": (counters_end.documents_failed or 0) - baseline["documents_failed"],
            "writer_errors": (counters_end.writer_errors or 0) - baseline["errors"],
            "log_levels": dict(log.levels),
            "log_problems": dict(log.problems),
            "log_examples": log.examples,
            "non_json_log_lines": len(log.raw_lines),
            "non_json_examples": log.raw_lines[:5],
        },
        replica=replica_figures(live, reader_log),
        final_check={
            "status_exit_code": c.live_status_rc,
            "stores_agree": c.live_status.get("stores_agree"),
            "stores": c.live_status.get("stores"),
            "failed_documents": c.live_status.get("failed"),
            "rebuild_index_exit_code": c.index_rc,
            "rebuild_index_seconds": round(c.index_seconds, 1),
            "rebuild_documents": c.index_report.get("documents"),
            "rebuild_status_exit_code": c.rebuilt_status_rc,
            "rebuild_stores_agree": c.rebuilt_status.get("stores_agree"),
            "chunks_incremental": len(c.live_ids),
            "chunks_rebuild": len(c.rebuilt_ids),
            "chunk_ids_equal": c.live_ids == c.rebuilt_ids,
            "only_incremental": sorted(c.live_ids - c.rebuilt_ids)[:5],
            "only_rebuild": sorted(c.rebuilt_ids - c.live_ids)[:5],
        },
        series=[
            {
                "t": round(s.t),
                "rss_mib": round(s.rss_mib, 1),
                "versions": s.versions,
                "lancedb_mib": round(s.disk["lancedb"] / MIB, 2),
                "total_mib": round(s.disk["total"] / MIB, 2),
                "queue": s.queue_depth,
                "updates": updates(s),
                "query_p50_ms_last_minute": query_p50_ms(s.t),
            }
            for s in samples
        ],
    )


def replica_figures(live: Live, reader_log: LogSummary | None) -> dict[str, Any] | None:
    """What the reader replica answered beside the writer (--replica), else None."""
    if live.reader_load is None or reader_log is None:
        return None
    latencies = sorted(seconds for _, _, seconds in live.reader_load.answered)
    return {
        "queries_answered": len(latencies),
        "query_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "query_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "query_errors": len(live.reader_load.errors),
        "query_error_examples": live.reader_load.errors[:5],
        "status_calls": live.reader_status_calls,
        "status_call_failures": len(live.reader_status_errors),
        "status_call_examples": live.reader_status_errors[:5],
        "log_problems": dict(reader_log.problems),
        "log_examples": reader_log.examples,
        "non_json_log_lines": len(reader_log.raw_lines),
    }


def compaction_effects(
    samples: list[Sample], compactions: list[float], started_wall: float
) -> list[dict[str, Any]]:
    """For each compaction: versions and LanceDB bytes in the samples either side of it."""
    effects: list[dict[str, Any]] = []
    for at in compactions:
        # Every compaction the log holds is listed; a side without a sample (a compaction
        # before the load started or after the last sample) says so with None.
        before = [s for s in samples if s.wall < at and s.versions is not None]
        after = [s for s in samples if s.wall > at and s.versions is not None]
        b, a = (before[-1] if before else None), (after[0] if after else None)
        effects.append(
            {
                "t": round(at - started_wall),
                "versions_before": b.versions if b else None,
                "versions_after": a.versions if a else None,
                "lancedb_mib_before": round(b.disk["lancedb"] / MIB, 2) if b else None,
                "lancedb_mib_after": round(a.disk["lancedb"] / MIB, 2) if a else None,
            }
        )
    return effects


# -- output ------------------------------------------------------------------------------


def mib(n: int) -> str:
    return f"{n / MIB:.1f}"


def print_report(r: dict[str, Any]) -> None:
    """The figures as markdown, ready for docs/soak.md."""
    d, v, q = r["disk_bytes"], r["lancedb_versions"], r["queries"]
    e, f, m = r["errors"], r["final_check"], r["manifest"]
    print(f"machine: {r['machine']}; load average at the end {r['load_average_end']}")
    print(f"commit {r['commit']} (ragd from {r['ragd_source']}); settings {r['settings']}")
    print(
        f"files {r['initial_files']} -> {r['final_files']}; {r['ticks']} ticks; edits {r['edits']};"
        f" webhooks {r['webhook_deliveries']}; initial scan {r['initial_scan_seconds']} s;"
        f" queue drained {r['drain_seconds']} s after the load stopped"
    )
    print()
    print("| figure | value |")
    print("|---|---|")
    rows = [
        ("document updates applied", r["updates_applied"]),
        ("RSS start / peak / end (MiB)",
         f"{r['rss_mib']['start']} / {r['rss_mib']['peak_vmhwm']} / {r['rss_mib']['end']}"),
        ("LanceDB versions start / peak", f"{v['start']} / {v['peak']}"),
        ("LanceDB versions settled, before / after final compaction",
         f"{v['settled_before_final_compaction']} / {v['after_final_compaction']}"),
        ("disk MiB start / peak", f"{mib(d['start']['total'])} / {mib(d['peak_total'])}"),
        ("disk MiB before / after final compaction",
         f"{mib(d['settled_before_final_compaction']['total'])} / "
         f"{mib(d['after_final_compaction']['total'])}"),
        ("  of which LanceDB / Tantivy / SQLite (after)",
         " / ".join(mib(d["after_final_compaction"][k]) for k in ("lancedb", "tantivy", "sqlite"))),
        ("fresh rebuild disk MiB (LanceDB / Tantivy / SQLite)",
         f"{mib(d['rebuild']['total'])} ("
         + " / ".join(mib(d["rebuild"][k]) for k in ("lancedb", "tantivy", "sqlite")) + ")"),
        ("disk MiB after SIGTERM (LanceDB / Tantivy / SQLite)",
         f"{mib(d['after_stop']['total'])} ("
         + " / ".join(mib(d["after_stop"][k]) for k in ("lancedb", "tantivy", "sqlite")) + ")"),
        ("ratio to rebuild, after compaction (running) / after SIGTERM (target <= 1.5)",
         f"{r['ratio_after_compaction']} / {r['ratio_after_stop']}"),
        ("ratio by store after SIGTERM (LanceDB / Tantivy / SQLite)",
         " / ".join(str(x) for x in r["ratio_by_store_after_stop"].values())),
        ("manifest rows incremental: documents / chunks / cached vectors; free pages",
         "{documents} / {chunks} / {vectors}; {free_pages} of {pages}".format(**m["incremental"])),
        ("manifest rows rebuild: documents / chunks / cached vectors; free pages",
         "{documents} / {chunks} / {vectors}; {free_pages} of {pages}".format(**m["rebuild"])),
        ("queue depth max (sampled)", r["queue_depth_max"]),
        ("queries answered; p50 / p99 / max ms",
         f"{q['answered']}; {q['p50_ms']} / {q['p99_ms']} / {q['max_ms']}"),
        ("query p50 ms by mode", q["by_mode_p50_ms"]),
        ("query errors", q["errors"]),
        ("status calls failed (of one every --sample-seconds)", e["status_call_failures"]),
        ("exit code on SIGTERM", e["exit_code_on_sigterm"]),
        ("documents failed; writer errors", f"{e['documents_failed']}; {e['writer_errors']}"),
        ("log warnings/errors", e["log_problems"] or "none"),
        ("non-JSON log lines", e["non_json_log_lines"]),
        ("samples where stores disagreed (mid-write)", e["samples_with_stores_disagreeing"]),
        ("final: stores agree (ragd status)", f["stores_agree"]),
        ("final: chunks incremental / rebuild; ids equal",
         f"{f['chunks_incremental']} / {f['chunks_rebuild']}; {f['chunk_ids_equal']}"),
        ("rebuild: ragd index seconds", f["rebuild_index_seconds"]),
    ]  # fmt: skip
    for name, value in rows:
        print(f"| {name} | {value} |")
    print()
    print(f"Compactions: {len(r['compactions'])} in the log (samples either side):")
    print("| t s | versions before -> after | LanceDB MiB before -> after |")
    print("|---|---|---|")
    for c in r["compactions"]:
        print(
            f"| {c['t']} | {c['versions_before']} -> {c['versions_after']} | "
            f"{c['lancedb_mib_before']} -> {c['lancedb_mib_after']} |"
        )
    print()
    print("Over time (about one sample a minute):")
    print(
        "| t s | updates | RSS MiB | LanceDB versions | LanceDB MiB | disk MiB | queue "
        "| query p50 ms, last minute |"
    )
    print("|---|---|---|---|---|---|---|---|")
    next_t = 0.0
    for s in r["series"]:
        if s["t"] >= next_t or s is r["series"][-1]:
            print(
                f"| {s['t']} | {s['updates']} | {s['rss_mib']} | {s['versions']} | "
                f"{s['lancedb_mib']} | {s['total_mib']} | {s['queue']} | "
                f"{s['query_p50_ms_last_minute'] or '-'} |"
            )
            next_t = s["t"] + 60
    problems = [*e["log_examples"], *e["non_json_examples"], *q["error_examples"]]
    problems += e["webhook_errors"] + e["status_call_examples"]
    if problems:
        print()
        print("First problems seen:")
        for line in problems:
            print(f"    {line}")
    if r["replica"] is not None:
        print_replica(r["replica"])
    if f["only_incremental"] or f["only_rebuild"]:
        print(f"chunk ids only incremental: {f['only_incremental']}")
        print(f"chunk ids only rebuild: {f['only_rebuild']}")


def print_replica(p: dict[str, Any]) -> None:
    print()
    print("Reader replica (`ragd serve --reader` on the same object store):")
    print("| figure | value |")
    print("|---|---|")
    print(f"| queries answered; p50 / p99 ms | {p['queries_answered']}; "
          f"{p['query_p50_ms']} / {p['query_p99_ms']} |")  # fmt: skip
    print(f"| query errors | {p['query_errors']} |")
    print(f"| status calls failed | {p['status_call_failures']} of {p['status_calls']} |")
    print(f"| log warnings/errors | {p['log_problems'] or 'none'} |")
    print(f"| non-JSON log lines | {p['non_json_log_lines']} |")
    for line in [*p["query_error_examples"], *p["status_call_examples"], *p["log_examples"]]:
        print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--tick-seconds", type=float, default=1.0)
    parser.add_argument("--files-per-tick", type=int, default=20)
    parser.add_argument("--webhook-upserts", type=int, default=2, help="per tick; 0: none")
    parser.add_argument("--qps", type=float, default=4.0)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--compact-interval", default="90s")
    parser.add_argument("--cleanup-older-than", default="60s")
    parser.add_argument("--rescan-interval", default="1h", help="the production default")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--second-stage", action="store_true", help="with the second-stage model on (re-scoring)"
    )
    parser.add_argument(
        "--replica",
        action="store_true",
        help="the index on a local S3 server (SeaweedFS) with a `ragd serve --reader` beside "
        "the writer, queried like it; LanceDB's disk is then on the object store, not counted",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--save", type=Path, help="also write the figures as JSON to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    if not MODEL_DIR.is_dir():
        sys.exit(f"the local model is missing: {MODEL_DIR}")

    work = Path(tempfile.mkdtemp(prefix="ragd-soak-"))
    try:
        result = soak(args, work)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(result, indent=2, default=str) + "\n")
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
