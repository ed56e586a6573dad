"""Where re-embedding runs: the `EmbedBackend` seam, on this machine or on a Ray cluster.

A backend turns texts (key -> text, every key distinct) into vectors and hands them back in
batches, so that ragd.indexing.reembed.bulk stores each batch as it comes: a crash loses one
batch at most. `LocalBackend` runs the model in this process, batch by batch. `RayBackend`
sends the whole list to a Ray cluster as one Ray Data job (ragd.adapters.ray: Lance
datasets at a scratch location, one model per actor) and hands back its result as it reads
it; Ray starts on the first stage with something to embed, so a run with nothing to do
never pays for it, and stops when the backend is closed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Protocol

from ragd.adapters.ray import RayCluster, RaySession, Scratch
from ragd.embedding import Embedder, Matrix

Batch = tuple[Sequence[str], Matrix]
"""Keys, and their vectors as the rows of a matrix, in the same order."""

# Texts per model call on this machine, per stage: the first stage embeds thousands a
# second; the second tens, and a stop or a crash should not cost minutes of it.
LOCAL_BATCH = {"first": 1024, "second": 64}


class EmbedBackend(Protocol):
    """Embeds texts for one stage of re-embedding."""

    @property
    def name(self) -> str:
        """What the report calls it ("local", "ray")."""
        ...

    def embed(self, stage: str, texts: Mapping[str, str], embedder: Embedder) -> Iterator[Batch]:
        """Vectors of every text of `texts` by `embedder`, in batches; `stage` ("first",
        "second") names the job. Each key comes back once."""
        ...


class LocalBackend:
    """The model in this process, one batch of texts per call."""

    name = "local"

    def __init__(self, batch: Mapping[str, int] | None = None) -> None:
        self.batch = dict(LOCAL_BATCH if batch is None else batch)

    def embed(self, stage: str, texts: Mapping[str, str], embedder: Embedder) -> Iterator[Batch]:
        keys = list(texts)
        size = self.batch.get(stage, LOCAL_BATCH["first"])
        for start in range(0, len(keys), size):
            part = keys[start : start + size]
            yield part, embedder.embed([texts[key] for key in part])


class RayBackend:
    """A Ray Data job per stage on `cluster`, through datasets at `scratch`; use it in a
    `with` block (Ray is stopped at its end). The embedder is pickled to the cluster
    without its loaded model: each actor loads its own, once."""

    name = "ray"

    def __init__(self, cluster: RayCluster, scratch: Scratch) -> None:
        self.cluster = cluster
        self.scratch = scratch
        self._session: RaySession | None = None

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def embed(self, stage: str, texts: Mapping[str, str], embedder: Embedder) -> Iterator[Batch]:
        if not texts:
            return
        if self._session is None:
            self._session = RaySession(self.cluster, self.scratch).__enter__()
        keys = list(texts)
        yield from self._session.embed(stage, keys, [texts[key] for key in keys], embedder)

    def close(self) -> None:
        """Stop (or leave) Ray, if it was started."""
        if self._session is not None:
            session, self._session = self._session, None
            session.__exit__(None, None, None)


__all__ = ["Batch", "EmbedBackend", "LocalBackend", "RayBackend", "RayCluster", "Scratch"]
