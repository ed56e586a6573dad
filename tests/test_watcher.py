"""The file watcher, against a real filesystem and a real watchdog (inotify) observer.

Negative assertions ("nothing else arrived") use a cookie, as watchman does: after the
action, make a sentinel directory and wait for its change. A directory's creation is not
final, so it settles; anything the action caused has settled by then, since it happened
first and settles just as fast (or was final, and went out at once).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.observers import Observer

import ragd.adapters.watchdog
import ragd.sources.watcher
from ragd.adapters.watchdog import OVERFLOW_LOGGER
from ragd.sources.folders import FolderSource
from ragd.sources.watcher import Change, Watcher

SETTLE = 0.2  # short, yet wide enough for an editor's save dance on a loaded machine
CEILING = 1.0
QUEUE_LIMIT = Path("/proc/sys/fs/inotify/max_queued_events")


class Recorder:
    """Collects what the watcher hands out, for polling from the test thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches: list[list[Change]] = []
        self.overflow_calls = 0
        self.rewatched: list[str] = []
        self._cookies = 0

    def on_changes(self, changes: list[Change]) -> None:
        with self._lock:
            self.batches.append(list(changes))

    def on_overflow(self) -> None:
        with self._lock:
            self.overflow_calls += 1

    def on_rewatched(self, source: str) -> None:
        with self._lock:
            self.rewatched.append(source)

    def changes(self) -> list[Change]:
        with self._lock:
            return [change for batch in self.batches for change in batch]

    def count(self, key: str, *, is_dir: bool = False) -> int:
        return sum(1 for c in self.changes() if c.key == key and c.is_dir == is_dir)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out; changes so far: {self.changes()}")
            time.sleep(0.02)

    def wait_change(self, key: str, *, is_dir: bool = False, timeout: float = 5.0) -> None:
        self.wait_for(lambda: self.count(key, is_dir=is_dir) > 0, timeout)

    def sync(self, root: Path) -> None:
        """Make a cookie directory and wait for it: everything done before it has settled."""
        self._cookies += 1
        name = f"cookie-{self._cookies}"
        (root / name).mkdir()
        self.wait_change(name, is_dir=True)
        time.sleep(2 * ragd.sources.watcher.TICK_SECONDS)  # same-tick stragglers land too

    def non_cookie_changes(self) -> list[Change]:
        return [c for c in self.changes() if not c.key.startswith("cookie-")]


def docs_source(root: Path, name: str = "docs") -> FolderSource:
    return FolderSource(name, root, ("**/*.md",), ("drafts/",))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "docs"
    path.mkdir()
    return path


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def start_watcher(recorder: Recorder) -> Iterator[Callable[..., Watcher]]:
    """Start a Watcher over the given roots (settle 0.2 s, ceiling 1 s unless given)."""
    started: list[Watcher] = []

    def start(*roots: Path, **kwargs: Any) -> Watcher:
        kwargs.setdefault("settle", SETTLE)
        kwargs.setdefault("ceiling", CEILING)
        folders = [docs_source(r, f"docs{i}" if i else "docs") for i, r in enumerate(roots)]
        watcher = Watcher(folders, recorder, **kwargs)
        watcher.start()
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        watcher.stop()


def test_new_file_yields_one_change(root: Path, recorder: Recorder, start_watcher: Any) -> None:
    start_watcher(root)

    (root / "a.md").write_text("hello")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_in_place_edit_yields_one_change(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.md").write_text("v1")
    start_watcher(root)

    with (root / "sub" / "a.md").open("a") as f:
        f.write(" v2")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "sub/a.md", is_dir=False)]


def test_delete_yields_one_change(root: Path, recorder: Recorder, start_watcher: Any) -> None:
    (root / "a.md").write_text("v1")
    start_watcher(root)

    (root / "a.md").unlink()
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_atomic_save_yields_one_change_for_the_target_only(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "a.md").write_text("v1")
    start_watcher(root, settle=1.0, ceiling=2.0)  # a slow moment must not split one save

    tmp = root / ".a.md.tmp123"
    with tmp.open("w") as f:
        f.write("v2")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / "a.md")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_vim_style_save_yields_one_change(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "a.md").write_text("v1")
    start_watcher(root, settle=1.0, ceiling=2.0)  # a slow moment must not split one save

    os.rename(root / "a.md", root / "a.md~")
    (root / "a.md").write_text("v2")
    (root / "a.md~").unlink()
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_unselected_and_excluded_paths_yield_nothing(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "drafts").mkdir()
    start_watcher(root)

    (root / "notes.txt").write_text("x")
    (root / "drafts" / "wip.md").write_text("x")
    (root / "drafts" / "deeper").mkdir()
    (root / "drafts" / "deeper" / "more.md").write_text("x")
    os.rename(root / "drafts" / "wip.md", root / "drafts" / "wip2.md")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == []


def test_an_unselected_file_a_document_includes_yields_a_change(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    included = {("docs", "src/app.py")}
    (root / "src").mkdir()
    start_watcher(root, included=lambda source, key: (source, key) in included)

    (root / "src" / "app.py").write_text("x")
    (root / "src" / "other.py").write_text("x")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "src/app.py", is_dir=False)]


def test_move_to_an_unselected_name_reports_the_source_key(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "a.md").write_text("v1")
    start_watcher(root)

    os.rename(root / "a.md", root / "a.bak")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_directory_moved_out_reports_the_directory(
    root: Path, tmp_path: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "guide").mkdir()
    (root / "guide" / "a.md").write_text("x")
    start_watcher(root)

    os.rename(root / "guide", tmp_path / "elsewhere")
    # watchdog holds an unpaired move-out for 0.5 s before reporting it as a delete
    recorder.wait_change("guide", is_dir=True)

    assert recorder.count("guide", is_dir=True) == 1


def test_directory_moved_in_reports_the_directory(
    root: Path, tmp_path: Path, recorder: Recorder, start_watcher: Any
) -> None:
    outside = tmp_path / "incoming"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "b.md").write_text("x")
    start_watcher(root)

    os.rename(outside, root / "guide")
    recorder.wait_change("guide", is_dir=True)

    assert recorder.count("guide", is_dir=True) == 1


def test_directory_renamed_inside_the_root_reports_both_ends(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "old").mkdir()
    (root / "old" / "a.md").write_text("x")
    start_watcher(root)

    os.rename(root / "old", root / "new")
    recorder.sync(root)

    assert recorder.count("old", is_dir=True) == 1
    assert recorder.count("new", is_dir=True) == 1


def test_a_file_closed_after_writing_is_emitted_without_waiting_to_settle(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    start_watcher(root, settle=30.0, ceiling=30.0)

    (root / "a.md").write_text("done")

    recorder.wait_change("a.md", timeout=10.0)  # a third of the settle period
    assert recorder.changes() == [Change("docs", "a.md", is_dir=False)]


def test_a_file_renamed_into_place_is_emitted_without_waiting_to_settle(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    temp = root / ".a.md.tmp"
    temp.write_text("done")
    start_watcher(root, settle=30.0, ceiling=30.0)

    os.replace(temp, root / "a.md")

    recorder.wait_change("a.md", timeout=10.0)  # a third of the settle period
    assert recorder.changes() == [Change("docs", "a.md", is_dir=False)]


def test_a_final_change_wakes_the_watcher_before_its_tick(
    root: Path, recorder: Recorder, start_watcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ragd.sources.watcher, "TICK_SECONDS", 30.0)
    start_watcher(root, settle=30.0, ceiling=30.0)
    time.sleep(0.1)  # the debounce thread is now waiting out its 30 s tick

    (root / "a.md").write_text("done")

    recorder.wait_change("a.md", timeout=5.0)
    assert recorder.changes() == [Change("docs", "a.md", is_dir=False)]


def test_a_file_still_being_written_waits_until_it_is_closed(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    start_watcher(root, settle=30.0, ceiling=30.0)
    with (root / "a.md").open("w") as writing:
        writing.write("# Half")
        writing.flush()
        time.sleep(0.5)  # ten ticks: a final event would have gone out
        assert recorder.changes() == []
        writing.write(" and the rest\n")

    recorder.wait_change("a.md", timeout=5.0)
    assert recorder.changes() == [Change("docs", "a.md", is_dir=False)]


def test_a_deletion_waits_to_settle_as_an_editor_may_put_the_file_back(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    (root / "a.md").write_text("v1")
    start_watcher(root, settle=0.5, ceiling=2.0)

    (root / "a.md").unlink()
    time.sleep(0.2)
    assert recorder.changes() == []
    (root / "a.md").write_text("v2")  # put back: the final close sends the one change

    recorder.wait_change("a.md", timeout=5.0)
    recorder.sync(root)
    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_many_writes_within_the_settle_window_yield_one_change(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    start_watcher(root, settle=0.5)

    with (root / "a.md").open("a") as f:  # one writer, flushing as it goes
        for i in range(20):
            f.write(f"line {i}\n")
            f.flush()
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "a.md", is_dir=False)]


def test_continuous_writer_is_emitted_before_it_stops(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    start_watcher(root, settle=0.1, ceiling=0.5)
    seen_while_writing = False

    end = time.monotonic() + 20 * 0.5  # twenty ceilings
    with (root / "log.md").open("a") as log:  # held open: never final, so it settles
        while not seen_while_writing and time.monotonic() < end:
            log.write("tick\n")
            log.flush()
            seen_while_writing = recorder.count("log.md") > 0
            time.sleep(0.05)

    assert seen_while_writing


@pytest.fixture
def lower_inotify_queue() -> Iterator[Callable[[], None] | None]:
    """Set max_queued_events to 64; yields a function restoring the old value early.

    The limit is system wide but read when an inotify instance is created, so the test
    restores it as soon as its watcher has started. Yields None when /proc/sys is not
    writable (not root).
    """
    try:
        old = QUEUE_LIMIT.read_text()
        QUEUE_LIMIT.write_text("64")
    except OSError:
        yield None
        return

    def restore() -> None:
        if QUEUE_LIMIT.read_text() != old:
            QUEUE_LIMIT.write_text(old)

    try:
        yield restore
    finally:
        restore()


# The watcher runs in a child process so the test can SIGSTOP it: the kernel keeps
# queueing while nothing reads, so the overflow is certain rather than a race against
# watchdog's reader thread (which, in-process, keeps up with a Python writer).
OVERFLOW_CHILD = """
import sys, threading
from pathlib import Path
from ragd.sources.folders import FolderSource
from ragd.sources.watcher import Watcher

told = threading.Event()
class Told:
    def on_changes(self, changes): pass
    def on_overflow(self): told.set()
    def on_rewatched(self, source): pass

watcher = Watcher(
    [FolderSource("docs", Path(sys.argv[1]), ("**/*.md",))], Told(), settle=0.1, ceiling=1.0
)
watcher.start()
print("ready", flush=True)
sys.stdin.readline()
told.wait(5)
print(f"{told.is_set()} {watcher.health().overflows}", flush=True)
watcher.stop()
"""


def test_queue_overflow_is_detected_and_reported(
    root: Path, lower_inotify_queue: Callable[[], None] | None
) -> None:
    # With the queue at 64 events, 2,000 files (2 events each) overflow it 60 times over;
    # without root, 10,000 files (20,000 events) still overflow the default 16,384.
    files = 2_000 if lower_inotify_queue is not None else 10_000
    with subprocess.Popen(
        [sys.executable, "-c", OVERFLOW_CHILD, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "ready"
            if lower_inotify_queue is not None:
                lower_inotify_queue()  # the child's inotify instance has the small queue
            os.kill(child.pid, signal.SIGSTOP)
            try:
                for i in range(files):
                    (root / f"f{i}.txt").write_bytes(b"x")
            finally:
                os.kill(child.pid, signal.SIGCONT)
            child.stdin.write("go\n")
            child.stdin.flush()
            told, overflows = child.stdout.readline().split()
            assert child.wait(timeout=10) == 0
        finally:
            if child.poll() is None:
                child.kill()

    assert told == "True"
    assert int(overflows) >= 1


def test_overflow_is_heard_even_when_watchdog_logging_is_silenced(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    watchdog_logger = logging.getLogger("watchdog")
    saved = watchdog_logger.level
    watchdog_logger.setLevel(logging.ERROR)
    try:
        watcher = start_watcher(root)
        # The exact record watchdog 7.1 logs on IN_Q_OVERFLOW (inotify_c.handle_event).
        logging.getLogger(OVERFLOW_LOGGER).warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        recorder.wait_for(lambda: recorder.overflow_calls == 1)
        assert watcher.health().overflows == 1
        watcher.stop()
        overflow_logger = logging.getLogger(OVERFLOW_LOGGER)
        assert overflow_logger.level == logging.NOTSET
        assert overflow_logger.handlers == []
    finally:
        watchdog_logger.setLevel(saved)


def test_a_root_hitting_the_watch_limit_is_reported_and_others_still_work(
    tmp_path: Path, recorder: Recorder, start_watcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    full, fine = tmp_path / "full", tmp_path / "fine"
    full.mkdir()
    fine.mkdir()

    class LimitedObserver(Observer):  # type: ignore[misc, valid-type]
        def schedule(self, handler: Any, path: Any, **kwargs: Any) -> Any:
            if Path(path) == full:
                raise OSError(errno.ENOSPC, "inotify watch limit reached")
            return super().schedule(handler, path, **kwargs)

    monkeypatch.setattr(ragd.adapters.watchdog, "Observer", LimitedObserver)
    watcher = start_watcher(full, fine)

    (fine / "a.md").write_text("x")
    recorder.wait_change("a.md")

    health = watcher.health()
    assert health.unwatched_roots == (str(full),)
    assert health.watching


def test_removing_the_root_is_not_reported_as_a_delete(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    watcher = start_watcher(root)

    os.rmdir(root)
    recorder.wait_for(lambda: watcher.health().unwatched_roots == (str(root),))

    assert recorder.changes() == []
    assert not watcher.health().watching


def test_a_root_deleted_and_restored_is_watched_again_and_rescanned(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    watcher = start_watcher(root)
    shutil.rmtree(root)
    recorder.wait_for(lambda: watcher.health().unwatched_roots == (str(root),))

    root.mkdir()
    recorder.wait_for(lambda: recorder.rewatched == ["docs"])
    (root / "back.md").write_text("x")
    recorder.wait_change("back.md")

    health = watcher.health()
    assert health.unwatched_roots == ()
    assert health.watching


def test_a_root_moved_away_and_made_again_is_watched_at_its_path(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    watcher = start_watcher(root)
    moved = root.with_name("docs.old")
    root.rename(moved)
    root.mkdir()
    recorder.wait_for(lambda: recorder.rewatched == ["docs"])

    (root / "new.md").write_text("x")
    (moved / "old.md").write_text("x")  # no longer the root: nothing of it is reported
    recorder.wait_change("new.md")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "new.md", is_dir=False)]
    assert watcher.health().unwatched_roots == ()


def test_a_root_missing_at_start_is_watched_once_it_exists(
    tmp_path: Path, recorder: Recorder, start_watcher: Any
) -> None:
    root = tmp_path / "later"
    watcher = start_watcher(root)
    assert watcher.health().unwatched_roots == (str(root),)

    root.mkdir()
    recorder.wait_for(lambda: recorder.rewatched == ["docs"])
    (root / "a.md").write_text("x")
    recorder.wait_change("a.md")

    assert watcher.health().unwatched_roots == ()


def test_a_root_beyond_the_watch_limit_is_not_retried(
    tmp_path: Path, recorder: Recorder, start_watcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    full, fine = tmp_path / "full", tmp_path / "fine"
    full.mkdir()
    fine.mkdir()
    attempts: list[Path] = []

    class LimitedObserver(Observer):  # type: ignore[misc, valid-type]
        def schedule(self, handler: Any, path: Any, **kwargs: Any) -> Any:
            if Path(path) == full:
                attempts.append(full)
                raise OSError(errno.ENOSPC, "inotify watch limit reached")
            return super().schedule(handler, path, **kwargs)

    monkeypatch.setattr(ragd.adapters.watchdog, "Observer", LimitedObserver)
    watcher = start_watcher(full, fine)
    # Several root checks go by: each retry would walk the whole tree again, in vain.
    time.sleep(3 * ragd.sources.watcher.ROOT_CHECK_SECONDS)
    recorder.sync(fine)

    assert attempts == [full]
    assert watcher.health().unwatched_roots == (str(full),)
    assert recorder.rewatched == []


def test_names_that_are_not_utf8_yield_no_change_and_leave_the_rest_of_the_batch(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    start_watcher(root)
    latin1_dir = os.path.join(os.fsencode(root), b"caf\xe9")
    os.mkdir(latin1_dir)
    with open(os.path.join(latin1_dir, b"menu.md"), "wb") as inside:
        inside.write(b"x")
    with open(os.path.join(os.fsencode(root), b"na\xefve.md"), "wb") as latin1_file:
        latin1_file.write(b"x")
    (root / "plain.md").write_text("x")

    recorder.wait_change("plain.md")
    recorder.sync(root)

    assert recorder.non_cookie_changes() == [Change("docs", "plain.md", is_dir=False)]


def test_stop_flushes_pending_changes_and_is_idempotent(
    root: Path, recorder: Recorder, start_watcher: Any
) -> None:
    # Waiting out an hour's settle period, stop would fail on the test's timeout.
    watcher = start_watcher(root, settle=3600.0, ceiling=3600.0)
    with (root / "a.md").open("w") as still_open:  # created, not closed: not final
        still_open.write("x")
        still_open.flush()
        # Nothing observable happens before the flush, so give inotify a moment to deliver.
        time.sleep(0.3)
        assert recorder.changes() == []

        watcher.stop()
        watcher.stop()

    assert recorder.batches == [[Change("docs", "a.md", is_dir=False)]]
    assert not watcher.health().watching


def test_an_exception_in_on_changes_does_not_stop_later_batches(
    root: Path, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0
    on_changes = recorder.on_changes

    def flaky(changes: list[Change]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("indexer exploded")
        on_changes(changes)

    recorder.on_changes = flaky  # type: ignore[method-assign]
    watcher = Watcher([docs_source(root)], recorder, settle=SETTLE)
    watcher.start()
    try:
        (root / "first.md").write_text("x")
        recorder.wait_for(lambda: calls == 1)
        (root / "second.md").write_text("x")
        recorder.wait_change("second.md")
    finally:
        watcher.stop()

    assert any(
        r.name == "ragd.watcher" and "on_changes callback failed" in r.getMessage()
        for r in caplog.records
    )


def test_a_root_check_that_raises_leaves_the_watcher_running(
    root: Path, recorder: Recorder, start_watcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = 0
    check_root = Watcher._check_root

    def failing_once(self: Watcher, checked: Any) -> None:
        nonlocal checks
        checks += 1
        if checks == 1:
            raise RuntimeError("a bug in a check")
        check_root(self, checked)

    monkeypatch.setattr(Watcher, "_check_root", failing_once)
    start_watcher(root)
    recorder.wait_for(lambda: checks > 1)

    (root / "after.md").write_text("x")

    recorder.wait_change("after.md")
