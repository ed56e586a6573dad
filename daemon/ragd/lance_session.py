"""The process's LanceDB: importing lancedb, and the one session every table handle shares.

lancedb is ~1 s of pure-Python import. Commands that never touch vectors must not pay
for it, so nothing imports it at module level: `import_lancedb` does, the first time a
store opens (or on a thread, `import_in_background`, for a pass that will write soon),
and `session` holds LanceDB's caches with bounds.

Imports nothing from ragd.
"""

from __future__ import annotations

import gc
import sys
from contextlib import suppress
from functools import lru_cache
from importlib import import_module
from threading import Lock, Thread
from types import ModuleType
from typing import Any

# LanceDB's caches of table metadata and index pages, shared by every handle in a process.
# Its defaults are GiBs: in a 10-minute soak each committed version added ~0.35 MiB that
# was never given back (RSS 345 -> 760 MiB); bounded, RSS levels off. The index cache holds
# an IVF_SQ index of ~1M rows (docs/performance.md).
METADATA_CACHE_BYTES = 64 << 20
INDEX_CACHE_BYTES = 256 << 20

_IMPORT_LOCK = Lock()
# lancedb imports this generated REST client for namespace servers; ragd's local tables never
# call it.
_REST_CLIENT = "lance_namespace_urllib3_client"


def import_lancedb() -> ModuleType:
    """lancedb, imported the first time with its REST namespace client left unvalidated.

    That client wraps each of its methods in `pydantic.validate_call` as it is imported:
    0.55 s of the 1.4 s import on the reference machine, for code a local table never runs.
    So it is imported first, with `validate_call` a pass-through for that import alone;
    lancedb itself (which does not use `validate_call`) then imports as usual.

    The import leaves ~100k objects (pydantic schemas, most of them) that live as long as
    the process, and every full garbage collection would walk them again: 0.12 s each, 1.1
    of the 1.6 s a full tldr pass spent collecting, and 0.3 s more at exit. So everything
    alive after the import is frozen (`gc.freeze`): still freed when its last reference
    goes, never again walked for cycles.
    """
    with _IMPORT_LOCK:  # one thread patches and restores `validate_call`
        if "lancedb" in sys.modules:
            return sys.modules["lancedb"]
        if _REST_CLIENT not in sys.modules:
            import pydantic

            validate_call = pydantic.validate_call
            pydantic.validate_call = _pass_through
            try:
                with suppress(ImportError):  # a lancedb that no longer bundles it
                    import_module(_REST_CLIENT)
            finally:
                pydantic.validate_call = validate_call
        lancedb = import_module("lancedb")
        gc.freeze()
        return lancedb


def _pass_through(func: Any = None, /, **_: Any) -> Any:
    """`pydantic.validate_call`'s signature, returning the function undecorated."""
    return func if func is not None else (lambda inner: inner)


def import_in_background() -> None:
    """Start importing lancedb on a thread, for a caller that is about to wait anyway.

    The import is ~1 s of pure-Python work; a big pass waits about that long for its
    worker's first documents, so the import is done before the first write needs it.
    """
    Thread(target=import_lancedb, name="import-lancedb", daemon=True).start()


@lru_cache(maxsize=1)
def session() -> Any:
    """The process's one LanceDB session, with bounded caches."""
    lancedb = import_lancedb()
    return lancedb.Session(
        index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES
    )
