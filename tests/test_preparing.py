"""Preparing files (read, hash, parse, chunk), in this process and on a worker process."""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ragd.chunking import ChunkSettings
from ragd.folders import FileContent, FileReader
from ragd.identifiers import identifier_terms
from ragd.parse_guard import CRASHED
from ragd.pipeline import Pipeline, content_hash
from ragd.preparing import (
    Prepared,
    ToPrepare,
    _tasks,
    _widen_result_pipe,
    prepare,
    prepare_in_order,
)
from tests.conftest import FakeEmbedder

PIPELINE = Pipeline(ChunkSettings(300, 40), "fake-model")
PAGE = (
    "# Title\n\nSome text about {n} and status_code.\n\n## Part\n\nMore about {n}: HTTPException.\n"
)


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
from ragd.folders import FileReader
from ragd.preparing import ToPrepare, prepare_in_order
from tests.conftest import FakeEmbedder
from tests.test_preparing import PIPELINE, RecordsReaders
root, log = Path(sys.argv[1]), sys.argv[2]
files = [ToPrepare(p.name, None, p.stat().st_size) for p in sorted(root.iterdir())]
reader = RecordsReaders(FileReader(str(root), 1000), log, delay=0.05)
worker = (reader, FakeEmbedder())
prepared = prepare_in_order(files, PIPELINE, read=reader, worker=worker, min_files=1)
next(prepared)
print("working", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for n in range(40):
        (tmp_path / f"page-{n:02}.md").write_text(PAGE.format(n=n))
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    return tmp_path


def _files(root: Path) -> list[ToPrepare]:
    return [ToPrepare(path.name, None, path.stat().st_size) for path in sorted(root.iterdir())]


def _fields(prepared: list[Prepared]) -> list[tuple[object, ...]]:
    return [(p.size, p.mtime_ns, p.digest, p.processed, p.error) for p in prepared]


def test_a_file_that_cannot_be_read_is_an_outcome_with_a_reason(root: Path) -> None:
    prepared = prepare("missing.md", None, PIPELINE, FileReader(str(root), 1000))

    assert prepared.size is None
    assert prepared.error == "file vanished before it could be read"


def test_a_file_that_cannot_be_parsed_keeps_its_stat_and_hash(root: Path) -> None:
    prepared = prepare("binary.md", None, PIPELINE, FileReader(str(root), 1000))

    assert prepared.size == (root / "binary.md").stat().st_size
    assert prepared.digest == content_hash((root / "binary.md").read_bytes())
    assert prepared.processed is None
    assert prepared.error


def test_content_with_the_known_hash_is_not_parsed(root: Path) -> None:
    known = content_hash((root / "page-01.md").read_bytes())

    prepared = prepare("page-01.md", known, PIPELINE, FileReader(str(root), 1000))

    assert prepared.digest == known
    assert prepared.processed is None
    assert prepared.error is None


def test_a_worker_prepares_exactly_what_this_process_would_in_order(root: Path) -> None:
    read = FileReader(str(root), 1000)
    here = list(prepare_in_order(_files(root), PIPELINE, read=read))

    there = list(
        prepare_in_order(
            _files(root), PIPELINE, read=read, worker=(read, FakeEmbedder()), min_files=1
        )
    )

    assert _fields(there) == _fields(here)
    assert [p.processed is not None for p in there].count(True) == 40


def test_a_worker_embeds_each_chunk_as_this_process_would(root: Path) -> None:
    read = FileReader(str(root), 1000)
    embedder = FakeEmbedder()

    there = list(
        prepare_in_order(_files(root), PIPELINE, read=read, worker=(read, embedder), min_files=1)
    )

    for prepared in there:
        if prepared.processed is None:
            assert prepared.vectors is None
            continue
        texts = [c.embed_text for c in prepared.processed.chunks]
        assert prepared.vectors is not None
        np.testing.assert_allclose(prepared.vectors, embedder.embed(texts), atol=1e-6)


@pytest.mark.parametrize(
    ("task_files", "ahead", "fatal"),
    [(64, 48, "page-05.md"), (3, 2, "page-31.md")],
    ids=["in-the-only-task", "in-task-11-of-14"],
)
def test_a_file_that_kills_every_worker_is_failed_and_the_rest_go_on(
    root: Path, monkeypatch: pytest.MonkeyPatch, task_files: int, ahead: int, fatal: str
) -> None:
    monkeypatch.setattr("ragd.preparing._TASK_FILES", task_files)
    monkeypatch.setattr("ragd.preparing._AHEAD_TASKS", ahead)
    read = FileReader(str(root), 1000)
    dying = DiesInWorker(read, fatal=fatal, parent=os.getpid())
    files = _files(root)
    here = list(prepare_in_order(files, PIPELINE, read=read))

    there = list(
        prepare_in_order(files, PIPELINE, read=dying, worker=(dying, FakeEmbedder()), min_files=1)
    )

    at = [f.key for f in files].index(fatal)
    failed = there[at]
    assert (failed.size, failed.mtime_ns, failed.digest) == (
        here[at].size,
        here[at].mtime_ns,
        here[at].digest,
    )
    assert (failed.processed, failed.error) == (None, CRASHED)
    assert _fields(there[:at] + there[at + 1 :]) == _fields(here[:at] + here[at + 1 :])
    assert there[-1].vectors is not None  # a new pool prepared the files after it


def test_a_worker_that_died_once_costs_no_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragd.preparing._TASK_FILES", 3)
    read = FileReader(str(root), 1000)
    dying = DiesInWorker(read, "page-20.md", os.getpid(), once=str(tmp_path / "died"))
    here = list(prepare_in_order(_files(root), PIPELINE, read=read))

    there = list(
        prepare_in_order(
            _files(root), PIPELINE, read=dying, worker=(dying, FakeEmbedder()), min_files=1
        )
    )

    assert (tmp_path / "died").exists()
    assert _fields(there) == _fields(here)
    assert all(p.vectors is not None for p in there if p.processed)  # all from workers


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
    here = list(prepare_in_order(_files(root), PIPELINE, read=read))
    monkeypatch.setattr("ragd.preparing.ProcessPoolExecutor", _CannotStart)

    there = list(
        prepare_in_order(
            _files(root), PIPELINE, read=read, worker=(read, FakeEmbedder()), min_files=1
        )
    )

    assert _fields(there) == _fields(here)


def test_tasks_hold_at_most_64_files_or_about_a_mebibyte() -> None:
    small = [ToPrepare(f"s{n}.md", None, 100) for n in range(130)]
    big = [ToPrepare(f"b{n}.md", None, 600_000) for n in range(3)]

    numbered = list(enumerate(small + big))

    tasks = _tasks(numbered)

    assert [len(t) for t in tasks] == [64, 64, 3, 1, 1]
    assert [f for t in tasks for f in t] == numbered


def test_a_worker_finds_each_chunks_identifier_terms(root: Path) -> None:
    read = FileReader(str(root), 1000)

    there = list(
        prepare_in_order(
            _files(root), PIPELINE, read=read, worker=(read, FakeEmbedder()), min_files=1
        )
    )

    for p in there:
        if p.processed is None:
            assert p.identifiers is None
            continue
        expected = [" ".join(identifier_terms(c.embed_text)) for c in p.processed.chunks]
        assert list(p.identifiers or ()) == expected
    assert any("status_code" in terms for p in there for terms in p.identifiers or ())


def test_workers_yield_the_cpu_to_the_process_that_writes(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "niceness.log"
    reader = RecordsReaders(FileReader(str(root), 1000), str(log))
    prepared = list(
        prepare_in_order(
            _files(root), PIPELINE, read=reader, worker=(reader, FakeEmbedder()), min_files=1
        )
    )

    assert len(prepared) == 41
    readers = {tuple(map(int, line.split())) for line in log.read_text().splitlines()}
    assert {pid for pid, _ in readers} != {os.getpid()}
    assert {nice for _, nice in readers} == {min(os.nice(0) + 5, 19)}


def test_a_tasks_results_fit_the_result_pipe_whole() -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        _widen_result_pipe(pool)
        reader = pool._result_queue._reader  # type: ignore[attr-defined]  # the executor's own (private) result pipe
        assert fcntl.fcntl(reader.fileno(), fcntl.F_GETPIPE_SZ) == 1 << 20


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
