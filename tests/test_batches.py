"""Write batches with real stores on disk: when they are written, and what reaches the model."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragd.errors import RagdError
from ragd.indexing.batches import MAX_BATCH_DOCUMENTS, BatchWriter, DocumentEvent
from ragd.indexing.pipeline import PreparedChunk, PreparedWrite, chunk_id, embed_key
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.records import ChunkRecord, DocumentWrite, doc_id_of, utc_now
from tests.conftest import FakeEmbedder


class NaNEmbedder(FakeEmbedder):
    """A broken model: right shape, not a number."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), np.nan, dtype=np.float32)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[WriterStores]:
    opened = WriterStores(DataDir(tmp_path / "data"))
    yield opened
    opened.close()


@pytest.fixture
def sizes(stores: WriterStores, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of documents of each manifest commit, that is, of each written batch."""
    counted: list[int] = []
    commit = stores.manifest.commit

    def counting_commit(writes: Sequence[DocumentWrite[ChunkRecord]], *, checked_at: str) -> None:
        counted.append(len(writes))
        commit(writes, checked_at=checked_at)

    monkeypatch.setattr(stores.manifest, "commit", counting_commit)
    return counted


def _write(name: str, *texts: str, model: str = "fake:v1") -> PreparedWrite:
    doc_id = doc_id_of("docs", name)
    chunks = tuple(
        PreparedChunk(chunk_id(doc_id, n, t), doc_id, n, (), t, embed_key(model, t), t)
        for n, t in enumerate(texts)
    )
    return DocumentWrite(doc_id, "docs", name, f"file:///{name}", "indexed", chunks=chunks)


def _failed(name: str) -> PreparedWrite:
    return DocumentWrite(
        doc_id_of("docs", name), "docs", name, f"file:///{name}", "failed", error="bad"
    )


def test_nothing_is_written_until_the_batch_is_full_or_flushed(stores: WriterStores) -> None:
    events: list[DocumentEvent] = []
    batches = BatchWriter(
        stores,
        FakeEmbedder(),
        batch_chunks=100,
        first_batch=3,
        checked_at=utc_now(),
        on_event=events.append,
    )
    writes = [_write(name, f"text of {name}") for name in ("a.md", "b.md", "c.md")]

    batches.add(writes[0], None)
    batches.add(writes[1], None)
    assert events == []
    assert stores.manifest.document("docs:a.md") is None

    batches.add(writes[2], None)
    assert [e.doc_id for e in events] == ["docs:a.md", "docs:b.md", "docs:c.md"]
    assert stores.keywords().chunk_ids() == {c.chunk_id for w in writes for c in w.chunks}


def test_the_document_limit_doubles_per_write_up_to_the_maximum(
    stores: WriterStores, sizes: list[int]
) -> None:
    batches = BatchWriter(
        stores, FakeEmbedder(), batch_chunks=100, first_batch=1024, checked_at=utc_now()
    )

    for n in range(1024 + 2048 + 4096 + 2 * MAX_BATCH_DOCUMENTS):
        batches.add(_failed(f"{n}.md"), None)

    assert sizes == [1024, 2048, 4096, MAX_BATCH_DOCUMENTS, MAX_BATCH_DOCUMENTS]


def test_a_vector_already_cached_is_not_embedded_again(stores: WriterStores) -> None:
    embedder = FakeEmbedder()
    batches = BatchWriter(stores, embedder, batch_chunks=100, first_batch=1, checked_at=utc_now())

    batches.add(_write("a.md", "shared words"), None)
    batches.add(_write("b.md", "shared words", "new words"), None)
    batches.flush()

    assert embedder.texts == ["shared words", "new words"]
    assert (batches.counts.embedded, batches.counts.reused) == (2, 1)


def test_vectors_a_worker_computed_reach_the_store_without_the_model(
    stores: WriterStores,
) -> None:
    embedder = FakeEmbedder()
    batches = BatchWriter(stores, embedder, batch_chunks=100, first_batch=10, checked_at=utc_now())
    write = _write("a.md", "one", "two")
    given = embedder.embed(["one", "two"])
    embedder.texts.clear()
    write = replace(
        write, chunks=tuple(c._replace(vector=given[n]) for n, c in enumerate(write.chunks))
    )

    batches.add(write, None)
    batches.flush()

    assert embedder.texts == []
    assert batches.counts.embedded == 2
    cached = stores.manifest.cached_vectors([c.embed_key for c in write.chunks])
    assert np.array_equal(cached[write.chunks[1].embed_key], given[1])


def test_unusable_vectors_fail_the_batch_before_any_store_is_written(
    stores: WriterStores,
) -> None:
    batches = BatchWriter(
        stores, NaNEmbedder(), batch_chunks=100, first_batch=10, checked_at=utc_now()
    )
    batches.add(_write("a.md", "some text"), None)

    with pytest.raises(RagdError, match="unusable vectors"):
        batches.flush()

    assert stores.manifest.document("docs:a.md") is None
    assert stores.manifest.is_clean()
    assert stores.keywords().chunk_ids() == set()


def test_batches_halve_toward_the_end_of_an_expected_pass(
    stores: WriterStores, sizes: list[int]
) -> None:
    batches = BatchWriter(
        stores, FakeEmbedder(), batch_chunks=100, first_batch=4, checked_at=utc_now()
    )

    batches.expect(40)
    for n in range(40):
        batches.add(_failed(f"{n}.md"), None)
    batches.flush()

    # 4 and 8 by the doubling limit; then each write holds as many as are still to come,
    # never fewer than the first batch; the caller's last flush writes the rest.
    assert sizes == [4, 8, 14, 7, 4, 3]
