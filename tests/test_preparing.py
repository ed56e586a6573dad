"""Preparing files (read, hash, parse, chunk), and running tasks of them in order."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.pipeline import Pipeline
from ragd.indexing.preparing import (
    ONE_AT_A_TIME,
    InProcess,
    Prepared,
    TaskShape,
    ToPrepare,
    in_order,
    prepare,
    prepare_task,
    tasks_of,
)
from ragd.sources.folders import FileReader
from ragd.stores.identifiers import identifier_terms
from ragd.stores.records import content_hash
from tests.conftest import FakeEmbedder

PIPELINE = Pipeline(ChunkSettings(300, 40), "fake-model")
PAGE = (
    "# Title\n\nSome text about {n} and status_code.\n\n## Part\n\nMore about {n}: HTTPException.\n"
)


def page_root(directory: Path) -> Path:
    """40 small markdown pages and one binary file."""
    for n in range(40):
        (directory / f"page-{n:02}.md").write_text(PAGE.format(n=n))
    (directory / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    return directory


def files_of(root: Path) -> list[ToPrepare]:
    return [
        (path.name, f"docs:{path.name}", None, path.stat().st_size)
        for path in sorted(root.iterdir())
    ]


def fields(prepared: list[Prepared]) -> list[tuple[object, ...]]:
    """What preparing decided of each file, without what a worker adds to its chunks."""
    return [
        (
            p.size,
            p.mtime_ns,
            p.digest,
            p.error,
            None
            if p.processed is None
            else (
                p.processed.title,
                [
                    (c.chunk_id, c.ordinal, c.text, c.embed_text, c.embed_key)
                    for c in p.processed.chunks
                ],
            ),
        )
        for p in prepared
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return page_root(tmp_path)


def one(key: str, known: str | None = None) -> ToPrepare:
    return (key, f"docs:{key}", known, 0)


def test_a_file_that_cannot_be_read_is_an_outcome_with_a_reason(root: Path) -> None:
    prepared = prepare(one("missing.md"), PIPELINE, FileReader(str(root), 1000))

    assert prepared.size is None
    assert prepared.error == "file vanished before it could be read"


def test_a_file_that_cannot_be_parsed_keeps_its_stat_and_hash(root: Path) -> None:
    prepared = prepare(one("binary.md"), PIPELINE, FileReader(str(root), 1000))

    assert prepared.size == (root / "binary.md").stat().st_size
    assert prepared.digest == content_hash((root / "binary.md").read_bytes())
    assert prepared.processed is None
    assert prepared.error


def test_content_with_the_known_hash_is_not_parsed(root: Path) -> None:
    known = content_hash((root / "page-01.md").read_bytes())

    prepared = prepare(one("page-01.md", known), PIPELINE, FileReader(str(root), 1000))

    assert prepared.digest == known
    assert prepared.processed is None
    assert prepared.error is None


def test_chunks_carry_ids_of_their_document_and_no_vector_until_embedded(root: Path) -> None:
    prepared = prepare(one("page-03.md"), PIPELINE, FileReader(str(root), 1000))

    assert prepared.processed is not None
    chunks = prepared.processed.chunks
    assert {c.doc_id for c in chunks} == {"docs:page-03.md"}
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert all(c.vector is None and c.identifiers is None for c in chunks)


def test_a_task_with_an_embedder_embeds_each_chunk_as_the_embedder_would(root: Path) -> None:
    embedder = FakeEmbedder()
    read = FileReader(str(root), 1000)

    prepared = prepare_task(files_of(root), PIPELINE, read, embedder=embedder)

    assert embedder.calls == 1  # the whole task in one model call
    for p in prepared:
        for c in p.processed.chunks if p.processed else ():
            assert c.vector is not None
            np.testing.assert_allclose(c.vector, embedder.embed([c.embed_text])[0], atol=1e-6)


def test_a_task_with_an_embedder_finds_each_chunks_identifier_terms(root: Path) -> None:
    prepared = prepare_task(
        files_of(root), PIPELINE, FileReader(str(root), 1000), embedder=FakeEmbedder()
    )

    chunks = [c for p in prepared if p.processed for c in p.processed.chunks]
    assert [c.identifiers for c in chunks] == [
        " ".join(identifier_terms(c.embed_text)) for c in chunks
    ]
    assert any("status_code" in (c.identifiers or "") for c in chunks)


def test_a_task_prepares_what_preparing_each_file_gives(root: Path) -> None:
    read = FileReader(str(root), 1000)

    task = prepare_task(files_of(root), PIPELINE, read, embedder=FakeEmbedder())

    assert fields(task) == fields([prepare(f, PIPELINE, read) for f in files_of(root)])


def test_tasks_hold_at_most_their_files_or_about_their_bytes() -> None:
    small = [(f"s{n}.md", f"d:s{n}", None, 100) for n in range(130)]
    big = [(f"b{n}.md", f"d:b{n}", None, 600_000) for n in range(3)]
    numbered = list(enumerate(small + big))

    tasks = tasks_of(numbered, TaskShape(files=64, bytes=1 << 20, ahead_tasks=1, ahead_bytes=0))

    assert [len(t) for t in tasks] == [64, 64, 3, 1, 1]
    assert [f for t in tasks for f in t] == numbered


def test_in_order_yields_each_tasks_files_in_order_and_runs_one_ahead_at_most(
    root: Path,
) -> None:
    read = FileReader(str(root), 1000)
    numbered = list(enumerate(files_of(root)))
    started: list[int] = []
    here = InProcess()

    def submit(index: int, task: list[tuple[int, ToPrepare]]) -> Future[list[Prepared]]:
        started.append(index)
        return here.submit(prepare_task, [f for _, f in task], PIPELINE, read)

    ready = in_order(tasks_of(numbered, ONE_AT_A_TIME), submit, ONE_AT_A_TIME)
    first = next(ready)

    assert first[0] == 0 and started == [0]
    rest = list(ready)
    assert [n for n, _ in [first, *rest]] == list(range(len(numbered)))
