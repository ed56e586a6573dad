"""Second-stage vectors: embedding what the first stage's writes left to do.

A pass writes every chunk's first-stage vector at once and, where the second-stage model
embedded the same text before, its stored second-stage vector too (ragd.indexing.batches).
What is left (chunks whose text this model has never seen) is this module's: embed it,
write its rows to the second-stage table, then store the vectors under their keys. Rows
before keys: a crash between leaves rows no stored vector vouches for, and the next fill
embeds those texts again and writes the same rows (an upsert, so no duplicates); never a
stored vector without its rows.

The work comes in three steps, so that the daemon can embed off the writer thread:
`SecondStageWork` rows are read (any manifest connection), `embed` computes (slow, touches
no store), `SecondStageWriter.write` writes (the writer only). `fill` runs all three until
nothing is left, for `ragd index`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragd.embedding import Embedder, Matrix
from ragd.errors import RagdError, StoreError
from ragd.indexing.chunking import labelled_text
from ragd.stores.data_dir import WriterStores
from ragd.stores.manifest_reader import SecondStageWork
from ragd.stores.vectors import VectorRow, VectorStore

# Texts per step of `fill`: each step writes once (a LanceDB commit and a manifest
# transaction); at ~30 texts/s on 2 cores a step is several seconds of embedding.
FILL_BATCH = 256


@dataclass(frozen=True)
class Embedded:
    """Second-stage vectors of distinct keys, row i of `vectors` for `keys[i]`."""

    keys: tuple[str, ...]
    vectors: Matrix


def embed(work: Sequence[SecondStageWork], embedder: Embedder) -> Embedded:
    """Embed each distinct text of `work` once (chunks of equal text share a key)."""
    texts: dict[str, str] = {}
    for item in work:
        texts.setdefault(item.second_key, labelled_text(item.title, item.heading_path, item.text))
    if not texts:
        return Embedded((), np.zeros((0, 0), dtype=np.float32))
    vectors = embedder.embed(list(texts.values()))
    if vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
        raise RagdError(
            f"the second-stage model returned unusable vectors (shape {vectors.shape} for "
            f"{len(texts)} texts, or non-finite values)"
        )
    return Embedded(tuple(texts), vectors)


class SecondStageWriter:
    """Writes embedded second-stage vectors: the rows of every chunk that holds one of
    their keys now (a chunk replaced meanwhile has another key or is gone), then the
    vectors under their keys."""

    def __init__(self, stores: WriterStores) -> None:
        self.stores = stores

    def write(self, embedded: Embedded) -> int:
        """Write one batch; the number of chunk rows written."""
        if not embedded.keys:
            return 0
        manifest = self.stores.manifest
        vector_of = dict(zip(embedded.keys, embedded.vectors, strict=True))
        rows = [
            VectorRow(chunk_id, doc_id, vector_of[key])
            for chunk_id, doc_id, key in manifest.second_stage_rows(embedded.keys)
        ]
        table = self.stores.second_vectors(embedded.vectors.shape[1])
        if table is None:
            raise StoreError("second-stage vectors were written with the second stage off")
        if rows:
            table.upsert(rows)
        manifest.store_vectors(vector_of)
        return len(rows)


@dataclass
class FillReport:
    """What a fill did."""

    embedded: int = 0
    seconds: float = 0.0
    pending: int = 0  # left when it was stopped


ProgressFn = Callable[[int, int], None]


def fill(
    stores: WriterStores,
    embedder: Embedder,
    *,
    settle: Callable[[VectorStore], None],
    batch: int = FILL_BATCH,
    progress: ProgressFn | None = None,
    stop: Callable[[], bool] | None = None,
) -> FillReport:
    """Embed and write every missing second-stage vector, `batch` texts at a time, calling
    `progress(done, total)` after each; stops early when `stop()` says so. When it wrote
    any, `settle` tidies the table (compaction, index) and unused vectors are pruned."""
    report = FillReport()
    started = time.monotonic()
    manifest = stores.manifest
    writer = SecondStageWriter(stores)
    total = left = manifest.second_stage_missing_count()
    after: tuple[str, int] | None = None
    while left and not (stop is not None and stop()):
        work = manifest.second_stage_missing(batch, after)
        if not work:
            if after is None:
                break  # counted, but none to read: never spin
            after = None  # chunks before the resume point may be new: one more sweep
            continue
        after = work[-1].position
        embedded = embed(work, embedder)
        writer.write(embedded)
        report.embedded += len(embedded.keys)
        # Counted, not summed: a text's vector serves every chunk that holds it.
        left = manifest.second_stage_missing_count()
        if progress is not None:
            progress(total - left, total)
    report.pending = left
    if report.embedded:
        if (table := stores.second_vectors()) is not None:
            settle(table)
        manifest.prune_vectors()
    report.seconds = time.monotonic() - started
    return report
