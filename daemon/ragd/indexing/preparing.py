"""Preparing documents: read, hash, parse, chunk and embed, the part of a pass no store sees.

Owns `prepare` (one file in, one `Prepared` out; a bad file is an outcome, not an
exception) and `prepare_task`, the one function that prepares a run of files wherever it
runs: in the writer's process, parsed inside the parse guard and left unembedded (the
batch writer embeds only what its cache lacks), or in a worker process, where it also
embeds every chunk and finds its identifier terms while the writer writes
(`ragd.indexing.workers` runs it there). `in_order` runs tasks on any executor and yields
their files in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor, Future
from contextlib import nullcontext
from dataclasses import dataclass
from typing import NamedTuple, ParamSpec, TypeVar

from ragd.embedding import Embedder
from ragd.errors import DocumentError
from ragd.indexing.parse_guard import FileGuard
from ragd.indexing.parsers import UnsupportedDocument
from ragd.indexing.pipeline import Pipeline, ProcessedDocument
from ragd.sources.folders import FileContent
from ragd.sources.includes import IncludeRoot
from ragd.stores.identifiers import identifier_terms
from ragd.stores.records import content_hash

# The values a pass makes per file are tuples. A 38k-file pass holds ~150k of them for its
# whole length, and every object the cycle collector tracks is walked by each of its full
# collections (ten or so a pass): an exact tuple of strings and numbers is not tracked at
# all, and a named tuple is one object where a dataclass is two (it and its __dict__).

ToPrepare = tuple[str, str, str | None, int]
"""A file to prepare: (key, doc_id, the hash its content had when last indexed, size)."""


Reader = Callable[[str], FileContent]
T = TypeVar("T")
P = ParamSpec("P")


class Prepared(NamedTuple):
    """What a file became. `size` is None when it could not be read (`error` says why);
    `processed` is None when its content hashed to the known hash, or when it cannot be
    parsed (`error` set)."""

    size: int | None
    mtime_ns: int | None
    digest: str | None
    processed: ProcessedDocument | None
    error: str | None


def prepare(
    file: ToPrepare,
    pipeline: Pipeline,
    read: Reader,
    guard: FileGuard | None = None,
    includes: IncludeRoot | None = None,
) -> Prepared:
    """Read, hash and (unless the content hashes to its known hash) parse and chunk one
    file, the parse inside `guard` when given (ragd.indexing.parse_guard), its includes
    read under `includes` (ragd.sources.includes; none without) and recorded with it."""
    key, doc_id, known_hash, _ = file
    try:
        content = read(key)
    except DocumentError as exc:
        return Prepared(None, None, None, None, exc.message)
    digest = content_hash(content.data)
    if digest == known_hash:
        return Prepared(content.size, content.mtime_ns, digest, None, None)
    included = None if includes is None else includes.for_document(key)
    try:
        with nullcontext() if guard is None else guard(key, content, digest):
            processed = pipeline.process(content.data, key, doc_id, read_include=included)
    except UnsupportedDocument as exc:
        return Prepared(content.size, content.mtime_ns, digest, None, exc.reason)
    if included is not None:
        processed = processed._replace(includes=included.digests())
    return Prepared(content.size, content.mtime_ns, digest, processed, None)


def prepare_task(
    files: Sequence[ToPrepare],
    pipeline: Pipeline,
    read: Reader,
    *,
    embedder: Embedder | None = None,
    guard: FileGuard | None = None,
    on_file: Callable[[int], None] | None = None,
    includes: IncludeRoot | None = None,
) -> list[Prepared]:
    """Prepare `files` in order (`on_file(n)` before the n-th). With `embedder`, every
    chunk of them is embedded in one model call and gets its identifier terms."""
    prepared = []
    for number, file in enumerate(files):
        if on_file is not None:
            on_file(number)
        prepared.append(prepare(file, pipeline, read, guard, includes))
    if embedder is None:
        return prepared
    texts = list(
        dict.fromkeys(c.embed_text for p in prepared if p.processed for c in p.processed.chunks)
    )
    if not texts:
        return prepared
    matrix = embedder.embed(texts)
    row = {text: n for n, text in enumerate(texts)}
    return [
        p._replace(
            processed=p.processed._replace(
                chunks=tuple(
                    c._replace(
                        vector=matrix[row[c.embed_text]],
                        identifiers=" ".join(identifier_terms(c.embed_text)),
                    )
                    for c in p.processed.chunks
                )
            )
        )
        if p.processed
        else p
        for p in prepared
    ]


class InProcess(Executor):
    """An executor that runs each task at once, in the caller's thread."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


@dataclass(frozen=True, slots=True)
class TaskShape:
    """How files are cut into tasks, and how many tasks and bytes of files may be submitted
    ahead of the one the caller waits for."""

    files: int
    bytes: int
    ahead_tasks: int
    ahead_bytes: int


# In the writer's process a task is one file, run when the caller asks for it.
ONE_AT_A_TIME = TaskShape(files=1, bytes=0, ahead_tasks=1, ahead_bytes=0)


def tasks_of(
    files: Sequence[tuple[int, ToPrepare]], shape: TaskShape
) -> list[list[tuple[int, ToPrepare]]]:
    """Numbered files cut into tasks of at most `shape.files` files or about `shape.bytes`."""
    tasks: list[list[tuple[int, ToPrepare]]] = []
    task: list[tuple[int, ToPrepare]] = []
    size = 0
    for numbered in files:
        file_size = numbered[1][3]
        if task and (len(task) == shape.files or size + file_size > shape.bytes):
            tasks.append(task)
            task, size = [], 0
        task.append(numbered)
        size += file_size
    if task:
        tasks.append(task)
    return tasks


Submit = Callable[[int, list[tuple[int, ToPrepare]]], "Future[list[Prepared]]"]


def in_order(
    tasks: Sequence[list[tuple[int, ToPrepare]]], submit: Submit, shape: TaskShape
) -> Generator[tuple[int, Prepared], None, None]:
    """Each task's files, numbered and prepared, in task order: `submit(index, task)`
    starts a task (keeping up to `shape.ahead_tasks` tasks and `shape.ahead_bytes` bytes of
    files in flight). The executor's errors pass through; closing the generator cancels
    what has not begun."""
    pending: deque[tuple[Future[list[Prepared]], int, list[tuple[int, ToPrepare]]]] = deque()
    ahead = 0  # bytes of the pending tasks' files
    submitted = 0
    try:
        for _ in range(len(tasks)):
            while submitted < len(tasks) and (
                not pending or (len(pending) < shape.ahead_tasks and ahead < shape.ahead_bytes)
            ):
                task = tasks[submitted]
                size = sum(f[3] for _, f in task)
                pending.append((submit(submitted, task), size, task))
                ahead += size
                submitted += 1
            future, size, task = pending.popleft()
            ahead -= size
            results = future.result()
            for (number, _), prepared in zip(task, results, strict=True):
                yield number, prepared
    finally:
        for future, _, _ in pending:
            future.cancel()
        pending.clear()  # their futures may hold an error, and it holds this frame
