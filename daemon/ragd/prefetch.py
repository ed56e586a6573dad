"""Overlap one slow read with other work by running it in a forked child process.

`ragd status` needs LanceDB's chunk ids, and importing lancedb alone costs about 1 s
on the 2-core reference machine (docs/performance.md); a child forked before that import
reads the ids while the parent reads the manifest and Tantivy. Threads would not help:
the import is pure-Python work under the GIL.

Only for single-threaded processes such as the CLI: forking a process whose other
threads hold locks (the daemon) can deadlock the child.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from typing import Generic, TypeVar

from ragd.errors import RagdError, StoreError

T = TypeVar("T")


class ChildRead(Generic[T]):
    """A read running in a forked child; `result()` waits for it."""

    def __init__(self, pid: int, pipe_fd: int, what: str) -> None:
        self.pid = pid
        self._fd = pipe_fd
        self._what = what
        self._collected = False

    @classmethod
    def start(cls, read: Callable[[], T], what: str) -> ChildRead[T]:
        """Fork now; the child runs `read` and sends its pickled result back over a pipe."""
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _run_child(read, write_fd)
        os.close(write_fd)
        return cls(pid, read_fd, what)

    def result(self) -> T:
        """The child's value, or its error re-raised here (a RagdError keeps its message)."""
        self._collected = True
        with os.fdopen(self._fd, "rb") as pipe:
            payload = pipe.read()
        os.waitpid(self.pid, 0)
        try:
            # Trusted bytes: they come from our own forked child.
            ok, value = pickle.loads(payload)  # noqa: S301
        except Exception:  # an empty or cut payload: the child died
            raise StoreError(f"reading {self._what} failed: the helper process died") from None
        if not ok:
            raise StoreError(str(value))
        return value  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop and collect the child unless its result was already taken."""
        if self._collected:
            return
        self._collected = True
        os.close(self._fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def _run_child(read: Callable[[], object], write_fd: int) -> None:
    try:
        try:
            payload = pickle.dumps((True, read()), protocol=pickle.HIGHEST_PROTOCOL)
        except RagdError as exc:
            payload = pickle.dumps((False, str(exc)))
        except BaseException as exc:  # the parent reports it: the child must not unwind
            payload = pickle.dumps((False, f"{type(exc).__name__}: {exc}"))
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        # Skip atexit handlers and buffered output inherited from the parent.
        os._exit(0)
