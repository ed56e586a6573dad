"""Preparing documents: read, hash, parse and chunk, the part of a pass no store sees.

Owns `prepare` (one file in, one `Prepared` out; a bad file is an outcome, not an
exception) and `prepare_in_order`, which prepares many files in order and, when there
are enough to pay for starting it, on a worker process. A pass that rewrites thousands
of documents then parses on the second core while the calling process embeds and
writes. Every store write stays in the calling process, in the same order as before.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from ragd.errors import DocumentError
from ragd.folders import FileContent
from ragd.parsers import UnsupportedDocument
from ragd.pipeline import Pipeline, ProcessedDocument, content_hash

# Below this many files a worker costs more to start (~0.3 s of imports) than it saves.
WORKER_MIN_FILES = 500
# Files per task sent to the worker, and tasks in flight: enough to keep it busy while
# this process embeds a batch, few enough that prepared documents do not pile up.
_TASK_FILES = 32
_TASKS_IN_FLIGHT = 8

Reader = Callable[[str], FileContent]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a file became. `size` is None when it could not be read (`error` says why);
    `processed` is None when its content hashed to the known hash, or when it cannot be
    parsed (`error` set)."""

    size: int | None
    mtime_ns: int | None
    digest: str | None
    processed: ProcessedDocument | None
    error: str | None


def prepare(key: str, known_hash: str | None, pipeline: Pipeline, read: Reader) -> Prepared:
    """Read, hash and (unless the content hashes to `known_hash`) parse and chunk one file."""
    try:
        content = read(key)
    except DocumentError as exc:
        return Prepared(None, None, None, None, exc.message)
    digest = content_hash(content.data)
    if digest == known_hash:
        return Prepared(content.size, content.mtime_ns, digest, None, None)
    try:
        processed = pipeline.process(content.data, key)
    except UnsupportedDocument as exc:
        return Prepared(content.size, content.mtime_ns, digest, None, exc.reason)
    return Prepared(content.size, content.mtime_ns, digest, processed, None)


def _prepare_task(
    files: Sequence[tuple[str, str | None]], pipeline: Pipeline, read: Reader
) -> list[Prepared]:
    return [prepare(key, known, pipeline, read) for key, known in files]


def prepare_in_order(
    files: Sequence[tuple[str, str | None]],
    pipeline: Pipeline,
    *,
    read: Reader,
    worker_read: Reader | None = None,
    min_files: int = WORKER_MIN_FILES,
) -> Generator[Prepared, None, None]:
    """`prepare` for each (key, known_hash), yielded in order.

    With `worker_read` (a picklable reader) and at least `min_files` files, a worker
    process prepares them ahead of the caller. If the worker dies, the rest is prepared
    here, with `read`. Closing the iterator early cancels what the worker has not begun.
    """
    if worker_read is None or len(files) < min_files:
        for key, known in files:
            yield prepare(key, known, pipeline, read)
        return
    tasks = [files[i : i + _TASK_FILES] for i in range(0, len(files), _TASK_FILES)]
    # forkserver: the caller may hold threads (Tantivy, LanceDB) a plain fork would copy.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        pending: deque[Future[list[Prepared]]] = deque()
        try:
            for done in range(len(tasks)):
                while len(pending) < _TASKS_IN_FLIGHT and done + len(pending) < len(tasks):
                    pending.append(
                        pool.submit(
                            _prepare_task, tasks[done + len(pending)], pipeline, worker_read
                        )
                    )
                try:
                    results = pending.popleft().result()
                except BrokenProcessPool:
                    # The worker died (killed, out of memory): finish here, in order.
                    pending.clear()
                    for rest in tasks[done:]:
                        yield from _prepare_task(rest, pipeline, read)
                    return
                yield from results
        finally:
            for future in pending:
                future.cancel()
