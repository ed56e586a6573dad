"""File watching: filesystem events under folder roots, as debounced changes.

Owns the mapping from raw filesystem events (`ragd.adapters.watchdog`) to
`Change(source, key, is_dir)` hints, the debounce (settle period with a ceiling), overflow
bookkeeping, and which roots are watched: a root that is deleted, moved away or replaced
is noticed within ROOT_CHECK_SECONDS and watched again as soon as a directory is back at
its path. Changes are hints, never truth: the indexer re-stats and hashes whatever it is
told about, and a rescan (asked for through the listener's `on_overflow` and
`on_rewatched`, or on a schedule elsewhere) covers anything a watch missed.

It starts threads and logs through `logging`; it imports only the watchdog adapter and
`ragd.sources.folders`.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from ragd.adapters.watchdog import FsEvent, TreeWatch
from ragd.sources.folders import FolderSource, is_utf8_name, shown_key

logger = logging.getLogger("ragd.watcher")

TICK_SECONDS = 0.05
JOIN_SECONDS = 0.9  # per thread; stop() stays well under 2 s
# How often each root's path is checked (one lstat each): a root deleted and restored,
# or moved away and made again, is watched again within this.
ROOT_CHECK_SECONDS = 0.5


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
    are no roots). `unwatched_roots` are root paths not watched now: missing (watched
    again once they are back, with a rescan) or beyond a limit (only rescans cover them).
    `last_overflow_at` (ISO 8601 UTC) is when events were last lost: until a
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
    """A folder source with the real path its events arrive under, and the directory
    its watch was armed on."""

    __slots__ = ("armed_on", "folder", "prefix", "real", "retry")

    def __init__(self, folder: FolderSource) -> None:
        self.folder = folder
        # Watch the resolved path: with follow_symlink=False a symlinked root would
        # otherwise be watched as the link itself, while scan() lists through it.
        self.real = os.path.realpath(folder.root)
        self.prefix = self.real.rstrip("/") + "/"
        # (st_dev, st_ino) of the directory watched; None while unwatched. A root moved
        # away keeps its watch (it follows the inode): only this tells it was replaced.
        self.armed_on: tuple[int, int] | None = None
        # Whether to watch it again once a directory is at its path: a missing root is,
        # one beyond a limit (ENOSPC, EMFILE) is left to rescans.
        self.retry = False

    def directory(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the directory at the root's path now, if there is one."""
        try:
            st = os.lstat(self.real)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


class WatchListener(Protocol):
    """Who hears what a Watcher sees: each call on the watcher's own thread, one at a time;
    an error raised is logged and the watcher goes on."""

    def on_changes(self, changes: list[Change]) -> None:
        """A debounced batch of changes (hints: the indexer re-reads what they name)."""

    def on_overflow(self) -> None:
        """The kernel dropped events: only a full rescan covers what they were."""

    def on_rewatched(self, source: str) -> None:
        """A root of `source` is watched again: a rescan covers what happened meanwhile."""


class Watcher:
    """Watches folder roots and hands debounced batches of changes to its listener.

    A change whose last event left its content complete (a file closed after writing,
    or renamed into place: `FsEvent.final`) wakes the debounce thread and is emitted at
    once, with whatever else is due. Any other (a file created and still open, a
    deletion, a move's source, which an editor's save may undo a moment later) is emitted
    once its (source, key, is_dir) has been quiet for `settle` seconds, or `ceiling`
    seconds after its first event, so a steady writer is not starved. Every
    ROOT_CHECK_SECONDS the same thread checks each root: a root whose watch ended (it was
    deleted) or whose path now holds another directory (it was moved away, or replaced)
    is unwatched, and a missing root is watched again once a directory is at its path,
    then the listener's `on_rewatched(source)` asks for the rescan that covers what
    happened meanwhile.
    """

    def __init__(
        self,
        folders: Sequence[FolderSource],
        listener: WatchListener,
        *,
        settle: float = 0.3,
        ceiling: float = 5.0,
        included: Callable[[str, str], bool] | None = None,
    ) -> None:
        self._roots = [_Root(folder) for folder in folders]
        # Whether a document includes the file `key` of `source`, which no pattern selects
        # (ragd.sources.includes): asked from the debounce thread alone.
        self._included = included
        self._folders = {folder.name: folder for folder in folders}
        self._listener = listener
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
        self._next_root_check = 0.0
        # Held while roots are checked, and by stop() while it stops watching: a check
        # cut short by the stop would take every root for vanished. Reentrant, as an
        # on_rewatched callback may call stop().
        self._checking = threading.RLock()
        self._root_deleted = False  # a root's deletion was seen: check the roots at once

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
                    self._arm(root)
                except OSError as exc:  # ENOSPC (the watch limit), a missing root
                    self._unwatchable(root, exc)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, flush pending changes to the listener and join the threads."""
        with self._lock:
            if not self._started or self._stopped:
                return
            self._stopped = True
        with self._checking:
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
                if event.dir_deleted:  # a root's own deletion, most likely
                    self._root_deleted = True
                    self._final_seen.set()
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

    # Roots: armed by start(), then checked by the debounce thread.

    def _arm(self, root: _Root) -> None:
        """Watch a root (OSError if it cannot be). The directory is read before the watch
        is made: were it replaced in between, the next check sees another directory and
        arms again, where reading it after would take the new one for the watched one."""
        directory = root.directory()
        if directory is None:
            raise FileNotFoundError(errno.ENOENT, "no directory at the root's path")
        self._watch.watch(root.real)
        root.armed_on, root.retry = directory, False
        with self._lock:
            if str(root.folder.root) in self._unwatched:
                self._unwatched.remove(str(root.folder.root))

    def _check_roots(self) -> None:
        """Unwatch the roots that are gone or replaced; watch the missing ones that are back.

        A root that vanished is never a delete of everything: rescans refuse a root that
        cannot be listed or suddenly lists nothing, and the rescan asked for once it is
        watched again is one of those.
        """
        with self._checking:
            for root in self._roots:
                if self._stopped:
                    return
                try:
                    self._check_root(root)
                except Exception:  # the next check tries again; the thread must live on
                    logger.exception("checking root %s failed", root.folder.root)

    def _check_root(self, root: _Root) -> None:
        if root.armed_on is not None:
            if self._watch.watches(root.real) and root.directory() == root.armed_on:
                return
            logger.warning(
                "root %s of source %r vanished or was replaced; watching it again "
                "once a directory is there",
                root.folder.root,
                root.folder.name,
            )
            self._watch.unwatch(root.real)  # a root moved away is still watched
            root.armed_on, root.retry = None, True
            self._unwatchable(root, None)
        if not root.retry or root.directory() is None:
            return
        try:
            self._arm(root)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # not a race with a delete
                self._unwatchable(root, exc)
            return
        logger.info("watching root %s of source %r again", root.folder.root, root.folder.name)
        try:
            self._listener.on_rewatched(root.folder.name)
        except Exception:
            logger.exception("on_rewatched callback failed")

    def _unwatchable(self, root: _Root, exc: OSError | None) -> None:
        if exc is not None and exc.errno in (errno.ENOENT, errno.ENOTDIR):
            root.retry = True
            logger.error(
                "cannot watch %s for source %r (%s); watching it once it is a directory",
                root.folder.root,
                root.folder.name,
                exc.strerror,
            )
        elif exc is not None:
            root.retry = False
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
            if self._stopping.is_set():
                break
            now = time.monotonic()
            if self._root_deleted or now >= self._next_root_check:
                self._root_deleted = False
                self._next_root_check = now + ROOT_CHECK_SECONDS
                self._check_roots()
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
                self._listener.on_overflow()
            except Exception:
                logger.exception("on_overflow callback failed")
        changes = [
            Change(source, key, is_dir)
            for source, key, is_dir in sorted(due)
            if self._wanted(source, key, is_dir=is_dir)
        ]
        if changes:
            try:
                self._listener.on_changes(changes)
            except Exception:
                logger.exception("on_changes callback failed for %d changes", len(changes))

    def _wanted(self, source: str, key: str, *, is_dir: bool) -> bool:
        """Apply the source's selection here, off the observer thread, as scan() does.

        A name that is not valid UTF-8 is never a change: no store can hold it as a key
        (the queue's SQLite would refuse the whole batch), and nothing under such a
        directory can be a document. A scan counts those files in status `skipped`.
        """
        folder = self._folders[source]
        if not is_utf8_name(key):
            logger.warning(
                "%s:%s: name is not valid UTF-8; left out (a full scan counts it as skipped)",
                source,
                shown_key(key),
            )
            return False
        if is_dir:
            return folder.descends(key)
        return folder.selects(key) or self._is_included(source, key)

    def _is_included(self, source: str, key: str) -> bool:
        if self._included is None:
            return False
        try:
            return self._included(source, key)
        except Exception:  # a hint lost; the next scan still re-reads what includes it
            logger.exception("%s:%s: could not tell whether a document includes it", source, key)
            return False
