"""Preparing documents: read, hash, parse, chunk and embed, the part of a pass no store sees.

Owns `prepare` (one file in, one `Prepared` out; a bad file is an outcome, not an
exception) and `prepare_in_order`, which prepares many files in order and, when there
are enough to pay for starting them, on worker processes that also embed their chunks.
A pass that rewrites thousands of documents then parses and embeds on both cores while
the calling process writes. Every store write stays in the calling process, in
the same order as before. A worker's death (a parser crashing natively on one file) costs
that file, not the pass (`prepare_in_order`).
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import select
import threading
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ragd.embedding import Embedder, Matrix
from ragd.errors import DocumentError
from ragd.folders import FileContent
from ragd.identifiers import identifier_terms
from ragd.parse_guard import CRASHED, FileGuard
from ragd.parsers import UnsupportedDocument
from ragd.pipeline import Pipeline, ProcessedDocument, content_hash

# Below this many files workers cost more to start (~0.3 s of imports) than they save.
WORKER_MIN_FILES = 500
# A task is up to 64 files (its chunks are embedded in one model call, so a task must be
# big enough to batch) or 1 MiB. The workers may run ahead by up to 160 tasks and 32 MiB
# of files (one file bigger than that is a task of its own): past the largest write batch
# (ragd.batches, 8,192 documents), so they keep working while this process writes, and no
# further, so prepared documents do not pile up.
_TASK_FILES = 64
_TASK_BYTES = 1 << 20
_AHEAD_TASKS = 160
_AHEAD_BYTES = 32 << 20
# Two workers, or one on a single core. With one, on the 2-core reference machine, each
# process waited for the other about half the time (the worker tokenizing, this process
# writing): a full tldr index 23.8 s with 12 CPU-s idle; with two, 19.5-20.3 s and 3-4 s
# idle. More would add model copies (~150 MB each) for little: this process's writes are
# then the limit.
_WORKERS = min(2, len(os.sched_getaffinity(0)))
# Workers yield the CPU to the process that writes (and, in the daemon, answers queries):
# that process is the pass's one serial chain, and when it lags the workers finish first
# and it writes the last batch alone. Lower than 0, not idle: other work on the host still
# shares fairly with indexing.
_WORKER_NICENESS = 5
# A worker sends each task's documents and vectors (~150 kB) through a pipe the calling
# process drains on a thread of its own; with the default 64 kB pipe a worker waited in
# `send` for ~10% of its time whenever this process held the GIL. 1 MiB is Linux's default
# limit for unprivileged processes.
_RESULT_PIPE_BYTES = 1 << 20
# A pool whose worker dies is started again at most this often in one pass (after each
# death the files its workers were on are tried alone); then this process goes on.
_POOL_STARTS = 3


class ToPrepare(NamedTuple):
    """A file to prepare: its key, the hash its content had when last indexed, its size."""

    key: str
    known_hash: str | None
    size: int


Reader = Callable[[str], FileContent]


# No slots: a slotted frozen dataclass unpickles through dataclasses' __setstate__,
# which looks up its fields per object, 2.7x slower than a plain __dict__; every
# prepared document and chunk crosses the pipe from a worker. eq=False: vectors
# are arrays, compare fields.
@dataclass(frozen=True, eq=False)
class Prepared:
    """What a file became. `size` is None when it could not be read (`error` says why);
    `processed` is None when its content hashed to the known hash, or when it cannot be
    parsed (`error` set). `vectors` (one row per chunk) and `identifiers` (each chunk's
    identifier terms, joined) when a worker prepared it."""

    size: int | None
    mtime_ns: int | None
    digest: str | None
    processed: ProcessedDocument | None
    error: str | None
    vectors: Matrix | None = None
    identifiers: tuple[str, ...] | None = None


def prepare(
    key: str,
    known_hash: str | None,
    pipeline: Pipeline,
    read: Reader,
    guard: FileGuard | None = None,
) -> Prepared:
    """Read, hash and (unless the content hashes to `known_hash`) parse and chunk one file,
    the parse inside `guard` when given (ragd.parse_guard)."""
    try:
        content = read(key)
    except DocumentError as exc:
        return Prepared(None, None, None, None, exc.message)
    digest = content_hash(content.data)
    if digest == known_hash:
        return Prepared(content.size, content.mtime_ns, digest, None, None)
    try:
        with nullcontext() if guard is None else guard(key, content, digest):
            processed = pipeline.process(content.data, key)
    except UnsupportedDocument as exc:
        return Prepared(content.size, content.mtime_ns, digest, None, exc.reason)
    return Prepared(content.size, content.mtime_ns, digest, processed, None)


# Each worker's pipeline and embedder, sent once when it starts (its model loads once),
# and the pool's `busy` array: per task, the number of the file being prepared (-1 before,
# -2 after), so that when a worker dies the pool's owner reads what was in hand.
_worker: tuple[Pipeline, Embedder] | None = None
_busy: Any = None


def _start_worker(pipeline: Pipeline, embedder: Embedder, caller: int, busy: Any) -> None:
    global _worker, _busy  # one per worker process, set by its initializer
    _worker, _busy = (pipeline, embedder), busy
    _exit_with(caller)
    # One worker per core already: a tokenizer thread pool per worker only adds threads
    # that spin while they wait. In 7 paired full tldr indexes this had less idle CPU in
    # all 7 and finished first in 5.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.nice(_WORKER_NICENESS)


def _exit_with(caller: int) -> None:
    """End this worker as soon as the process that started it is gone, however it died.

    A worker waits for tasks on a queue whose writing end it also holds, and it keeps the
    fork server alive: when the caller is killed (SIGKILL, the OOM killer), both would
    otherwise live on, each worker holding a model. A pidfd becomes readable when the
    caller exits; on a kernel without pidfds (before Linux 5.3) the worker is not watched.
    """
    try:
        watched = os.pidfd_open(caller)
    except ProcessLookupError:
        os._exit(1)  # the caller died before this worker started
    except (AttributeError, OSError):
        return

    def wait() -> None:
        select.select([watched], [], [])
        os._exit(1)  # nothing left to report to; skip interpreter teardown

    threading.Thread(target=wait, name="watch-caller", daemon=True).start()


def _prepare_task(
    index: int, files: Sequence[tuple[int, ToPrepare]], read: Reader
) -> list[Prepared]:
    """In the worker: prepare task `index`'s numbered files, embed all their chunks in one
    call, and find their identifier terms (the keyword store's extra field) while here."""
    assert _worker is not None and _busy is not None, "the worker's initializer did not run"
    pipeline, embedder = _worker
    prepared = []
    for number, f in files:
        _busy[index] = number
        prepared.append(prepare(f.key, f.known_hash, pipeline, read))
    _busy[index] = -2
    texts = list(
        dict.fromkeys(c.embed_text for p in prepared if p.processed for c in p.processed.chunks)
    )
    if not texts:
        return prepared
    matrix = embedder.embed(texts)
    row = {text: n for n, text in enumerate(texts)}
    return [
        replace(
            p,
            vectors=matrix[[row[c.embed_text] for c in p.processed.chunks]],
            identifiers=tuple(" ".join(identifier_terms(c.embed_text)) for c in p.processed.chunks),
        )
        if p.processed
        else p
        for p in prepared
    ]


def prepare_in_order(
    files: Sequence[ToPrepare],
    pipeline: Pipeline,
    *,
    read: Reader,
    worker: tuple[Reader, Embedder] | None = None,
    min_files: int = WORKER_MIN_FILES,
    guard: FileGuard | None = None,
) -> Generator[Prepared, None, None]:
    """`prepare` for each file, yielded in order.

    With `worker` (a picklable reader and embedder) and at least `min_files` files,
    worker processes prepare and embed them ahead of the caller (chunks the caller has
    cached are embedded anyway: on the other core that costs less than asking). When a
    worker dies, each file a worker was preparing then is prepared again by a worker of
    its own; a file that kills that one too is failed, read and hashed here but not
    parsed, and a new pool goes on. If no pool can start, or pools keep dying, the rest is
    prepared here, with `read`, unembedded, parsed inside `guard`. Closing the generator
    early cancels what the workers have not begun.
    """
    if worker is None or len(files) < min_files:
        for f in files:
            yield prepare(f.key, f.known_hash, pipeline, read, guard)
        return
    decided: dict[int, Prepared] = {}  # files that were prepared alone, by number
    start = 0
    for _ in range(_POOL_STARTS):
        broken = yield from _on_workers(files, start, decided, pipeline, worker)
        if broken is None:
            return
        start, suspects = broken
        if suspects is None:
            break  # no worker could start
        for number in suspects:
            if number >= start and number not in decided:
                decided[number] = _alone(number, files[number], pipeline, worker, read, guard)
    for number in range(start, len(files)):
        f = files[number]
        if number in decided:
            yield decided.pop(number)
        else:
            yield prepare(f.key, f.known_hash, pipeline, read, guard)


def _pool(
    pipeline: Pipeline, embedder: Embedder, workers: int, tasks: int
) -> tuple[ProcessPoolExecutor, Any]:
    """A pool of `workers` for `tasks` tasks, and the array where they note their files."""
    # forkserver: the caller may hold threads (Tantivy, LanceDB) a plain fork would copy.
    context = multiprocessing.get_context("forkserver")
    # The fork server imports what a worker runs once, and each worker is forked with it
    # (it only applies when the server starts, on this process's first pool). The server
    # lives as long as this process and then holds 41 MiB instead of 13.
    context.set_forkserver_preload([__name__])
    busy = context.Array("q", [-1] * tasks, lock=False)  # one writer per element: no lock
    pool = ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(pipeline, embedder, os.getpid(), busy),
    )
    return pool, busy


def _on_workers(
    files: Sequence[ToPrepare],
    start: int,
    decided: dict[int, Prepared],
    pipeline: Pipeline,
    worker: tuple[Reader, Embedder],
) -> Generator[Prepared, None, tuple[int, list[int] | None] | None]:
    """Yield files[start:] in order, the `decided` ones as they are and the rest from one
    pool of workers. None when all were yielded; if the pool broke, the number of the first
    file not yielded and the numbers of the files its workers were on (None: it never ran)."""
    worker_read, embedder = worker
    tasks = _tasks([(n, files[n]) for n in range(start, len(files)) if n not in decided])
    pool, busy = _pool(pipeline, embedder, _WORKERS, len(tasks))
    following = start  # the number of the next file to yield
    with pool:
        _widen_result_pipe(pool)
        pending: deque[tuple[Future[list[Prepared]], int, list[int]]] = deque()
        ahead = 0  # bytes of the pending tasks' files
        submitted = 0
        try:
            for _ in range(len(tasks)):
                try:
                    while submitted < len(tasks) and (
                        not pending or (len(pending) < _AHEAD_TASKS and ahead < _AHEAD_BYTES)
                    ):
                        task = tasks[submitted]
                        size = sum(f.size for _, f in task)
                        future = pool.submit(_prepare_task, submitted, task, worker_read)
                        pending.append((future, size, [n for n, _ in task]))
                        ahead += size
                        submitted += 1
                    future, size, numbers = pending.popleft()
                    ahead -= size
                    results = future.result()
                except (BrokenProcessPool, OSError) as exc:
                    pending.clear()  # their futures hold the error, and it holds this frame
                    if isinstance(exc, OSError):  # no worker could start (no /tmp, limits)
                        return following, None
                    return following, [n for n in busy if n >= 0]  # one died
                for number, prepared in zip(numbers, results, strict=True):
                    for earlier in range(following, number):
                        yield decided.pop(earlier)
                    yield prepared
                    following = number + 1
            for earlier in range(following, len(files)):
                yield decided.pop(earlier)
            return None
        finally:
            for future, _, _ in pending:
                future.cancel()


def _alone(
    number: int,
    f: ToPrepare,
    pipeline: Pipeline,
    worker: tuple[Reader, Embedder],
    read: Reader,
    guard: FileGuard | None,
) -> Prepared:
    """`f` prepared by a worker of its own. If that one dies too, the file is what kills
    it: read and hashed here, not parsed, and failed, so this content is not parsed again."""
    worker_read, embedder = worker
    try:
        pool, _ = _pool(pipeline, embedder, 1, 1)
        with pool:
            return pool.submit(_prepare_task, 0, [(number, f)], worker_read).result()[0]
    except BrokenProcessPool:
        pass
    except OSError:
        return prepare(f.key, f.known_hash, pipeline, read, guard)
    try:
        content = read(f.key)
    except DocumentError as exc:
        return Prepared(None, None, None, None, exc.message)
    return Prepared(content.size, content.mtime_ns, content_hash(content.data), None, CRASHED)


def _widen_result_pipe(pool: ProcessPoolExecutor) -> None:
    """Let a task's results fit the pipe whole, so a worker goes on to its next task.

    The pipe belongs to the executor (a private attribute, stable since Python 3.3); on
    another Python, or where the size is refused, the default pipe still works.
    """
    reader = getattr(getattr(pool, "_result_queue", None), "_reader", None)
    if reader is not None:
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(reader.fileno(), fcntl.F_SETPIPE_SZ, _RESULT_PIPE_BYTES)


def _tasks(files: Sequence[tuple[int, ToPrepare]]) -> list[list[tuple[int, ToPrepare]]]:
    """Numbered files cut into tasks of at most `_TASK_FILES` files or about `_TASK_BYTES`."""
    tasks: list[list[tuple[int, ToPrepare]]] = []
    task: list[tuple[int, ToPrepare]] = []
    size = 0
    for numbered in files:
        f = numbered[1]
        if task and (len(task) == _TASK_FILES or size + f.size > _TASK_BYTES):
            tasks.append(task)
            task, size = [], 0
        task.append(numbered)
        size += f.size
    if task:
        tasks.append(task)
    return tasks
