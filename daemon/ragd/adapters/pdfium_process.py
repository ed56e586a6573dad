"""PDFium in a child process of its own, inside a time and a memory limit.

A native call cannot be interrupted in-process: a PDF that sends PDFium into a loop, or
into allocating without end, would hang the thread that parses it (the index writer) or
take the host's memory. So the daemon reads every PDF with `pypdfium2.read_pdf` in a
child process: started on the first PDF (spawn, not fork: the daemon has threads, whose
locks a fork would copy held), kept for the next ones, one per process that parses (the
daemon, each index worker). Its limits, per document (constants below):

- memory: the child's address space is capped at MEMORY_LIMIT (RLIMIT_AS, 1 GiB, or the
  hard limit it inherits if lower; measured: 105 MB of address space and 25 MB resident
  after reading a 28-page manual, and the text of a 5,000-page one takes under 100 MB),
  so each parsing process costs ~25 MB more while it holds a child. An allocation
  past it fails: PDFium then aborts (measured: a Flate bomb of 600 MB), Python raises
  MemoryError, and the document fails "PDF needed more than 1024 MiB to read". A child
  the kernel's OOM killer ends (SIGKILL not sent here) fails its document the same way.
- time: DEADLINE_S, plus PAGE_S a page once the child has counted the pages (30 s +
  0.1 s a page: at most 530 s for the 5,000 pages a PDF may have). Past it the child is
  killed and the document fails "PDF took longer than N s to read".
- a child that dies otherwise (a crash in PDFium) fails its document naming the signal.

The next PDF after a death gets a fresh child. Replies come over a pipe waited on with a
timeout, so the caller never waits past the deadline. The child ends with its parent:
at the parent's exit (a daemonic process), at the end of its pipe when idle, and, when
the parent is killed mid-document, through a pidfd it watches, so no orphan reads on.
Calls from several threads take turns (PDFium ran under one lock before, too).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import select
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from ragd.adapters.pypdfium2 import PdfText, PdfUnreadable, read_pdf

MEMORY_LIMIT = 1 << 30
DEADLINE_S = 30.0
PAGE_S = 0.1
# A child not ready this long after it was started (a host out of CPU or memory) is killed.
_START_S = 60.0
# A child that has ended its document is reaped within this; one that has not is killed.
_REAP_S = 5.0
# Deaths that mean memory: PDFium aborts when an allocation fails; the OOM killer kills.
_OUT_OF_MEMORY = frozenset({-signal.SIGABRT, -signal.SIGKILL})

WhileOpen = Callable[[bytes], None]
"""Run in the child on each document once it is open and its pages are counted, before a
page is read, given its bytes: a test's way to make PDFium's work slow, or allocate, or
crash. Must be picklable (a module-level function): the child gets it."""


class PdfProcess:
    """One child process that reads PDFs, started when first needed, replaced when it dies."""

    def __init__(
        self,
        *,
        memory_limit: int = MEMORY_LIMIT,
        deadline_s: float = DEADLINE_S,
        page_s: float = PAGE_S,
        while_open: WhileOpen | None = None,
    ) -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)  # the child inherits it
        if hard != resource.RLIM_INFINITY:
            memory_limit = min(memory_limit, hard)  # a limit cannot be raised past it
        self._memory_limit = memory_limit
        self._deadline_s = deadline_s
        self._page_s = page_s
        self._while_open = while_open
        self._lock = threading.Lock()
        self._child: tuple[BaseProcess, Connection] | None = None
        self._owner = os.getpid()

    @property
    def pid(self) -> int | None:
        """The child's process id, None while there is no child."""
        return None if self._child is None else self._child[0].pid

    def read(
        self, data: bytes, *, max_pages: int, max_page_chars: int, max_outline: int
    ) -> PdfText:
        """`pypdfium2.read_pdf` in the child, within its limits.

        Raises PdfUnreadable with a one-line reason: what PDFium refuses, a PDF past the
        deadline or the memory limit, or one whose reading killed the child.
        """
        job = (data, max_pages, max_page_chars, max_outline)
        if self._owner != os.getpid():
            self._forget_parents_child()
        with self._lock:
            connection = self._send(job)
            allowed = self._deadline_s
            deadline = time.monotonic() + allowed
            while True:
                if not connection.poll(max(0.0, deadline - time.monotonic())):
                    self.close()
                    raise PdfUnreadable(f"PDF took longer than {allowed:.3g} s to read")
                try:
                    kind, value = connection.recv()
                except (EOFError, OSError):
                    raise PdfUnreadable(self._death()) from None
                if kind == "pages":
                    allowed += value * self._page_s
                    deadline += value * self._page_s
                    continue
                if kind == "text":
                    text: PdfText = value
                    return text
                if kind == "memory":
                    raise PdfUnreadable(self._memory_reason())
                raise PdfUnreadable(value)

    def close(self) -> None:
        """End the child, if any (killed: it may be inside PDFium); the next read starts one."""
        if self._child is None:
            return
        process, connection = self._child
        self._child = None
        process.kill()
        process.join()
        connection.close()

    def _forget_parents_child(self) -> None:
        """In a process forked from the owner: the child and the lock copied are the
        parent's (the lock perhaps copied held). Start afresh; leave the parent's child be."""
        if self._child is not None:
            self._child[1].close()  # this process's copy of the parent's pipe
        self._child = None
        self._lock = threading.Lock()
        self._owner = os.getpid()

    def _send(self, job: tuple[bytes, int, int, int]) -> Connection:
        """Send `job` to the child, starting one if there is none or it has died idle."""
        if self._child is not None:
            with contextlib.suppress(OSError):  # its end of the pipe closed: it died idle
                self._child[1].send(job)
                return self._child[1]
            self.close()
        try:
            self._child = self._start()
            # The deadline is the document's: the child's start-up is not counted in it.
            ready = self._child[1].poll(_START_S) and self._child[1].recv() == ("ready", None)
            if not ready:
                raise OSError(f"not ready within {_START_S:.0f} s")
            self._child[1].send(job)
        except (OSError, EOFError) as exc:  # no process or pipe to be had, or it died
            self.close()
            raise PdfUnreadable(f"the PDF reader process could not start ({exc})") from None
        return self._child[1]

    def _start(self) -> tuple[BaseProcess, Connection]:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(theirs, self._memory_limit, self._while_open),
            name="ragd-pdf",
            daemon=True,
        )
        process.start()
        theirs.close()  # the child's end: closed here, its death ends the pipe for `ours`
        return process, ours

    def _death(self) -> str:
        """The reason for a document whose reading ended the child; the child is reaped."""
        assert self._child is not None  # a reply was awaited from it
        process, connection = self._child
        self._child = None
        process.join(_REAP_S)
        if process.exitcode is None:  # it closed its pipe but lives on: make sure
            process.kill()
            process.join()
        connection.close()
        code = process.exitcode
        if code in _OUT_OF_MEMORY:
            return self._memory_reason()
        if code is not None and code < 0:
            return f"the PDF reader crashed reading this PDF ({_signal_name(-code)})"
        return f"the PDF reader ended reading this PDF (exit code {code})"

    def _memory_reason(self) -> str:
        return f"PDF needed more than {self._memory_limit >> 20} MiB to read"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal: no name
        return f"signal {number}"


_DEFAULT = PdfProcess()


def read_pdf_apart(
    data: bytes, *, max_pages: int, max_page_chars: int, max_outline: int
) -> PdfText:
    """`pypdfium2.read_pdf` in this process's PDF child, with the default limits."""
    return _DEFAULT.read(
        data, max_pages=max_pages, max_page_chars=max_page_chars, max_outline=max_outline
    )


# -- in the child ---------------------------------------------------------------------


def _serve(connection: Connection, memory_limit: int, while_open: WhileOpen | None) -> None:
    """Read the PDFs the parent sends until it closes the pipe, replying to each."""
    # Ctrl-C in a terminal reaches the whole process group: the parent decides when to end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    _exit_with_parent()
    connection.send(("ready", None))
    while True:
        try:
            data, max_pages, max_page_chars, max_outline = connection.recv()
        except EOFError:
            return

        def counted(count: int, data: bytes = data) -> None:
            connection.send(("pages", count))
            if while_open is not None:
                while_open(data)

        reply: tuple[str, Any]
        try:
            reply = (
                "text",
                read_pdf(
                    data,
                    max_pages=max_pages,
                    max_page_chars=max_page_chars,
                    max_outline=max_outline,
                    counted=counted,
                ),
            )
            connection.send(reply)
            continue
        except PdfUnreadable as exc:
            reply = ("unreadable", exc.reason)
        except MemoryError:
            reply = ("memory", None)
        except Exception as exc:  # a bug here fails this document, with its name
            message = " ".join(f"{type(exc).__name__}: {exc}".split())
            reply = ("failed", f"the PDF reader failed ({message})")
        connection.send(reply)


def _exit_with_parent() -> None:
    """End this child as soon as its parent is gone, even while PDFium holds the main
    thread (its calls release the GIL). Before Linux 5.3 (no pidfd) the end of the pipe,
    seen when idle, is what ends it."""
    try:
        watched = os.pidfd_open(os.getppid())
    except (AttributeError, OSError):
        return

    def wait() -> None:
        select.select([watched], [], [])
        os._exit(1)  # nobody to reply to; skip interpreter teardown

    threading.Thread(target=wait, name="watch-parent", daemon=True).start()
