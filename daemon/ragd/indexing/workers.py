"""Worker processes for big passes: `prepare_task` on both cores while the writer writes.

Owns `prepare_in_order`, which prepares a pass's files in order: in the writer's own
process, one file at a time, for small passes; on a pool of worker processes, which also
embed their chunks, once there are enough files to pay for starting them. A pass that
rewrites thousands of documents then parses and embeds on both cores while the calling
process writes; every store write stays in the calling process, in the same order. A
worker's death (a parser crashing natively on one file) costs that file, not the pass.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import select
import threading
from collections.abc import Generator, Sequence
from concurrent.futures import Future, InvalidStateError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory
from typing import Any

from ragd.embedding import Embedder
from ragd.errors import DocumentError
from ragd.indexing.parse_guard import CRASHED, FileGuard
from ragd.indexing.pipeline import Pipeline
from ragd.indexing.preparing import (
    ONE_AT_A_TIME,
    InProcess,
    Prepared,
    Reader,
    TaskShape,
    ToPrepare,
    in_order,
    prepare,
    prepare_task,
    tasks_of,
)
from ragd.sources.includes import IncludeRoot
from ragd.stores.records import content_hash

# Below this many files workers cost more to start (~0.3 s of imports) than they save.
WORKER_MIN_FILES = 500
# A task is up to 64 files (its chunks are embedded in one model call, so a task must be
# big enough to batch) or 1 MiB. The workers may run ahead by up to 160 tasks and 32 MiB
# of files (one file bigger than that is a task of its own): past the largest write batch
# (ragd.indexing.batches, 8,192 documents), so they keep working while this process
# writes, and no further, so prepared documents do not pile up.
ON_WORKERS = TaskShape(files=64, bytes=1 << 20, ahead_tasks=160, ahead_bytes=32 << 20)
# Workers yield the CPU to the process that writes (and, in the daemon, answers queries):
# that process is the pass's one serial chain, and when it lags the workers finish first
# and it writes the last batch alone. Lower than 0, not idle: other work on the host still
# shares fairly with indexing.
WORKER_NICENESS = 5
# A pool whose worker dies is started again at most this often in one pass (after each
# death the files its workers were on are tried alone); then this process goes on.
POOL_STARTS = 3


def worker_count() -> int:
    """Two workers, or one on a single core.

    With one, on a 2-core machine, each process waited for the other about half the time
    (the worker tokenizing, this process writing). More would add model copies (~150 MB
    each) for little: this process's writes are then the limit.
    """
    return min(2, len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class Workers:
    """What worker processes need: a picklable reader of the source and the embedder."""

    read: Reader
    embedder: Embedder
    includes: IncludeRoot | None = None  # where the source's includes are read


def prepare_in_order(
    files: Sequence[ToPrepare],
    pipeline: Pipeline,
    *,
    read: Reader,
    workers: Workers | None = None,
    min_files: int = WORKER_MIN_FILES,
    guard: FileGuard | None = None,
) -> Generator[Prepared, None, None]:
    """`prepare` for each file, yielded in order.

    With `workers` and at least `min_files` files, worker processes prepare and embed them
    ahead of the caller (chunks the caller has cached are embedded anyway: on the other
    core that costs less than asking). When a worker dies, each file a worker was preparing
    then is prepared again by a worker of its own; a file that kills that one too is
    failed, read and hashed here but not parsed, and a new pool goes on. If no pool can
    start, or pools keep dying, the rest is prepared here, with `read`, unembedded, parsed
    inside `guard`. Closing the generator early cancels what the workers have not begun.
    """
    start = 0
    decided: dict[int, Prepared] = {}  # files that were prepared alone, by number
    if workers is not None and len(files) >= min_files:
        for _ in range(POOL_STARTS):
            broken = yield from _on_workers(files, start, decided, pipeline, workers)
            if broken is None:
                return
            start, suspects = broken
            if suspects is None:
                break  # no worker could start
            for number in suspects:
                if number >= start and number not in decided:
                    decided[number] = _alone(number, files[number], pipeline, workers, read, guard)
    includes = None if workers is None else workers.includes
    rest = [(n, files[n]) for n in range(start, len(files)) if n not in decided]
    here = InProcess()

    def submit(index: int, task: list[tuple[int, ToPrepare]]) -> Future[list[Prepared]]:
        return here.submit(
            prepare_task, [f for _, f in task], pipeline, read, guard=guard, includes=includes
        )

    following = start
    for number, prepared in in_order(tasks_of(rest, ONE_AT_A_TIME), submit, ONE_AT_A_TIME):
        for earlier in range(following, number):
            yield decided.pop(earlier)
        yield prepared
        following = number + 1
    for earlier in range(following, len(files)):
        yield decided.pop(earlier)


# -- inside a worker process ------------------------------------------------------------

# Each worker's pipeline and embedder, sent once when it starts (its model loads once),
# and the pool's `busy` array: per task, the number of the file being prepared (-1 before,
# -2 after), so that when a worker dies the pool's owner reads what was in hand.
_worker: tuple[Pipeline, Embedder, Any] | None = None


def _start_worker(pipeline: Pipeline, embedder: Embedder, caller: int, busy: Any) -> None:
    global _worker  # one per worker process, set by its initializer
    _worker = (pipeline, embedder, busy)
    _exit_with(caller)
    # One worker per core already: a tokenizer thread pool per worker only adds threads
    # that spin while they wait.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.nice(WORKER_NICENESS)


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


def _worker_task(
    index: int,
    files: Sequence[tuple[int, ToPrepare]],
    read: Reader,
    includes: IncludeRoot | None,
) -> tuple[str, int]:
    """In the worker: `prepare_task` on task `index`'s numbered files, with embedding,
    noting in the pool's array which file it is on; the results go out by `_ship`."""
    assert _worker is not None, "the worker's initializer did not run"
    pipeline, embedder, busy = _worker

    def on_file(n: int) -> None:
        busy[index] = files[n][0]

    prepared = prepare_task(
        [f for _, f in files],
        pipeline,
        read,
        embedder=embedder,
        on_file=on_file,
        includes=includes,
    )
    busy[index] = -2
    return _ship(prepared)


def _ship(prepared: list[Prepared]) -> tuple[str, int]:
    """A task's results, pickled into a shared memory block for the caller to read and
    free; the executor's pipe then carries only the block's name and size.

    A task's results (~150 kB: its chunks' texts and vectors) do not fit the executor's
    64 kB result pipe. Sent through it, a worker waits in `send` until the calling
    process's result thread drains the pipe, and that thread waits for the GIL while the
    calling process writes the stores: the workers then sat idle for a tenth of a pass.
    """
    # Protocol 4: under 5, each unpickled vector would keep a view of the whole pickle
    # alive (two more objects per chunk for the cycle collector, and the bytes held).
    data = pickle.dumps(prepared, protocol=4)
    block = SharedMemory(create=True, size=max(1, len(data)))
    try:
        assert block.buf is not None  # None only once closed
        block.buf[: len(data)] = data
        return block.name, len(data)
    finally:
        block.close()


def _unship(name: str, size: int) -> list[Prepared]:
    """The results in the block `_ship` filled; the block is freed."""
    block = SharedMemory(name=name)
    try:
        assert block.buf is not None  # None only once closed
        data = bytes(block.buf[:size])
    finally:
        block.close()
        block.unlink()
    prepared: list[Prepared] = pickle.loads(data)  # noqa: S301 - our own worker's bytes
    return prepared


# -- in the calling process -------------------------------------------------------------


def _submit(
    pool: ProcessPoolExecutor, index: int, task: list[tuple[int, ToPrepare]], workers: Workers
) -> Future[list[Prepared]]:
    """Run task `index` on the pool; the future holds its results, already received (so
    a finished task's block is freed even if nobody asks for the results)."""
    results: Future[list[Prepared]] = Future()
    running = pool.submit(_worker_task, index, task, workers.read, workers.includes)

    def received(done: Future[tuple[str, int]]) -> None:
        if done.cancelled():
            results.cancel()
            return
        error = done.exception()
        with contextlib.suppress(InvalidStateError):  # `results` was cancelled meanwhile
            if error is not None:
                results.set_exception(error)
            else:
                results.set_result(_unship(*done.result()))

    running.add_done_callback(received)
    results.add_done_callback(lambda f: running.cancel() if f.cancelled() else None)
    return results


def _pool(
    pipeline: Pipeline, embedder: Embedder, workers: int, tasks: int
) -> tuple[ProcessPoolExecutor, Any]:
    """A pool of `workers` for `tasks` tasks, and the array where they note their files."""
    # forkserver: the caller may hold threads (Tantivy, LanceDB) a plain fork would copy.
    context = multiprocessing.get_context("forkserver")
    # The fork server imports what a worker runs once, and each worker is forked with it
    # (it only applies when the server starts, on this process's first pool).
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
    workers: Workers,
) -> Generator[Prepared, None, tuple[int, list[int] | None] | None]:
    """Yield files[start:] in order, the `decided` ones as they are and the rest from one
    pool of workers. None when all were yielded; if the pool broke, the number of the first
    file not yielded and the numbers of the files its workers were on (None: it never ran)."""
    tasks = tasks_of(
        [(n, files[n]) for n in range(start, len(files)) if n not in decided], ON_WORKERS
    )
    pool, busy = _pool(pipeline, workers.embedder, worker_count(), len(tasks))
    following = start  # the number of the next file to yield

    def submit(index: int, task: list[tuple[int, ToPrepare]]) -> Future[list[Prepared]]:
        return _submit(pool, index, task, workers)

    with pool:
        ready = in_order(tasks, submit, ON_WORKERS)
        try:
            for number, prepared in ready:
                for earlier in range(following, number):
                    yield decided.pop(earlier)
                yield prepared
                following = number + 1
        except OSError:  # no worker could start (no /tmp, process limits)
            return following, None
        except BrokenProcessPool:
            return following, [n for n in busy if n >= 0]  # one died
        finally:
            ready.close()
    for earlier in range(following, len(files)):
        yield decided.pop(earlier)
    return None


def _alone(
    number: int,
    f: ToPrepare,
    pipeline: Pipeline,
    workers: Workers,
    read: Reader,
    guard: FileGuard | None,
) -> Prepared:
    """`f` prepared by a worker of its own. If that one dies too, the file is what kills
    it: read and hashed here, not parsed, and failed, so this content is not parsed again."""
    try:
        pool, _ = _pool(pipeline, workers.embedder, 1, 1)
        with pool:
            return _submit(pool, 0, [(number, f)], workers).result()[0]
    except BrokenProcessPool:
        pass
    except OSError:
        return prepare(f, pipeline, read, guard, workers.includes)
    try:
        content = read(f[0])
    except DocumentError as exc:
        return Prepared(None, None, None, None, exc.message)
    return Prepared(content.size, content.mtime_ns, content_hash(content.data), None, CRASHED)
