"""Crash points: named places in the write path where a test can have the process die.

A `FaultPlan` names one point (and which arrival at it kills); the writer is handed the
plan, and at that arrival the process sends itself SIGKILL: a real crash with no cleanup,
no `finally`, no atexit, as `kill -9` or the OOM killer would do it. Production builds the
writer with `NO_FAULTS`, whose every call returns at once; nothing here reads the
environment. tests/integration/crashing_ragd.py runs the real command line with a plan,
and tests/integration/test_fault_points.py checks that the next run repairs the stores.

Points, in the order one flush reaches them (see `BatchWriter.flush` in ragd.indexing.batches):

- `mid_batch`: the start of a flush with work in it, before embedding and before any write.
  `mid_batch:2` dies between two flushes of one run: the first is committed, the second
  not begun.
- `after_intent`: the manifest committed the intent (documents pending or deleted, the
  writer marked unclean); neither search store was written.
- `after_lancedb`: the LanceDB commit replaced the documents' chunks; Tantivy still holds
  the old ones and the manifest lists the old ones.
- `after_tantivy`: both search stores hold the new chunks; the manifest still lists the
  old. Only flushes that write the search stores reach it.
- `after_second_stage`: the second stage's table holds the documents' rows of stored
  second-stage vectors; the manifest still lists the old chunks. Only flushes with the
  second stage on and a table to write reach it.
- `before_commit`: just before the manifest commit of every non-empty flush, including
  flushes that only record failures or unchanged-but-settled documents.
- `second_stage_rows`: a fill wrote the rows of newly embedded second-stage vectors and
  has not stored the vectors (ragd.indexing.second_stage).
- `during_compaction`: a compaction of the vector table was decided, before LanceDB starts.
- `mid_publish`: with the stores on object storage, a generation's objects are written
  for replicas and LATEST does not name it yet (ragd.stores.publishing).
- `poisoned_parse`: a document holding the bytes of `POISON` is about to be parsed. It
  stands for a parser that crashes natively on one file: it dies there in whichever process
  parses it (arrivals are counted per process), so a worker, and then the writer, die on it
  (ragd.indexing.parse_guard).

A plan may also hold the daemon's writer instead of killing anything: while its
`pause_file` exists the writer takes no job, so a test can edit a file and look at what
the daemon reports before the change is applied (tests/integration/paused_ragd.py).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

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


class FaultPlan:
    """Die at the `nth` arrival at `point`; no point means never (`NO_FAULTS`). With a
    `pause_file`, hold the writer while that file exists.

    It travels to worker processes with the pipeline; each process counts its own arrivals.
    """

    __slots__ = ("_arrivals", "nth", "pause_file", "point")

    def __init__(
        self, point: str | None = None, nth: int = 1, *, pause_file: Path | None = None
    ) -> None:
        if point is not None and point not in POINTS:
            raise ValueError(f"unknown fault point {point!r}: expected one of {', '.join(POINTS)}")
        if nth < 1:
            raise ValueError(f"a fault's arrival must be 1 or more, got {nth}")
        self.point = point
        self.nth = nth
        self.pause_file = pause_file
        self._arrivals = 0

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
        self.point, self.nth, self._arrivals = state["point"], state["nth"], 0
        self.pause_file = state.get("pause_file")

    def holds_writer(self) -> bool:
        """True while the plan's pause file exists: the writer takes no job meanwhile."""
        return self.pause_file is not None and self.pause_file.exists()

    def reached(self, point: str) -> None:
        """Die here with SIGKILL if this is the planned point's planned arrival."""
        if point != self.point:
            return
        self._arrivals += 1  # one thread of a process reaches these points
        if self._arrivals == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)

    def parsing(self, data: bytes) -> None:
        """The `poisoned_parse` point: reached only by a document that holds `POISON`."""
        if self.point == "poisoned_parse" and POISON in data:
            self.reached("poisoned_parse")


NO_FAULTS = FaultPlan()
