"""watchdog behind one adapter: inotify events under some roots, as plain values.

Owns watchdog's observer (started once, one recursive watch per root, symlinks not
followed, a root's watch replaced when it is armed again), whether a root's watch still
runs, the narrowed event mask, turning watchdog's events into `FsEvent`s, and noticing that
the kernel's event queue overflowed. Debouncing and what a path means is
`ragd.sources.watcher`.

watchdog ends a root's watch when the root itself is deleted (its emitter stops) but keeps
it scheduled, so scheduling the path again would add nothing: `watch` unschedules the old
one first. A root moved away keeps its watch, which then follows the moved directory.

watchdog tells event handlers nothing of an overflow (IN_Q_OVERFLOW): it logs a warning
and rebuilds its watches. That log record, matched by the message watchdog 7.1 writes, is
the only signal there is, so a handler on watchdog's logger counts it; were the message
ever to change, a lost event would still be covered by the scheduled rescan.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

OVERFLOW_LOGGER = "watchdog.observers.inotify_c"
OVERFLOW_MESSAGE = "Inotify queue overflowed"

# watchdog narrows the inotify mask to what these need. FileModifiedEvent is left out on
# purpose: it adds IN_MODIFY (one event per write() call) and IN_ATTRIB, which is what
# overflows the queue on bulk copies, while every ordinary writer that changes content
# ends with a close (IN_CLOSE_WRITE = FileClosedEvent) or a rename (FileMovedEvent).
# Writes that never close (mmap, a file held open) or truncate-by-path are left to rescans.
EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]
_WANTED = tuple(EVENT_FILTER)


@dataclass(frozen=True, slots=True)
class FsEvent:
    """A change under a watched root: the paths it touches (both ends of a move: the
    source is gone, the destination is new content), whether they are directories, and
    whether it is a directory's deletion (a root's own, possibly).

    `final` names the paths whose content is complete as of this event: a file closed
    after writing (IN_CLOSE_WRITE), and the destination of a move (an editor's atomic
    save renames the finished file into place). A creation is not final (the writer may
    still be writing), nor a deletion or a move's source (an editor's save dance may put
    the file back a moment later)."""

    paths: tuple[str, ...]
    is_dir: bool
    dir_deleted: bool = False
    final: tuple[str, ...] = ()


class _Handler(FileSystemEventHandler):
    """Forwards the wanted events; the observer thread must not linger here."""

    def __init__(self, forward: Callable[[FsEvent], None]) -> None:
        self._forward = forward

    def dispatch(self, event: FileSystemEvent) -> None:
        if not isinstance(event, _WANTED):
            return  # e.g. DirModifiedEvent: its children's own events carry the news
        moved = isinstance(event, FileMovedEvent | DirMovedEvent)
        raw = (event.src_path, event.dest_path) if moved else (event.src_path,)
        paths = tuple(os.fsdecode(path) for path in raw)
        final = paths[1:] if moved else paths if isinstance(event, FileClosedEvent) else ()
        deleted = isinstance(event, DirDeletedEvent)
        self._forward(FsEvent(paths, event.is_directory, deleted, final))


class _OverflowLogHandler(logging.Handler):
    """Counts watchdog's overflow warnings."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(level=logging.WARNING)
        self._on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(OVERFLOW_MESSAGE):
            self._on_overflow()


class TreeWatch:
    """An inotify observer over some roots. `on_event` and `on_overflow` run on watchdog's
    thread: they must be quick (the kernel queue fills while they run). The other methods
    may be called from any thread."""

    def __init__(
        self, on_event: Callable[[FsEvent], None], on_overflow: Callable[[], None]
    ) -> None:
        self._handler = _Handler(on_event)
        self._log_handler = _OverflowLogHandler(on_overflow)
        self._observer: BaseObserver | None = None
        self._saved_level: int | None = None
        self._watches: dict[str, ObservedWatch] = {}
        # Held around every change to the observer's watches and every look at them:
        # stop() empties them on the caller's thread.
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the observer; OSError (EMFILE: no inotify instance left) if it cannot."""
        logger = logging.getLogger(OVERFLOW_LOGGER)
        # The record must be created at all: if WARNING is filtered above (root logger at
        # ERROR, or "watchdog" silenced), lower this one logger while we listen.
        if logger.getEffectiveLevel() > logging.WARNING:
            self._saved_level = logger.level
            logger.setLevel(logging.WARNING)
        logger.addHandler(self._log_handler)
        observer = Observer()
        try:
            observer.start()
        except OSError:
            self._detach()
            raise
        self._observer = observer

    def watch(self, root: str) -> None:
        """Watch `root` recursively, in place of any watch of it before; OSError (ENOSPC:
        the watch limit; ENOENT: a missing root) if it cannot. Scheduled after `start`,
        the watch is created right here."""
        with self._lock:
            if self._observer is None:
                raise OSError("the observer is not running")
            self._unschedule(self._observer, root)
            self._watches[root] = self._observer.schedule(
                self._handler,
                root,
                recursive=True,
                event_filter=EVENT_FILTER,
                follow_symlink=False,
            )

    def unwatch(self, root: str) -> None:
        """Stop watching `root`, if it is watched."""
        with self._lock:
            if self._observer is not None:
                self._unschedule(self._observer, root)

    def watches(self, root: str) -> bool:
        """Whether `root`'s watch runs: False once the root itself was deleted."""
        with self._lock:
            watch = self._watches.get(root)
            if self._observer is None or watch is None:
                return False
            return any(e.watch == watch and e.is_alive() for e in self._observer.emitters)

    def _unschedule(self, observer: BaseObserver, root: str) -> None:
        watch = self._watches.pop(root, None)
        if watch is not None:
            observer.unschedule(watch)

    def is_alive(self) -> bool:
        """Whether the observer thread runs."""
        return self._observer is not None and self._observer.is_alive()

    def stop(self, timeout: float) -> None:
        """Stop the observer and wait up to `timeout` seconds for its thread."""
        with self._lock:
            observer, self._observer = self._observer, None
            self._watches.clear()
            if observer is not None:
                observer.stop()
                observer.join(timeout)
        self._detach()

    def _detach(self) -> None:
        logger = logging.getLogger(OVERFLOW_LOGGER)
        logger.removeHandler(self._log_handler)
        if self._saved_level is not None:
            logger.setLevel(self._saved_level)
            self._saved_level = None
