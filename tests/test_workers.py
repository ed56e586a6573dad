"""Preparing a pass's files on worker processes: the same outcomes, crashes survived."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.indexing.parse_guard import CRASHED
from ragd.indexing.preparing import TaskShape
from ragd.indexing.workers import WORKER_NICENESS, Workers, prepare_in_order
from ragd.sources.folders import FileContent, FileReader
from tests.conftest import FakeEmbedder
from tests.test_preparing import PIPELINE, fields, files_of, page_root


@dataclass(frozen=True)
class DiesInWorker:
    """Reads like FileReader, but a worker process that reads `fatal` dies on the spot;
    with `once` (a flag file's path), only the first one does."""

    reader: FileReader
    fatal: str
    parent: int
    once: str | None = None

    def __call__(self, key: str) -> FileContent:
        if key == self.fatal and os.getpid() != self.parent:
            if self.once is None:
                os._exit(3)
            if not os.path.exists(self.once):
                Path(self.once).touch()
                os._exit(3)
        return self.reader(key)


@dataclass(frozen=True)
class RecordsReaders:
    """Reads like FileReader, after `delay` seconds, and notes the pid and niceness of each
    process that reads."""

    reader: FileReader
    log: str
    delay: float = 0.0

    def __call__(self, key: str) -> FileContent:
        with open(self.log, "a") as log:
            log.write(f"{os.getpid()} {os.nice(0)}\n")
        time.sleep(self.delay)
        return self.reader(key)


# Run by a child process, which the test kills while its workers are busy.
_KILLED_CALLER = """
import sys
from pathlib import Path
from ragd.indexing.workers import Workers, prepare_in_order
from ragd.sources.folders import FileReader
from tests.conftest import FakeEmbedder
from tests.test_preparing import PIPELINE, files_of
from tests.test_workers import RecordsReaders
root, log = Path(sys.argv[1]), sys.argv[2]
reader = RecordsReaders(FileReader(str(root), 1000), log, delay=0.05)
workers = Workers(reader, FakeEmbedder())
prepared = prepare_in_order(files_of(root), PIPELINE, read=reader, workers=workers, min_files=1)
next(prepared)
print("working", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return page_root(tmp_path)


def test_workers_prepare_exactly_what_this_process_would_in_order(root: Path) -> None:
    read = FileReader(str(root), 1000)
    here = list(prepare_in_order(files_of(root), PIPELINE, read=read))

    there = list(
        prepare_in_order(
            files_of(root), PIPELINE, read=read, workers=Workers(read, FakeEmbedder()), min_files=1
        )
    )

    assert fields(there) == fields(here)
    assert [p.processed is not None for p in there].count(True) == 40


def test_workers_embed_every_chunk_and_this_process_embeds_none(root: Path) -> None:
    read = FileReader(str(root), 1000)
    workers = Workers(read, FakeEmbedder())

    there = list(
        prepare_in_order(files_of(root), PIPELINE, read=read, workers=workers, min_files=1)
    )
    here = list(prepare_in_order(files_of(root), PIPELINE, read=read, workers=workers))

    assert all(c.vector is not None for p in there if p.processed for c in p.processed.chunks)
    assert all(c.vector is None for p in here if p.processed for c in p.processed.chunks)


@pytest.mark.parametrize(
    ("task_files", "ahead", "fatal"),
    [(64, 48, "page-05.md"), (3, 2, "page-31.md")],
    ids=["in-the-only-task", "in-task-11-of-14"],
)
def test_a_file_that_kills_every_worker_is_failed_and_the_rest_go_on(
    root: Path, monkeypatch: pytest.MonkeyPatch, task_files: int, ahead: int, fatal: str
) -> None:
    shape = TaskShape(files=task_files, bytes=1 << 20, ahead_tasks=ahead, ahead_bytes=32 << 20)
    monkeypatch.setattr("ragd.indexing.workers.ON_WORKERS", shape)
    read = FileReader(str(root), 1000)
    dying = DiesInWorker(read, fatal=fatal, parent=os.getpid())
    files = files_of(root)
    here = list(prepare_in_order(files, PIPELINE, read=read))

    there = list(
        prepare_in_order(
            files, PIPELINE, read=dying, workers=Workers(dying, FakeEmbedder()), min_files=1
        )
    )

    at = [f[0] for f in files].index(fatal)
    failed = there[at]
    assert (failed.size, failed.mtime_ns, failed.digest) == (
        here[at].size,
        here[at].mtime_ns,
        here[at].digest,
    )
    assert (failed.processed, failed.error) == (None, CRASHED)
    assert fields(there[:at] + there[at + 1 :]) == fields(here[:at] + here[at + 1 :])
    last = there[-1].processed
    assert last is not None and last.chunks[0].vector is not None  # a new pool did the rest


def test_a_worker_that_died_once_costs_no_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shape = TaskShape(files=3, bytes=1 << 20, ahead_tasks=160, ahead_bytes=32 << 20)
    monkeypatch.setattr("ragd.indexing.workers.ON_WORKERS", shape)
    read = FileReader(str(root), 1000)
    dying = DiesInWorker(read, "page-20.md", os.getpid(), once=str(tmp_path / "died"))
    here = list(prepare_in_order(files_of(root), PIPELINE, read=read))

    there = list(
        prepare_in_order(
            files_of(root),
            PIPELINE,
            read=dying,
            workers=Workers(dying, FakeEmbedder()),
            min_files=1,
        )
    )

    assert (tmp_path / "died").exists()
    assert fields(there) == fields(here)
    # Every file came from a worker: its chunks were embedded there.
    assert all(c.vector is not None for p in there if p.processed for c in p.processed.chunks)


class _CannotStart:
    """A process pool whose worker cannot be started (as when /tmp is not writable)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> _CannotStart:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, *args: object) -> None:
        raise OSError(28, "No space left on device")


def test_this_process_prepares_everything_when_no_worker_can_start(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = FileReader(str(root), 1000)
    here = list(prepare_in_order(files_of(root), PIPELINE, read=read))
    monkeypatch.setattr("ragd.indexing.workers.ProcessPoolExecutor", _CannotStart)

    there = list(
        prepare_in_order(
            files_of(root), PIPELINE, read=read, workers=Workers(read, FakeEmbedder()), min_files=1
        )
    )

    assert fields(there) == fields(here)


def test_workers_yield_the_cpu_to_the_process_that_writes(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "niceness.log"
    reader = RecordsReaders(FileReader(str(root), 1000), str(log))
    prepared = list(
        prepare_in_order(
            files_of(root),
            PIPELINE,
            read=reader,
            workers=Workers(reader, FakeEmbedder()),
            min_files=1,
        )
    )

    assert len(prepared) == 41
    readers = {tuple(map(int, line.split())) for line in log.read_text().splitlines()}
    assert {pid for pid, _ in readers} != {os.getpid()}
    assert {nice for _, nice in readers} == {min(os.nice(0) + WORKER_NICENESS, 19)}


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_exit_when_the_process_that_started_them_is_killed(
    root: Path, tmp_path: Path
) -> None:
    log = tmp_path / "readers.log"
    workers: set[int] = set()
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_CALLER, str(root), str(log)],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as caller:
        try:
            assert caller.stdout is not None and caller.stdout.readline() == b"working\n"
            workers = {int(line.split()[0]) for line in log.read_text().splitlines()} - {caller.pid}
            assert workers

            caller.kill()
            caller.wait()

            deadline = time.monotonic() + 10
            while any(map(_running, workers)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(map(_running, workers))
        finally:
            caller.kill()
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
