"""A read run in a forked child: its value, its errors and its cancellation."""

from __future__ import annotations

import os
import time

import pytest

from ragd.errors import StoreError
from ragd.prefetch import ChildRead


def test_the_value_is_read_in_another_process() -> None:
    assert ChildRead.start(os.getpid, "pid").result() != os.getpid()


def test_a_large_value_crosses_the_pipe_whole() -> None:
    ids = {f"chunk-{n:08d}" for n in range(200_000)}

    assert ChildRead.start(lambda: ids, "ids").result() == ids


def test_an_error_in_the_child_is_raised_as_a_store_error_with_its_message() -> None:
    def failing() -> set[str]:
        raise StoreError("cannot open the LanceDB store at /x")

    with pytest.raises(StoreError, match="cannot open the LanceDB store at /x"):
        ChildRead.start(failing, "LanceDB").result()


def test_a_child_that_dies_without_answering_is_reported() -> None:
    def dying() -> set[str]:
        os._exit(3)

    with pytest.raises(StoreError, match="reading LanceDB failed: the helper process died"):
        ChildRead.start(dying, "LanceDB").result()


def test_cancel_stops_a_slow_child_at_once() -> None:
    child = ChildRead.start(lambda: time.sleep(60), "nothing")
    started = time.monotonic()

    child.cancel()

    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)  # gone and reaped: no zombie left behind


def test_cancel_after_the_result_was_taken_does_nothing() -> None:
    child = ChildRead.start(lambda: 7, "seven")

    assert child.result() == 7
    child.cancel()  # nothing left to stop; must not raise on the closed pipe
