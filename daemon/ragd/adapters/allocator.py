"""The C library's allocator behind one adapter: how many malloc arenas a long-running
process keeps, and handing freed memory back to the system.

By default glibc gives each thread that allocates an arena of its own, up to eight per
core; memory a thread frees stays mapped in its arena for that thread's next allocation.
A daemon's threads (HTTP requests, LanceDB's runtime, the writer, the second-stage
filler) then each keep their high-water mark: RSS grows with the thread count, not with
what is live. Fewer arenas share the freed space, and a trim after a big pass returns
what is free at once rather than when a thread happens to need it.

Both go through glibc's documented API, mallopt(3) and malloc_trim(3), by ctypes. With
another C library (musl, macOS) there is neither: the calls do nothing and say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import platform

# mallopt(3)'s parameter number for the arena limit (glibc's malloc.h).
_M_ARENA_MAX = -8


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The process's glibc, or None under another C library."""
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    return None if name is None else ctypes.CDLL(name)


def limit_arenas(count: int) -> bool:
    """Keep at most `count` malloc arenas from now on (threads share them); True if the
    allocator took the limit. Call it early: arenas made before it stay."""
    libc = _glibc()
    return libc is not None and libc.mallopt(_M_ARENA_MAX, count) == 1


def trim() -> bool:
    """Give free heap memory back to the system; True if the allocator released any."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1
