"""ragd.adapters.allocator: glibc's arena limit and trim, through its documented API."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from pathlib import Path

import pytest

from ragd.adapters import allocator

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the adapter does nothing without glibc"
)


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_the_allocator_takes_an_arena_limit() -> None:
    # 8 per core is glibc's own default on 64-bit hosts: the test process stays as it was.
    assert allocator.limit_arenas(8 * (os.cpu_count() or 1)) is True


def test_trim_gives_back_freed_memory_that_free_alone_keeps() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(4096) for _ in range(20_000)]  # 80 MiB, below the mmap threshold
    for block in blocks:
        ctypes.memset(block, 1, 4096)
    for block in blocks[:-1]:  # the last block pins the top of the heap: free cannot shrink it
        libc.free(block)
    before = _rss_kib()

    assert allocator.trim() is True

    assert before - _rss_kib() > 40 * 1024
    libc.free(blocks[-1])
