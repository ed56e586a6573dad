"""How `ragd serve` learns it must stop: SIGTERM or SIGINT, or one of its own threads.

Owns the main thread's wait. It blocks on a pipe, never in a timed sleep: the signal
module writes each signal's number to the pipe (`signal.set_wakeup_fd`), and a thread
that needs the daemon to stop (the writer, on dying) writes to it too. The Python-level
handler only sets a flag. Python runs it on the main thread between two bytecodes, which
can be inside `Event.wait` with the Event's lock held, where setting that Event would wait
for the lock forever (python/cpython#126434 is the same trap in multiprocessing.Event).
A second signal exits at once: the operator wants out now.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_THREAD_BYTE = b"\0"  # no signal is numbered 0


class StopSignal:
    """A wake-up pipe for the main thread, and the signal handlers that feed it."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.signalled = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGTERM and SIGINT (from the main thread) while the body runs; restore
        the previous handlers after."""
        previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
        previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for signum in SIGNALS:
            signal.signal(signum, self._on_signal)
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(previous_fd)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.signalled:
            os._exit(1)
        self.signalled = True

    def wake(self) -> None:
        """Wake the waiting main thread (from any thread)."""
        with contextlib.suppress(BlockingIOError):  # a full pipe wakes it already
            os.write(self._write, _THREAD_BYTE)

    def wait(self) -> None:
        """Block until a signal arrives or a thread calls `wake`."""
        select.select([self._read], [], [])
        with contextlib.suppress(BlockingIOError):
            os.read(self._read, 4096)

    def close(self) -> None:
        """Close the pipe."""
        os.close(self._read)
        os.close(self._write)
