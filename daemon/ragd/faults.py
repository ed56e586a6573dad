"""Crash points for tests: a named place in the write path where the process can kill itself.

Set `RAGD_FAULT=<name>` (or `<name>:<n>`, the n-th time the point is reached; default 1) and
the process sends itself SIGKILL there: a real crash with no cleanup, no `finally`, no atexit,
as `kill -9` or the OOM killer would do it. tests/integration/test_fault_points.py runs the real
`ragd index` with each point and checks that the next run repairs the stores.

Points, in the order one flush reaches them (see `BatchWriter.flush` in ragd.batches):

- `mid_batch`: the start of a flush with work in it, before embedding and before any write.
  `mid_batch:2` dies between two flushes of one run: the first is committed, the second not
  begun.
- `after_intent`: the manifest committed the intent (documents pending or deleted, the writer
  marked unclean); neither search store was written.
- `after_lancedb`: the LanceDB commit replaced the documents' chunks; Tantivy still holds the
  old ones and the manifest lists the old ones.
- `after_tantivy`: both search stores hold the new chunks; the manifest still lists the old.
  Only flushes that write the search stores reach it.
- `before_commit`: just before the manifest commit of every non-empty flush, including flushes
  that only record failures or unchanged-but-settled documents and touch no search store.
- `during_compaction`: `VectorStore.optimize` was asked to compact, before LanceDB starts.
- `poisoned_parse`: `Pipeline.process` was given a document holding the bytes of `POISON`.
  It stands for a parser that crashes natively on one file: it dies there in whichever
  process parses it (the count is per process), so a worker, and then the writer, die on
  it (ragd.parse_guard).

The variable is read once, at import. When it is unset a call costs one string comparison, so
the points stay in production code (the core reads no configuration; this is a test hook).
A misspelt point name or count fails at import, so a test cannot silently never crash.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "mid_batch",
    "after_intent",
    "after_lancedb",
    "after_tantivy",
    "before_commit",
    "during_compaction",
    "poisoned_parse",
)
POISON = b"RAGD-FAULT-POISON"


def _parse(spec: str) -> tuple[str, int]:
    """(point name, which arrival kills); ("", 0) when no fault is asked for."""
    if not spec:
        return "", 0
    name, _, count = spec.partition(":")
    if name not in POINTS or (count and not (count.isdigit() and int(count) >= 1)):
        raise ValueError(
            f"RAGD_FAULT={spec!r}: expected one of {', '.join(POINTS)}, optionally ':N' (N >= 1)"
        )
    return name, int(count) if count else 1


_NAME, _NTH = _parse(os.environ.get("RAGD_FAULT", ""))
_arrivals = 0


def armed(name: str) -> bool:
    """Whether RAGD_FAULT names this point (for a point that also looks at its input)."""
    return name == _NAME


def fault_point(name: str) -> None:
    """Die here with SIGKILL if RAGD_FAULT names this point and this is its n-th arrival."""
    if name != _NAME:
        return
    global _arrivals  # one writer thread reaches these points; no lock needed
    _arrivals += 1
    if _arrivals == _NTH:
        os.kill(os.getpid(), signal.SIGKILL)
