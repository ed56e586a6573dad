"""Ray behind one adapter: embedding a list of texts on a Ray cluster with Ray Data, through
Lance datasets at a scratch location.

Owns every call into ray and lance_ray (Lance's own Ray integration): starting or joining
a cluster, the job that embeds, and the scratch datasets it reads and writes (the driver
writes and reads them as LanceDB tables, `ragd.adapters.lancedb`'s scratch tables: a table
of a LanceDB database is the Lance dataset lance_ray reads and writes). What to embed and
what the vectors mean is the caller's (ragd.indexing.reembed.bulk); this module sees keys,
texts and an encoder.

The job, per call of `RaySession.embed`:

1. the work list (embed_key, text) is written as a Lance dataset at the scratch location
   (a local directory or an s3:// prefix every node can reach);
2. Ray Data reads it with `lance_ray.read_lance` and sends batches through a pool of
   actors, each of which unpickles the encoder once and loads its model on its first batch;
3. the actors' (embed_key, vector) rows are written with `lance_ray.write_lance`;
4. the driver reads them back in batches (lancedb), checks that every key came back exactly
   once, and drops both datasets.

The datasets are named per job, so a crashed run's leftovers are dropped by the next run
at the same location. ray and lance_ray are the optional extra `ragd[ray]` (lance_ray
brings lance, pylance on PyPI, which only the cluster's side of the job uses),
imported when a session starts; without them that is one UsageError with the install
hint. A model is shipped to the cluster by pickling the encoder (ragd's embedders pickle
without their loaded weights), so every node needs ragd installed and the model at the
same path (or its hub id reachable).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from ragd.adapters.lancedb import drop_scratch_table, scratch_batches, write_scratch_table
from ragd.errors import RagdError, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

Matrix = npt.NDArray[np.float32]
INSTALL_HINT = "install the extra: pip install -e '.[ray]'"
# Rows per batch a model actor embeds (and per batch read back): big enough that a batch's
# fixed cost (a Ray task, an Arrow table) is small beside its embedding.
BATCH_ROWS = 256


class TextEncoder(Protocol):
    """What the actors need of a model: vectors for texts, one float32 row each. It is
    pickled to the cluster, so it should carry how to load the model, not the model."""

    def embed(self, texts: Sequence[str]) -> Matrix: ...


@dataclass(frozen=True)
class RayCluster:
    """Where the job runs: the cluster at `address` ("ray://host:10001", "host:6379" or
    "auto"), or with no address a Ray started in this process on `num_cpus` CPUs (all of
    the machine's when None). `workers` caps the model actors (default: one per CPU of the
    cluster but one, which the reads and writes of the job need)."""

    address: str | None = None
    num_cpus: int | None = None
    workers: int | None = None


@dataclass(frozen=True)
class Scratch:
    """Where the job's datasets live while it runs: a local directory or an s3:// URI (a
    string), and the object store's options (endpoint, credentials) as lance and lancedb
    take them."""

    uri: str
    storage_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def database(self) -> str:
        """The URI of the LanceDB database whose tables are the job's datasets."""
        return self.uri.rstrip("/")

    def dataset(self, name: str) -> str:
        """The URI of table `name`'s dataset, as lance_ray reads and writes it."""
        return f"{self.database}/{name}.lance"

    @property
    def options(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None


class RaySession:
    """A Ray cluster joined (or a local one started) for the life of a `with` block."""

    def __init__(self, cluster: RayCluster, scratch: Scratch) -> None:
        self.cluster = cluster
        self.scratch = scratch
        self._ray: Any = None

    def __enter__(self) -> RaySession:
        ray = _import_extra()
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,  # the workers' logs stay in the cluster's log files
            # Ray's start-up notes (token authentication...) say nothing to a ragd user;
            # its session logs keep everything.
            "logging_level": logging.ERROR,
        }
        if self.cluster.address is None:
            kwargs["num_cpus"] = self.cluster.num_cpus
        with _quiet():
            try:
                ray.init(address=self.cluster.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.cluster.address or "a local Ray"
                raise RagdError(
                    f"cannot start or join the Ray cluster ({where}): {exc}",
                    hint="check the cluster's address (--ray-address), or run without --ray",
                ) from exc
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # the caller reports progress its own way
        context.print_on_execution_start = False
        # Ray Data logs each job's start and end to the console too: errors only there.
        for handler in logging.getLogger("ray.data").handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            ):
                handler.setLevel(logging.ERROR)
        self._ray = ray
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._ray is not None:
            self._ray.shutdown()
            self._ray = None

    def embed(
        self, name: str, keys: Sequence[str], texts: Sequence[str], encoder: TextEncoder
    ) -> Iterator[tuple[list[str], Matrix]]:
        """Embed `texts` (one per distinct key) on the cluster; yield (keys, vectors) in
        batches as they are read back. RagdError if the job fails or a key does not come
        back exactly once (what was yielded before that is right, and may be kept)."""
        if len(keys) != len(texts) or len(set(keys)) != len(keys):
            raise ValueError("one text per distinct key")
        if not keys:
            return
        ray = self._session()
        import lance_ray
        import pyarrow as pa

        work, vectors = f"{name}-work", f"{name}-vectors"
        database, options = self.scratch.database, self.scratch.options
        try:
            with _quiet(), _job_errors(name):
                for table_name in (work, vectors):  # a crashed run's
                    drop_scratch_table(database, options, table_name)
                table = pa.table({"embed_key": list(keys), "text": list(texts)})
                write_scratch_table(database, options, work, table)
                cpus = int(ray.cluster_resources().get("CPU", 1))
                actors = self.cluster.workers or max(1, cpus - 1)
                work_uri = self.scratch.dataset(work)
                rows = lance_ray.read_lance(work_uri, storage_options=options).map_batches(
                    EmbedTexts,
                    fn_constructor_args=(encoder,),
                    batch_format="pyarrow",
                    batch_size=min(BATCH_ROWS, math.ceil(len(keys) / actors)),
                    compute=ray.data.ActorPoolStrategy(min_size=1, max_size=actors),
                    num_cpus=1,
                )
                lance_ray.write_lance(rows, self.scratch.dataset(vectors), storage_options=options)
            yield from _read_back(self.scratch, vectors, set(keys))
        finally:
            with _quiet(), _job_errors(name):
                for table_name in (work, vectors):
                    drop_scratch_table(database, options, table_name)
            _remove_if_empty(self.scratch.uri)

    def _session(self) -> Any:
        if self._ray is None:
            raise RuntimeError("RaySession.embed outside its `with` block")
        return self._ray


def _import_extra() -> Any:
    """ray, once ray.data and lance_ray (which imports lance) are known to import too;
    UsageError with the install hint when the extra is missing. Ray first: without it,
    nothing of the extra is imported."""
    try:
        with _quiet():
            ray = importlib.import_module("ray")
            for name in ("ray.data", "lance_ray"):
                importlib.import_module(name)
    except ImportError as exc:
        raise UsageError(
            f"Ray is not installed ({exc.name} is missing)", hint=INSTALL_HINT
        ) from exc
    return ray


class EmbedTexts:
    """What each model actor runs: the encoder, unpickled once per actor, loads its model
    on its first batch and keeps it for the rest."""

    def __init__(self, encoder: TextEncoder) -> None:
        self.encoder = encoder

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        texts = [str(text) for text in batch.column("text").to_pylist()]
        matrix = np.ascontiguousarray(self.encoder.embed(texts), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise ValueError(f"the model returned shape {matrix.shape} for {len(texts)} texts")
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1])
        return pa.table({"embed_key": batch.column("embed_key"), "vector": vectors})


def _read_back(
    scratch: Scratch, name: str, expected: set[str]
) -> Iterator[tuple[list[str], Matrix]]:
    """The job's rows in batches; RagdError once a key comes back twice, unasked, or not."""
    seen: set[str] = set()
    columns = ["embed_key", "vector"]
    batches = scratch_batches(scratch.database, scratch.options, name, columns, BATCH_ROWS)
    while True:
        with _job_errors("read back"):
            batch = next(batches, None)
        if batch is None:
            break
        keys = [str(key) for key in batch.column("embed_key").to_pylist()]
        column = batch.column("vector")
        dim = column.type.list_size
        matrix = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        odd = [key for key in keys if key in seen or key not in expected]
        if odd:
            raise RagdError(f"the Ray job returned embedding key {odd[0]!r} twice or unasked")
        seen.update(keys)
        yield keys, matrix.reshape(len(keys), dim)
    if len(seen) != len(expected):
        raise RagdError(
            f"the Ray job returned {len(seen)} of {len(expected)} vectors",
            hint="run `ragd reembed` again: the vectors it stored are kept",
        )


@contextmanager
def _job_errors(step: str) -> Iterator[None]:
    """A failed Ray job or Lance read/write as one RagdError naming the step."""
    try:
        yield
    except (OSError, RuntimeError, ValueError) as exc:
        first_line = (str(exc).splitlines() or [""])[0]
        raise RagdError(
            f"the Ray embedding job failed ({step}): {type(exc).__name__}: {first_line}"
        ) from exc
    except Exception as exc:  # ray.exceptions.RayError and kin share no base with the above
        if type(exc).__module__.split(".")[0] != "ray":
            raise
        first_line = (str(exc).splitlines() or [""])[0]
        raise RagdError(
            f"the Ray embedding job failed ({step}): {type(exc).__name__}: {first_line}"
        ) from exc


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence warnings that say nothing to a ragd user: Ray's deprecation notices
    (lance_ray passes ray_remote_args along), and lance's and lancedb's notes that they are
    not fork-safe, which Ray's start-up triggers by forking its processes straight into
    exec (nothing of either runs in the child)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        warnings.filterwarnings("ignore", message="lancedb fork support is experimental")
        yield


def _remove_if_empty(uri: str) -> None:
    """Remove a local scratch directory the job left empty (an object store has no
    directories to remove)."""
    if "://" in uri and not uri.startswith("file://"):
        return
    # Not empty (the caller keeps something there) or already gone: left as it is.
    with contextlib.suppress(OSError):
        Path(uri.removeprefix("file://")).rmdir()
