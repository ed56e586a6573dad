"""Bulk re-embedding: after a model change, embed every chunk text the current models have no
vector for, then switch the stores to the new vectors in one step.

Why not the normal pass: a model change makes every document's fingerprint stale, and a
pass would re-read, re-parse and re-chunk every file only to find the texts the manifest
already holds, then embed them one batch of documents at a time with searches mixing two
models' vectors until the end. Here the manifest's texts are embedded as one job (locally,
or on a Ray cluster: ragd.indexing.reembed.backends) and the switch comes last.

What may switch: a document settled under another fingerprint whose chunk recipe (parser
and chunker versions and settings, `Pipeline.chunk_recipe`, recorded per fingerprint by
the indexer) is the current one, and each of whose chunks rebuilds its embedded text
exactly (the chunk id hashes it). Its chunk ids and texts stay; only its embedding keys and
its fingerprint change. Any other document is left to the normal pass, and counted.

Order, and why a crash at any point is harmless:

1. plan (reads only);
2. embed what is missing, storing the vectors in the content-addressed cache batch by
   batch (a second-stage vector of a chunk that already holds its key has its row written
   first: ragd.indexing.second_stage's rule). A crash loses one batch; the next run plans
   again and finds the rest stored;
3. switch: every re-keyed chunk's first-stage row in one LanceDB commit (an upsert by chunk
   id: the ids are unchanged, so the stores agree throughout), the second stage's likewise,
   then one manifest transaction re-keys the chunks and sets the documents' fingerprint. A
   crash before that transaction leaves rows a re-run (or the normal pass) writes again.

The one case with a window: a first-stage model of another width. The table cannot hold
both, so it is dropped and created again with a row for every chunk (documents left to
the pass get their current chunks' vectors under the new model too, keeping their old
fingerprint). Searches find no vectors between the drop and the commit, and a crash there
leaves the table short until `ragd reembed` runs again: a meta flag (REBUILDING) set before
the drop and cleared after the manifest's switch makes it rebuild even if the new table
exists by then. The writer is marked unclean meanwhile too, so a `ragd index` instead would
reconcile and redo the documents (from stored vectors).

Memory: the switch holds every re-keyed chunk's new vector at once (one commit must carry
them all), about dim x 4 bytes per chunk: 1 GB for a million 256-wide chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import groupby
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from ragd.embedding import Embedder, Matrix
from ragd.errors import RagdError
from ragd.indexing.chunking import labelled_text
from ragd.indexing.passes import settle_vectors
from ragd.indexing.pipeline import Pipeline, chunk_id, embed_key
from ragd.indexing.reembed.backends import EmbedBackend
from ragd.indexing.second_stage import Embedded, SecondStageWriter
from ragd.stores.agreement import compare_ids, reconcile, reconcile_second_stage
from ragd.stores.data_dir import WriterStores
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import SETTLED, ChunkRecord, DocumentRecord
from ragd.stores.vectors import FIRST_STAGE, VectorRow, VectorStore

ProgressFn = Callable[[str, int, int], None]
"""Called as progress(stage, done, total) after each stored batch; stage is "first" or
"second"."""

# Meta key set while the first-stage table is being rebuilt: "1" from before its drop until
# the manifest's switch.
REBUILDING = "reembed_rebuilding"
# Keys whose storage is checked at once while planning: the texts of keys found stored are
# let go, so a plan holds the texts still to embed, not the corpus.
_CHECK_EVERY = 4096


class Rekey(NamedTuple):
    """A chunk's embedding keys after the switch and before it."""

    chunk_id: str
    doc_id: str
    embed_key: str
    second_key: str | None  # None: no second-stage vector (the second stage is off)
    old_key: str
    old_second: str | None


@dataclass
class Plan:
    """What a re-embedding does: texts to embed per stage (key -> text, none stored yet),
    chunks to re-key, documents to settle under `fingerprint`, and documents left."""

    fingerprint: str
    rebuild: bool  # the first-stage table is created anew (missing, or another width)
    first: dict[str, str] = field(default_factory=dict)
    second: dict[str, str] = field(default_factory=dict)
    rekeyed: list[Rekey] = field(default_factory=list)
    switched: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


@dataclass
class ReembedReport:
    """What a re-embedding did; `to_json` is `ragd reembed --json`."""

    backend: str
    first_texts: int = 0  # texts the first-stage model embedded
    second_texts: int = 0  # texts the second-stage model embedded
    documents_switched: int = 0
    documents_left: int = 0  # for the normal pass: chunked otherwise, or not settled
    chunks_rekeyed: int = 0
    table_rebuilt: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        """The JSON object printed by `ragd reembed --json`."""
        return {
            "texts": {"first_stage": self.first_texts, "second_stage": self.second_texts},
            "documents_switched": self.documents_switched,
            "documents_left": self.documents_left,
            "chunks_rekeyed": self.chunks_rekeyed,
            "table_rebuilt": self.table_rebuilt,
            "seconds": round(self.seconds, 3),
            "backend": self.backend,
        }


def reembed(
    stores: WriterStores,
    pipeline: Pipeline,
    first: Embedder,
    second: Embedder | None,
    backend: EmbedBackend,
    *,
    progress: ProgressFn | None = None,
    cleanup_older_than: timedelta = timedelta(minutes=10),
    keep_published: Mapping[str, int] | None = None,
) -> ReembedReport:
    """Re-embed what the current models lack and switch every document that can switch.

    The caller holds the writer lock; `first` and `second` are the pipeline's models.
    `keep_published` is the oldest version of each vector table a published generation
    names (cleanups keep them for replicas: `WriterStores.keep_published`)."""
    if (first.identity, None if second is None else second.identity) != (
        pipeline.model_identity,
        pipeline.second_identity,
    ):
        raise ValueError("the models are not the pipeline's")
    started = time.monotonic()
    width = VectorStore.open_readonly(stores.paths.lancedb).dim
    rebuild = width != first.dim or stores.manifest.get_meta(REBUILDING) == "1"
    recover(stores, rebuild=rebuild)
    plan = plan_reembed(stores.manifest, pipeline, rebuild=rebuild)
    report = ReembedReport(backend.name, table_rebuilt=plan.rebuild)
    report.first_texts = _embed_stage(
        "first",
        plan.first,
        first,
        backend,
        progress,
        dim=first.dim,
        store=stores.manifest.store_vectors,
    )
    if second is not None:
        writer = SecondStageWriter(stores)
        report.second_texts = _embed_stage(
            "second",
            plan.second,
            second,
            backend,
            progress,
            dim=None,
            store=lambda vectors: writer.write(Embedded(tuple(vectors), _stack(vectors))),
        )
    switch(
        stores,
        plan,
        first.dim,
        cleanup_older_than=cleanup_older_than,
        keep_published=keep_published,
    )
    report.documents_switched = len(plan.switched)
    report.documents_left = len(plan.left)
    report.chunks_rekeyed = len(plan.rekeyed)
    report.seconds = time.monotonic() - started
    return report


def recover(stores: WriterStores, *, rebuild: bool) -> None:
    """Reconcile the stores after a writer crashed (the manifest says so), as a pass would.
    When the first-stage table is about to be rebuilt from the manifest, its rows do not
    count (a crashed rebuild left it short): only Tantivy and the second stage are compared.
    A table of another width is compared as it is (only chunk ids count)."""
    manifest = stores.manifest
    if manifest.is_clean():
        return
    if rebuild:
        listed = manifest.chunk_ids()
        keywords = stores.keywords()
        found = compare_ids(listed, listed, keywords.chunk_ids())
        if found.orphans_in_tantivy:
            keywords.delete_chunks(found.orphans_in_tantivy)
        if found.missing_from_tantivy:
            manifest.mark_for_redo(manifest.doc_ids_of_chunks(found.missing_from_tantivy))
    else:
        first = VectorStore.open_existing(stores.paths.lancedb, name=FIRST_STAGE)
        reconcile(manifest, first, stores.keywords())
    if (second := stores.second_vectors()) is not None:
        reconcile_second_stage(manifest, second)


def plan_reembed(manifest: ManifestReader, pipeline: Pipeline, *, rebuild: bool) -> Plan:
    """Read what a re-embedding under `pipeline` would do. With `rebuild`, every chunk is
    re-keyed to the current first-stage model (the table is written anew), whether or not
    its document switches."""
    fingerprint, recipe = pipeline.fingerprint, pipeline.chunk_recipe
    recipes = manifest.chunk_recipes()
    documents = {d.doc_id: d for d in manifest.documents()}
    movable = {
        doc_id
        for doc_id, d in documents.items()
        if d.status in SETTLED and d.fingerprint != fingerprint
        and d.fingerprint is not None and recipes.get(d.fingerprint) == recipe
    }  # fmt: skip
    plan = Plan(fingerprint, rebuild)
    first, second = _Unstored(manifest, plan.first), _Unstored(manifest, plan.second)
    for doc_id, chunks in groupby(manifest.all_chunks(), key=attrgetter("doc_id")):
        document = documents.get(doc_id)
        if document is None:
            continue  # rows of no document: reconciling removes them, nothing to re-key
        current = document.status in SETTLED and document.fingerprint == fingerprint
        moves = _plan_document(
            plan, pipeline, document, list(chunks), doc_id in movable, current, first, second
        )
        if not moves:
            movable.discard(doc_id)
    first.check()
    second.check()
    for doc_id, document in documents.items():
        if doc_id in movable:
            plan.switched.append(doc_id)  # with its chunks, or failed or empty: none
        elif document.fingerprint != fingerprint or document.status not in SETTLED:
            plan.left.append(doc_id)
    return plan


def _plan_document(
    plan: Plan,
    pipeline: Pipeline,
    document: DocumentRecord,
    chunks: list[ChunkRecord],
    movable: bool,
    current: bool,
    first: _Unstored,
    second: _Unstored,
) -> bool:
    """Add one document's chunks to the plan; False when it cannot switch after all (a
    chunk whose text does not rebuild exactly)."""
    texts = [labelled_text(document.title, c.heading_path, c.text) for c in chunks]
    exact = all(
        chunk_id(c.doc_id, c.ordinal, text) == c.chunk_id
        for c, text in zip(chunks, texts, strict=True)
    )
    moves = movable and exact
    fills = moves or (current and exact)  # its second-stage gaps are filled
    if not (fills or plan.rebuild):
        return moves
    second_identity = pipeline.second_identity
    for chunk, text in zip(chunks, texts, strict=True):
        key, second_key = chunk.embed_key, chunk.second_key
        if moves or plan.rebuild:
            key = embed_key(pipeline.model_identity, text)
        if moves:
            second_key = None if second_identity is None else embed_key(second_identity, text)
        if fills and second_key is not None:
            second.add(second_key, text)
        if plan.rebuild or (key, second_key) != (chunk.embed_key, chunk.second_key):
            old = (chunk.embed_key, chunk.second_key)
            plan.rekeyed.append(Rekey(chunk.chunk_id, chunk.doc_id, key, second_key, *old))
            first.add(key, text)
    return moves


class _Unstored:
    """Collects key -> text for texts whose vector is not stored, checking in batches."""

    def __init__(self, manifest: ManifestReader, into: dict[str, str]) -> None:
        self._manifest = manifest
        self._into = into
        self._pending: dict[str, str] = {}

    def add(self, key: str, text: str) -> None:
        if key not in self._into:
            self._pending[key] = text
            if len(self._pending) >= _CHECK_EVERY:
                self.check()

    def check(self) -> None:
        stored = self._manifest.stored_keys(self._pending.keys())
        self._into.update((k, t) for k, t in self._pending.items() if k not in stored)
        self._pending.clear()


def _embed_stage(
    stage: str,
    texts: Mapping[str, str],
    embedder: Embedder,
    backend: EmbedBackend,
    progress: ProgressFn | None,
    *,
    dim: int | None,
    store: Callable[[dict[str, Matrix]], object],
) -> int:
    """Embed `texts` through the backend, storing each batch as it comes; how many. The
    vectors must be `dim` wide (when None, as wide as the first batch's)."""
    done = 0
    width = dim
    if texts and progress is not None:
        progress(stage, 0, len(texts))
    for keys, matrix in backend.embed(stage, texts, embedder):
        width = matrix.shape[1] if width is None and matrix.ndim == 2 else width
        if matrix.shape != (len(keys), width) or not np.isfinite(matrix).all():
            raise RagdError(
                f"the {stage}-stage model returned unusable vectors (shape {matrix.shape} for "
                f"{len(keys)} texts, or non-finite values)"
            )
        store(dict(zip(keys, matrix, strict=True)))
        done += len(keys)
        if progress is not None:
            progress(stage, done, len(texts))
    return done


def switch(
    stores: WriterStores,
    plan: Plan,
    dim: int,
    *,
    cleanup_older_than: timedelta,
    keep_published: Mapping[str, int] | None = None,
) -> None:
    """Write the re-keyed chunks' rows, then re-key them and settle the switched documents
    in one manifest transaction (see the module's docstring for the order)."""
    manifest = stores.manifest
    rows = [r for r in plan.rekeyed if plan.rebuild or r.embed_key != r.old_key]
    seconds = [
        (r.chunk_id, r.doc_id, r.second_key)
        for r in plan.rekeyed
        if r.second_key is not None and r.second_key != r.old_second
    ]
    vectors = _stored(manifest, {r.embed_key for r in rows})
    second_vectors = _stored(manifest, {key for _, _, key in seconds})
    if plan.rebuild:
        # Until the manifest's switch: a crash leaves the table short, which only a rebuild
        # (the next run's, which this tells to rebuild) or a reconciling pass repairs.
        manifest.mark_unclean()
        manifest.set_meta(REBUILDING, "1")
        VectorStore.drop(stores.paths.lancedb, FIRST_STAGE)
    first_table = stores.vectors(dim)
    if keep_published is not None and not plan.rebuild:  # a new table has no old versions
        stores.keep_published(keep_published, dim)
    if rows:
        first_table.upsert([VectorRow(r.chunk_id, r.doc_id, vectors[r.embed_key]) for r in rows])
    second_table = None
    if seconds:
        width = len(next(iter(second_vectors.values())))
        second_table = stores.second_vectors(width)
        if second_table is None:
            raise RagdError("second-stage vectors were planned with the second stage off")
        second_table.upsert([VectorRow(c, d, second_vectors[key]) for c, d, key in seconds])
    if plan.rekeyed or plan.switched:
        manifest.switch_embeddings(
            [(r.chunk_id, r.embed_key, r.second_key) for r in plan.rekeyed],
            [(doc_id, plan.fingerprint) for doc_id in plan.switched],
        )
    if plan.rebuild:
        manifest.set_meta(REBUILDING, "0")
    manifest.mark_clean()
    if rows or seconds:
        manifest.prune_vectors()  # the old models' vectors, which no chunk names now
        for table, written in ((first_table, bool(rows)), (second_table, bool(seconds))):
            if table is not None:
                if written and not plan.rebuild:  # another model's vectors: new partitions
                    table.retrain_vector_index()
                settle_vectors(table, cleanup_older_than)


def _stored(manifest: ManifestReader, keys: Iterable[str]) -> dict[str, Matrix]:
    """Stored vectors of `keys`; RagdError naming how many are not (a vector cache pruned
    by another writer between embedding and switching)."""
    wanted = set(keys)
    found: dict[str, Matrix] = dict(manifest.cached_vectors(wanted))
    if len(found) != len(wanted):
        raise RagdError(
            f"{len(wanted) - len(found)} re-embedded vectors are no longer stored",
            hint="run `ragd reembed` again",
        )
    return found


def _stack(vectors: dict[str, Matrix]) -> Matrix:
    return np.stack(list(vectors.values())).astype(np.float32, copy=False)


__all__ = ["Plan", "ReembedReport", "Rekey", "plan_reembed", "reembed", "switch"]
