"""Preparing documents: read, hash, parse, chunk and embed, the part of a pass no store sees.

Owns `prepare` (one file in, one `Prepared` out; a bad file is an outcome, not an
exception) and `prepare_in_order`, which prepares many files in order and, when there
are enough to pay for starting it, on a worker process that also embeds their chunks.
A pass that rewrites thousands of documents then parses and embeds on the second core
while the calling process writes. Every store write stays in the calling process, in
the same order as before.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace

from ragd.embedding import Embedder, Matrix
from ragd.errors import DocumentError
from ragd.folders import FileContent
from ragd.parsers import UnsupportedDocument
from ragd.pipeline import Pipeline, ProcessedDocument, content_hash

# Below this many files a worker costs more to start (~0.3 s of imports) than it saves.
WORKER_MIN_FILES = 500
# Files per task sent to the worker (its chunks are embedded in one model call, so a
# task must be big enough to batch), and tasks in flight: enough to keep the worker busy
# while this process writes a batch, few enough that prepared documents do not pile up.
_TASK_FILES = 64
_TASKS_IN_FLIGHT = 8

Reader = Callable[[str], FileContent]


@dataclass(frozen=True, slots=True, eq=False)  # vectors are arrays: compare fields
class Prepared:
    """What a file became. `size` is None when it could not be read (`error` says why);
    `processed` is None when its content hashed to the known hash, or when it cannot be
    parsed (`error` set). `vectors`, one row per chunk, when a worker embedded them."""

    size: int | None
    mtime_ns: int | None
    digest: str | None
    processed: ProcessedDocument | None
    error: str | None
    vectors: Matrix | None = None


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


# The worker's pipeline and embedder, sent once when it starts (the model loads once).
_worker: tuple[Pipeline, Embedder] | None = None


def _start_worker(pipeline: Pipeline, embedder: Embedder) -> None:
    global _worker  # one per worker process, set by its initializer
    _worker = (pipeline, embedder)


def _prepare_task(files: Sequence[tuple[str, str | None]], read: Reader) -> list[Prepared]:
    """In the worker: prepare a task's files, then embed all their chunks in one call."""
    assert _worker is not None, "the worker's initializer did not run"
    pipeline, embedder = _worker
    prepared = [prepare(key, known, pipeline, read) for key, known in files]
    texts = list(
        dict.fromkeys(c.embed_text for p in prepared if p.processed for c in p.processed.chunks)
    )
    if not texts:
        return prepared
    matrix = embedder.embed(texts)
    row = {text: n for n, text in enumerate(texts)}
    return [
        replace(p, vectors=matrix[[row[c.embed_text] for c in p.processed.chunks]])
        if p.processed
        else p
        for p in prepared
    ]


def prepare_in_order(
    files: Sequence[tuple[str, str | None]],
    pipeline: Pipeline,
    *,
    read: Reader,
    worker: tuple[Reader, Embedder] | None = None,
    min_files: int = WORKER_MIN_FILES,
) -> Generator[Prepared, None, None]:
    """`prepare` for each (key, known_hash), yielded in order.

    With `worker` (a picklable reader and embedder) and at least `min_files` files, a
    worker process prepares and embeds them ahead of the caller (chunks the caller has
    cached are embedded anyway: on the other core that costs less than asking). If it
    cannot start or dies, the rest is prepared here, with `read`, unembedded. Closing
    the generator early cancels what the worker has not begun.
    """
    if worker is None or len(files) < min_files:
        for key, known in files:
            yield prepare(key, known, pipeline, read)
        return
    worker_read, embedder = worker
    tasks = [files[i : i + _TASK_FILES] for i in range(0, len(files), _TASK_FILES)]
    # forkserver: the caller may hold threads (Tantivy, LanceDB) a plain fork would copy.
    with ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_start_worker,
        initargs=(pipeline, embedder),
    ) as pool:
        pending: deque[Future[list[Prepared]]] = deque()
        try:
            for done in range(len(tasks)):
                try:
                    while len(pending) < _TASKS_IN_FLIGHT and done + len(pending) < len(tasks):
                        pending.append(
                            pool.submit(_prepare_task, tasks[done + len(pending)], worker_read)
                        )
                    results = pending.popleft().result()
                except (BrokenProcessPool, OSError):
                    # The worker could not start (no /tmp for forkserver's socket, process
                    # limits) or died (killed, out of memory): finish here, in order.
                    pending.clear()
                    for rest in tasks[done:]:
                        for key, known in rest:
                            yield prepare(key, known, pipeline, read)
                    return
                yield from results
        finally:
            for future in pending:
                future.cancel()
