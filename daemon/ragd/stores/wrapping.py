"""The seam where tests wrap the writer's parts: fault injection outside the core.

A `Wrapper` takes each part the writer works through as it is made (the manifest, the
vector and keyword stores, the job queue the daemon's writer takes from, the pipeline, the
publisher's object store) and returns what to use in its place, something that behaves as
the part does. Production runs on `unwrapped`, the parts themselves. Tests pass one that
kills the process after a write returns, or before one starts (tests/faults.py), so the
core holds no crash points and no switch for them. Its own module, with no imports: the
command line names the type at start-up, before it knows whether it will open a store.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

_Part = TypeVar("_Part")


class Wrapper(Protocol):
    """Returns, for a part, what to use in its place; of the same type."""

    def __call__(self, part: _Part, /) -> _Part: ...


def unwrapped(part: _Part, /) -> _Part:
    """The part itself: what production runs on."""
    return part
