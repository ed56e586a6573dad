"""Crash points: a wrapper of the writer's parts under which the process dies at a named place.

A `FaultPlan` names one point (and which arrival at it kills). It is a
`ragd.stores.wrapping.Wrapper`: the real command line takes it (`ragd.cli.main(argv,
wrap=plan)`, tests/integration/crashing_ragd.py) and passes it each part the writer works
through as that part is made; the plan wraps the parts its point concerns, and at the
planned arrival the process sends itself SIGKILL: a real crash with no cleanup, no
`finally`, no atexit, as `kill -9` or the OOM killer would do it. The core holds no crash
point: each is where a store's write returns, or where one is about to start.
tests/integration/test_fault_points.py checks that the next run repairs the stores.

Points, in the order one flush reaches them (see `BatchWriter.flush` in ragd.indexing.batches):

- `mid_batch`: a flush is about to begin, the previous one committed: the manifest's
  commit of flush N-1 returned, so `mid_batch:2` dies between the first two flushes of a
  run, the first committed, the second not begun (there is no such place before the first).
- `after_intent`: the manifest committed the intent (`mark_pending`: documents pending or
  deleted, the writer marked unclean); neither search store was written.
- `after_lancedb`: the first stage's LanceDB table replaced the documents' chunks; Tantivy
  still holds the old ones and the manifest lists the old ones.
- `after_tantivy`: the Tantivy commit replaced them too; the manifest still lists the old.
- `after_second_stage`: the second stage's table replaced the documents' rows with those
  of stored second-stage vectors; the manifest still lists the old chunks.
- `before_commit`: the manifest's commit of a flush is about to start; every non-empty
  flush makes one, including flushes that only record failures or settled documents.
- `second_stage_rows`: a fill wrote the second stage's rows of newly embedded vectors
  (`upsert`) and has not stored the vectors (ragd.indexing.second_stage).
- `during_compaction`: a vector table's compaction (`optimize`) is about to start.
- `mid_publish`: with the stores on object storage, a generation's objects are written for
  replicas and LATEST, about to be written, does not name it yet (ragd.stores.publishing).
- `poisoned_parse`: a document holding the bytes of `POISON` is about to be parsed. It
  stands for a parser that crashes natively on one file: it dies there in whichever process
  parses it (the plan travels with the pipeline, and each process counts its own
  arrivals), so a worker, and then the writer, die on it (ragd.indexing.parse_guard).

A plan may also hold the daemon's writer instead of killing anything: while its
`pause_file` exists the writer's job queue hands out no job, so a test can edit a file and
look at what the daemon reports before the change is applied (tests/integration/paused_ragd.py).
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar, cast

from ragd.adapters.object_store import ObjectStore
from ragd.indexing.parsers import ReadInclude
from ragd.indexing.pipeline import Pipeline, ProcessedDocument
from ragd.service.logs import get_logger
from ragd.stores.jobs import Job, JobQueue
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest import Manifest
from ragd.stores.publishing import LATEST
from ragd.stores.vectors import FIRST_STAGE, VectorStore

POINTS = (
    "mid_batch",
    "after_intent",
    "after_lancedb",
    "after_tantivy",
    "after_second_stage",
    "before_commit",
    "second_stage_rows",
    "during_compaction",
    "mid_publish",
    "poisoned_parse",
)
POISON = b"RAGD-FAULT-POISON"

_Part = TypeVar("_Part")
_Method = Callable[..., Any]
_Around = Callable[..., Any]  # (the part's own method, *args, **kwargs) -> its result

log = get_logger("tests.faults")


class FaultPlan:
    """Die at the `nth` arrival at `point`; no point means never. With a `pause_file`,
    hold the writer while that file exists.

    It travels to worker processes with the pipeline; each process counts its own arrivals.
    """

    __slots__ = ("_arrivals", "_held", "nth", "pause_file", "point")

    def __init__(
        self, point: str | None = None, nth: int = 1, *, pause_file: Path | None = None
    ) -> None:
        if point is not None and point not in POINTS:
            raise ValueError(f"unknown fault point {point!r}: expected one of {', '.join(POINTS)}")
        if nth < 1:
            raise ValueError(f"a fault's arrival must be 1 or more, got {nth}")
        if point == "mid_batch" and nth < 2:
            raise ValueError("fault mid_batch comes between two flushes: its count is 2 or more")
        self.point = point
        self.nth = nth
        self.pause_file = pause_file
        self._arrivals = self._arrivals_at_start()
        self._held = False

    @classmethod
    def parse(cls, spec: str) -> FaultPlan:
        """A plan from `<point>` or `<point>:<n>`; ValueError naming what is wrong."""
        name, _, count = spec.partition(":")
        if count and not count.isdigit():
            raise ValueError(f"fault {spec!r}: the count after ':' must be a number")
        return cls(name, int(count) if count else 1)

    def __repr__(self) -> str:
        pause = "" if self.pause_file is None else f", pause_file={self.pause_file!r}"
        return f"FaultPlan({self.point!r}, {self.nth}{pause})"

    def __getstate__(self) -> dict[str, Any]:
        # A new process starts counting anew.
        return {"point": self.point, "nth": self.nth, "pause_file": self.pause_file}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.point, self.nth, self.pause_file = state["point"], state["nth"], state["pause_file"]
        self._arrivals, self._held = self._arrivals_at_start(), False

    def _arrivals_at_start(self) -> int:
        # mid_batch's first arrival, the first flush's beginning, follows no commit.
        return 1 if self.point == "mid_batch" else 0

    def reached(self, point: str) -> None:
        """Die here with SIGKILL if this is the planned point's planned arrival."""
        if point != self.point:
            return
        self._arrivals += 1  # one thread of a process writes through the wrapped parts
        if self._arrivals == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)

    def __call__(self, part: _Part, /) -> _Part:
        """`part`, wrapped where this plan's point (or pause) concerns it."""
        if isinstance(part, Pipeline):
            if self.point != "poisoned_parse":
                return part
            own = {f.name: getattr(part, f.name) for f in fields(part)}
            return cast(_Part, PoisonedPipeline(**own, plan=self))
        around = {
            method: hook
            for method, (points, hook) in self._hooks(part).items()
            if self.point in points
        }
        if isinstance(part, JobQueue) and self.pause_file is not None:
            around["take"] = self._take
        return part if not around else cast(_Part, _Wrapped(part, around))

    def _hooks(self, part: object) -> dict[str, tuple[tuple[str, ...], _Around]]:
        """The methods of `part` where points are, by name: those points, and what runs
        around the method."""
        if isinstance(part, Manifest):
            return {
                "mark_pending": self._after("after_intent"),
                "commit": (("before_commit", "mid_batch"), self._commit),
            }
        if isinstance(part, KeywordStore):
            return {"replace_documents": self._after("after_tantivy")}
        if isinstance(part, VectorStore):
            if part.name == FIRST_STAGE:
                return {
                    "replace_documents": self._after("after_lancedb"),
                    "optimize": self._before("during_compaction"),
                }
            return {
                "replace_documents": self._after("after_second_stage"),
                "upsert": self._after("second_stage_rows"),
                "optimize": self._before("during_compaction"),
            }
        if isinstance(part, ObjectStore):
            return {"put_bytes": (("mid_publish",), self._put_bytes)}
        return {}

    def _after(self, point: str) -> tuple[tuple[str, ...], _Around]:
        def around(method: _Method, *args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            self.reached(point)
            return result

        return (point,), around

    def _before(self, point: str) -> tuple[tuple[str, ...], _Around]:
        def around(method: _Method, *args: Any, **kwargs: Any) -> Any:
            self.reached(point)
            return method(*args, **kwargs)

        return (point,), around

    def _commit(self, commit: _Method, *args: Any, **kwargs: Any) -> None:
        self.reached("before_commit")
        commit(*args, **kwargs)
        self.reached("mid_batch")  # the next flush would begin

    def _put_bytes(self, put_bytes: _Method, name: str, data: bytes) -> None:
        if name == LATEST:
            self.reached("mid_publish")
        put_bytes(name, data)

    def _take(self, take: _Method, *args: Any, **kwargs: Any) -> list[Job]:
        """No job while the pause file exists; logs when that starts and ends, which is
        what the test waits for."""
        held = self.pause_file is not None and self.pause_file.exists()
        if held != self._held:
            self._held = held
            log.info("writer_held" if held else "writer_released")
        return [] if held else cast(list[Job], take(*args, **kwargs))


class _Wrapped:
    """Behaves as `part` does, except that each method named in `around` runs inside its
    hook, which is handed the part's own method."""

    def __init__(self, part: object, around: dict[str, _Around]) -> None:
        object.__setattr__(self, "_part", part)
        object.__setattr__(self, "_around", around)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._part, name)
        hook = self._around.get(name)
        return attr if hook is None else functools.partial(hook, attr)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._part, name, value)  # e.g. VectorStore.oldest_published


@dataclass(frozen=True)
class PoisonedPipeline(Pipeline):
    """The pipeline, with a parser that crashes natively on a document holding `POISON`.

    A subclass, not a wrapper: the pipeline is pickled to the worker processes, where
    the plan it carries counts arrivals anew."""

    plan: FaultPlan = field(default_factory=FaultPlan, compare=False)

    def process(
        self,
        data: bytes,
        filename: str,
        doc_id: str,
        *,
        title: str | None = None,
        read_include: ReadInclude | None = None,
    ) -> ProcessedDocument:
        if POISON in data:
            self.plan.reached("poisoned_parse")
        return super().process(data, filename, doc_id, title=title, read_include=read_include)
