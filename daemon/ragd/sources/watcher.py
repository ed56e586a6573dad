"""File watching: filesystem events under folder roots, as debounced changes.

Owns the mapping from raw filesystem events (`ragd.adapters.watchdog`) to
`Change(source, key, is_dir)` hints, the debounce (settle period with a ceiling), overflow
bookkeeping and which roots could not be watched. Changes are hints, never truth: the
indexer re-stats and hashes whatever it is told about, and a rescan (asked for through
`on_overflow`, or on a schedule elsewhere) covers anything a watch missed.

It starts threads and logs through `logging`; it imports only the watchdog adapter and
`ragd.sources.folders`.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ragd.adapters.watchdog import FsEvent, TreeWatch
from ragd.sources.folders import FolderSource

logger = logging.getLogger("ragd.watcher")

TICK_SECONDS = 0.05
JOIN_SECONDS = 0.9  # per thread; stop() stays well under 2 s


@dataclass(frozen=True, slots=True)
class Change:
    """A path that may have changed.

    `key` is the POSIX path relative to the source root: a file key, or a directory key
    when `is_dir` is True, in which case everything under it must be re-checked.
    """

    source: str
    key: str
    is_dir: bool


@dataclass(frozen=True)
class WatchHealth:
    """What the watcher can vouch for.

    `watching` is True while the observer runs and at least one root is watched (or there
    are no roots). `unwatched_roots` are root paths that could not be watched; only rescans
    cover them. `last_overflow_at` (ISO 8601 UTC) is when events were last lost: until a
    scan that began after it completes, only that scan can vouch for the roots.
    """

    watching: bool
    overflows: int
    unwatched_roots: tuple[str, ...]
    last_overflow_at: str | None = None


@dataclass(slots=True)
class _Window:
    first: float
    last: float
    final: bool  # the last event left the content complete: due at once


class _Root:
    """A folder source with the real path its events arrive under."""

    __slots__ = ("folder", "prefix", "real")

    def __init__(self, folder: FolderSource) -> None:
        self.folder = folder
        # Watch the resolved path: with follow_symlink=False a symlinked root would
        # otherwise be watched as the link itself, while scan() lists through it.
        self.real = os.path.realpath(folder.root)
        self.prefix = self.real.rstrip("/") + "/"


class Watcher:
    """Watches folder roots and hands debounced batches of changes to `on_changes`.

    A change whose last event left its content complete (a file closed after writing,
    or renamed into place: `FsEvent.final`) wakes the debounce thread and is emitted at
    once, with whatever else is due. Any other (a file created and still open, a
    deletion, a move's source, which an editor's save may undo a moment later) is emitted
    once its (source, key, is_dir) has been quiet for `settle` seconds, or `ceiling`
    seconds after its first event, so a steady writer is not starved. Callbacks run on
    the watcher's own thread, one at a time.
    """

    def __init__(
        self,
        folders: Sequence[FolderSource],
        on_changes: Callable[[list[Change]], None],
        on_overflow: Callable[[], None],
        *,
        settle: float = 0.3,
        ceiling: float = 5.0,
    ) -> None:
        self._roots = [_Root(folder) for folder in folders]
        self._folders = {folder.name: folder for folder in folders}
        self._on_changes = on_changes
        self._on_overflow = on_overflow
        self._settle = settle
        self._ceiling = max(ceiling, settle)
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, bool], _Window] = {}
        self._overflows = 0
        self._overflow_flag = False
        self._last_overflow_at: str | None = None
        self._unwatched: list[str] = []
        self._watch = TreeWatch(self._record, self._note_overflow)
        self._started = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ragd-watcher", daemon=True)
        self._stopping = threading.Event()
        self._final_seen = threading.Event()  # wakes the debounce thread before its tick

    def start(self) -> None:
        """Watch every root recursively (symlinks not followed) and start debouncing."""
        if self._started:
            return
        self._started = True
        try:
            self._watch.start()
        except OSError as exc:  # EMFILE: no inotify instance left for this user
            for root in self._roots:
                self._unwatchable(root, exc)
        else:
            for root in self._roots:
                try:
                    self._watch.watch(root.real)
                except OSError as exc:  # ENOSPC (the watch limit), a missing root
                    self._unwatchable(root, exc)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, flush pending changes to `on_changes` and join the threads."""
        with self._lock:
            if not self._started or self._stopped:
                return
            self._stopped = True
        self._watch.stop(JOIN_SECONDS)
        self._stopping.set()
        self._final_seen.set()
        # A callback may call stop() from the watcher thread itself: it cannot join itself.
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_SECONDS)
            if self._thread.is_alive():
                logger.warning("watcher thread did not stop within %.1f s", JOIN_SECONDS)

    def health(self) -> WatchHealth:
        """Whether roots are watched, overflows seen so far and roots left to rescans."""
        with self._lock:
            unwatched = tuple(self._unwatched)
            overflows, overflowed_at = self._overflows, self._last_overflow_at
        running = self._watch.is_alive()
        some_watched = not self._roots or len(unwatched) < len(self._roots)
        return WatchHealth(running and some_watched, overflows, unwatched, overflowed_at)

    # Observer thread side: keep it cheap so the inotify queue drains quickly.

    def _record(self, event: FsEvent) -> None:
        now = time.monotonic()
        for path in event.paths:
            found = self._locate(path)
            if found is None:
                if event.dir_deleted:
                    self._root_lost(path)
                continue
            ident = (found[0], found[1], event.is_dir)
            final = path in event.final
            with self._lock:
                window = self._pending.get(ident)
                if window is None:
                    self._pending[ident] = _Window(now, now, final)
                else:
                    window.last, window.final = now, final
            if final:
                self._final_seen.set()

    def _locate(self, path: str) -> tuple[str, str] | None:
        """(source name, key) for a path strictly below a root; None otherwise."""
        for root in self._roots:
            if path.startswith(root.prefix):
                return root.folder.name, path[len(root.prefix) :]
        return None

    def _root_lost(self, path: str) -> None:
        # watchdog stops a root's emitter when the root itself is deleted. That is never
        # a delete of everything: the root is left to rescans (which refuse empty roots).
        for root in self._roots:
            if root.real == path:
                logger.warning("root %s of source %r vanished", path, root.folder.name)
                self._unwatchable(root, None)

    def _unwatchable(self, root: _Root, exc: OSError | None) -> None:
        if exc is not None:
            hint = "; raise fs.inotify.max_user_watches" if exc.errno == errno.ENOSPC else ""
            logger.error(
                "cannot watch %s for source %r (%s); only rescans will cover it%s",
                root.folder.root,
                root.folder.name,
                exc.strerror or exc,
                hint,
            )
        with self._lock:
            if str(root.folder.root) not in self._unwatched:
                self._unwatched.append(str(root.folder.root))

    def _note_overflow(self) -> None:
        # Runs inside logging's handler lock on watchdog's thread: count and flag only.
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # as the manifest's times
        with self._lock:
            self._overflows += 1
            self._overflow_flag = True
            self._last_overflow_at = now

    # Debounce thread side.

    def _run(self) -> None:
        while not self._stopping.is_set():
            # Cleared before the tick: a final event recorded during it wakes the next one.
            self._final_seen.wait(TICK_SECONDS)
            self._final_seen.clear()
            if not self._stopping.is_set():
                self._tick(time.monotonic(), flush_all=False)
        self._tick(time.monotonic(), flush_all=True)

    def _tick(self, now: float, *, flush_all: bool) -> None:
        with self._lock:
            overflowed, self._overflow_flag = self._overflow_flag, False
            due = [
                ident
                for ident, window in self._pending.items()
                if flush_all
                or window.final
                or now - window.last >= self._settle
                or now - window.first >= self._ceiling
            ]
            for ident in due:
                del self._pending[ident]
        if overflowed:
            try:
                self._on_overflow()
            except Exception:
                logger.exception("on_overflow callback failed")
        changes = [
            Change(source, key, is_dir)
            for source, key, is_dir in sorted(due)
            if self._wanted(source, key, is_dir=is_dir)
        ]
        if changes:
            try:
                self._on_changes(changes)
            except Exception:
                logger.exception("on_changes callback failed for %d changes", len(changes))

    def _wanted(self, source: str, key: str, *, is_dir: bool) -> bool:
        """Apply the source's selection here, off the observer thread, as scan() does."""
        folder = self._folders[source]
        return folder.descends(key) if is_dir else folder.selects(key)
