"""The process's LanceDB: importing lancedb, and the one session every table handle shares.

lancedb is ~0.5 s of pure-Python import. Commands that never touch vectors must not pay
for it, so nothing imports it at module level: `import_lancedb` does, the first time a
store opens (or on a thread, `import_in_background`, for a pass that will write soon),
and `session` holds LanceDB's caches with bounds.

Imports nothing from ragd.
"""

from __future__ import annotations

import gc
import sys
from functools import lru_cache
from importlib import import_module
from importlib.util import find_spec, module_from_spec
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
    """lancedb, imported the first time without its REST namespace client's API classes.

    lancedb (and lance_namespace) import the request and response models of that generated
    client, `lance_namespace_urllib3_client.models`; the package's own `__init__` also
    imports every REST API class, each method wrapped in `pydantic.validate_call`, for code
    a local table never runs. So the package is registered without running its `__init__`,
    and its subpackages import as usual: 0.45 s instead of 0.66 on the reference machine.
    A lancedb that needs the package's own names gets it whole (`import_skipping_init`).

    The import leaves ~100k objects (pydantic schemas, most of them) that live as long as
    the process, and every full garbage collection would walk them again: 0.12 s each, 1.1
    of the 1.6 s a full tldr pass spent collecting, and 0.3 s more at exit. So everything
    alive after the import is frozen (`gc.freeze`): still freed when its last reference
    goes, never again walked for cycles.
    """
    with _IMPORT_LOCK:
        if "lancedb" in sys.modules:
            return sys.modules["lancedb"]
        lancedb = import_skipping_init("lancedb", _REST_CLIENT)
        gc.freeze()
        return lancedb


def import_skipping_init(name: str, package: str) -> ModuleType:
    """Import module `name` with `package` registered but its `__init__` not run; if that
    import fails, import `name` again with `package` imported whole."""
    spec = None if package in sys.modules else find_spec(package)
    skipped = None if spec is None else module_from_spec(spec)
    if skipped is not None:
        sys.modules[package] = skipped  # its subpackages import as usual
    try:
        return import_module(name)
    except ImportError:
        if skipped is None or sys.modules.get(package) is not skipped:
            raise
        # Its submodules too: bound to the skipped package, they would not be attributes
        # of the whole one.
        for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[loaded]
        return import_module(name)


def import_in_background() -> None:
    """Start importing lancedb on a thread, for a caller that is about to wait anyway.

    The import is ~0.5 s of pure-Python work; a big pass waits about that long for its
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
