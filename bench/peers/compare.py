"""Peer comparison: ragd against LangChain's indexing API, LlamaIndex's IngestionPipeline and
CocoIndex.

Usage (in separate venvs, see bench/peers/README.md):
    .venv-peers/bin/python bench/peers/compare.py [CORPUS] [--model DIR] [--json]

CORPUS is a directory (default ../shared/corpora/fastapi-docs) or a .tar.gz to unpack. Each
system gets its own temporary copy of every *.md file under it, the same local model2vec model,
and these runs, each a fresh process that reloads the state the previous one persisted:

1. full index into empty state (median of --full-runs processes, each into fresh state);
2. no-op re-index, nothing changed (median of --noop-runs processes);
3. re-index after one paragraph of one section of one document was edited;
4. re-index after that document was deleted (and a check that none of its chunks is left).

For each run it records the process wall time, the time spent inside the process on the work
itself (interpreter start-up and imports excluded) and how many texts were sent to the model.

ragd runs as real `ragd index --json` processes (the repository's venv), second stage off. The
peers run as worker processes of this script (`--worker NAME`), with their state persisted
between runs, each under its own interpreter (--peer-python; CocoIndex has a venv of its own):
- langchain: `langchain_core.indexing.index` with a `SQLRecordManager` (SQLite file),
  cleanup="full", over an `InMemoryVectorStore` dumped to / loaded from JSON; chunks from
  `MarkdownHeaderTextSplitter` (h1-h6, headers kept) then
  `RecursiveCharacterTextSplitter.from_language(MARKDOWN)` (900 chars, overlap 120);
- llamaindex: `IngestionPipeline` with a `SimpleDocumentStore` and a `SimpleVectorStore`
  (both persisted as JSON), docstore_strategy="upserts_and_delete", transformation cache off;
  chunks from `MarkdownNodeParser` then `SentenceSplitter` (900 chars, overlap 120, measured
  in characters);
- llamaindex+cache: the same, plus the embedding model's optional per-text
  `embeddings_cache` (a persisted `SimpleKVStore`), which LlamaIndex offers to skip
  re-embedding texts it has seen;
- cocoindex: a CocoIndex v1 app (state in LMDB): `localfs.walk_dir` source, one memoized
  component per file splitting with `RecursiveSplitter(language="markdown")` (900 bytes,
  overlap 120 bytes, minimum 450 bytes), a memoized per-text model2vec embedding function
  (batched), rows in a LanceDB table target. Usage telemetry off, nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, make_dataclass
from pathlib import Path
from typing import Any

# CocoIndex's native extension reports usage to a remote endpoint unless this is set before it
# is imported; every process this script starts gets it, and so does the worker itself.
OFFLINE_ENV = {
    "COCOINDEX_DISABLE_USAGE_TRACKING": "1",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "fastapi-docs"
DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
DEFAULT_RAGD = REPO / ".venv" / "bin" / "ragd"
# Interpreters of peers that cannot share the peers' venv; the others run under this one's.
DEFAULT_PEER_PYTHON = {"cocoindex": REPO / ".venv-cocoindex" / "bin" / "python"}

MAX_CHARS = 900  # ragd's default chunking.max_chars
OVERLAP = 120  # ragd's default chunking.overlap
BATCH_SIZE = 1024  # ragd's default embedding.batch_size; the peers get the same batches
EDIT_SENTENCE = " This sentence was added by the peer benchmark to change one section."

_PROSE_MARKS = ("-", "*", ">")  # list items and quotes count as prose lines to edit
PEERS = ("langchain", "llamaindex", "llamaindex+cache", "cocoindex")
# CocoIndex's splitter counts bytes and merges pieces below a minimum; this is its own default
# (chunk_size / 2), passed explicitly so the table can say what it was.
COCO_MIN_CHUNK = MAX_CHARS // 2
COCO_TABLE = "chunks"
SPLITTERS = {
    "ragd": f"ragd's own markdown chunker (sections, {MAX_CHARS} chars, overlap {OVERLAP})",
    "langchain": (
        "MarkdownHeaderTextSplitter(h1-h6, strip_headers=False) + "
        f"RecursiveCharacterTextSplitter.from_language(MARKDOWN, {MAX_CHARS}, {OVERLAP})"
    ),
    "llamaindex": (
        f"MarkdownNodeParser + SentenceSplitter({MAX_CHARS}, {OVERLAP}, tokenizer=characters)"
    ),
}
SPLITTERS["llamaindex+cache"] = SPLITTERS["llamaindex"]
SPLITTERS["cocoindex"] = (
    f'RecursiveSplitter(language="markdown", chunk_size={MAX_CHARS}, '
    f"min_chunk_size={COCO_MIN_CHUNK}, chunk_overlap={OVERLAP}), in bytes"
)


# --------------------------------------------------------------------------- shared helpers


def markdown_files(root: Path) -> list[Path]:
    """Every regular *.md file under root (symlinks not followed), in a stable order."""
    return sorted(p for p in root.rglob("*.md") if p.is_file() and not p.is_symlink())


def read_corpus(root: Path) -> Iterator[tuple[str, str]]:
    """Yield (relative POSIX path, text) for every markdown file under root."""
    for path in markdown_files(root):
        yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class Edit:
    """A one-line change inside one section of one document."""

    path: str  # relative to the corpus root
    line: int  # 0-based line number that gets EDIT_SENTENCE appended
    heading: str  # the heading of the section that contains the line


def choose_edit(root: Path, path: str | None = None) -> Edit:
    """Pick a prose line in the middle section of a typical document (or of `path`).

    The typical document is the one of median size among those with at least three headings
    (or as many as the corpus has, for corpora of one-heading pages).
    Headings and lines inside code fences are ignored; the edited line is the first line of
    prose (a paragraph, list item or quote) under the middle heading, or under the next
    heading that has one, so exactly one section changes.
    """
    if path is None:
        sizes = [
            (len(_headings(text.splitlines())), len(text), rel) for rel, text in read_corpus(root)
        ]
        wanted = min(3, max((headings for headings, _, _ in sizes), default=0))
        candidates = sorted((size, rel) for headings, size, rel in sizes if headings >= wanted)
        if not wanted or not candidates:
            raise SystemExit(f"no *.md file with a heading under {root}; pass --edit-file")
        path = candidates[len(candidates) // 2][1]
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    heads = _headings(lines)
    fenced = _fenced_lines(lines)
    for index, start in enumerate(heads[len(heads) // 2 :], start=len(heads) // 2):
        end = heads[index + 1] if index + 1 < len(heads) else len(lines)
        for number in range(start + 1, end):
            first = lines[number].lstrip()[:1]
            if number not in fenced and (first.isalnum() or first in _PROSE_MARKS):
                return Edit(path, number, lines[start].strip())
    raise SystemExit(f"{path}: no prose line under its middle headings")


def _fenced_lines(lines: list[str]) -> set[int]:
    """Line numbers inside (or opening/closing) ``` or ~~~ code fences."""
    fenced: set[int] = set()
    fence: str | None = None
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        marker = stripped[:3]
        if fence is None and marker in ("```", "~~~"):
            fence = marker
            fenced.add(number)
        elif fence is not None:
            fenced.add(number)
            if stripped.startswith(fence):
                fence = None
    return fenced


def _headings(lines: list[str]) -> list[int]:
    """Line numbers of ATX headings outside code fences."""
    fenced = _fenced_lines(lines)
    return [
        n
        for n, line in enumerate(lines)
        if n not in fenced and line.startswith("#") and line.lstrip("#").startswith(" ")
    ]


def apply_edit(root: Path, edit: Edit) -> None:
    """Append EDIT_SENTENCE to the chosen line of the chosen document under root."""
    path = root / edit.path
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[edit.line] += EDIT_SENTENCE
    path.write_text("\n".join(lines), encoding="utf-8")


class LazyModel:
    """The local model2vec model, loaded on first use as ragd does, so a run that embeds
    nothing does not pay for loading it."""

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        self._model: Any = None

    def encode_array(self, texts: list[str]) -> Any:
        """Encode texts the way ragd does: one thread, model2vec batches of BATCH_SIZE; a
        numpy array, one row per text."""
        if self._model is None:
            from model2vec import StaticModel

            self._model = StaticModel.from_pretrained(str(self.model_dir))
        return self._model.encode(texts, batch_size=BATCH_SIZE, use_multiprocessing=False)

    def encode(self, texts: list[str]) -> list[list[float]]:
        """encode_array as lists of floats, as LangChain and LlamaIndex take vectors."""
        return [[float(x) for x in row] for row in self.encode_array(texts)]


# --------------------------------------------------------------------------- peer workers


@dataclass(frozen=True)
class Job:
    """What one worker process is asked to do."""

    root: Path  # the corpus copy to index
    state: Path  # the system's persisted state
    model_dir: Path
    cached: bool  # llamaindex+cache: use the per-text embeddings cache
    gone: str | None  # a document just deleted: report how many of its chunks are left


def worker_langchain(job: Job) -> dict[str, Any]:
    """One LangChain indexing pass; state: SQLite record manager + JSON vector store."""
    root, state, model_dir = job.root, job.state, job.model_dir
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.indexing import index
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import (
        Language,
        MarkdownHeaderTextSplitter,
        RecursiveCharacterTextSplitter,
    )

    class CountingEmbeddings(Embeddings):
        """The model2vec model as LangChain Embeddings, counting the texts it embeds."""

        def __init__(self) -> None:
            self.count = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.count += len(texts)
            return model.encode(list(texts))

        def embed_query(self, text: str) -> list[float]:
            return model.encode([text])[0]

    started = time.perf_counter()
    model = LazyModel(model_dir)
    embeddings = CountingEmbeddings()
    records = SQLRecordManager("ragd-peers", db_url=f"sqlite:///{state / 'records.db'}")
    records.create_schema()
    vectors_path = state / "vectors.json"
    if vectors_path.exists():
        store = InMemoryVectorStore.load(str(vectors_path), embeddings)
    else:
        store = InMemoryVectorStore(embeddings)

    headers = MarkdownHeaderTextSplitter(
        [("#" * level, f"h{level}") for level in range(1, 7)], strip_headers=False
    )
    windows = RecursiveCharacterTextSplitter.from_language(
        Language.MARKDOWN, chunk_size=MAX_CHARS, chunk_overlap=OVERLAP
    )
    chunks = 0

    def documents() -> Iterator[Document]:
        nonlocal chunks
        for rel, text in read_corpus(root):
            sections = headers.split_text(text)
            for section in sections:
                section.metadata["source"] = rel
            for chunk in windows.split_documents(sections):
                chunks += 1
                yield chunk

    result = index(
        documents(),
        records,
        store,
        cleanup="full",
        source_id_key="source",
        batch_size=BATCH_SIZE,
        key_encoder="sha256",
    )
    store.dump(str(vectors_path))
    seconds = time.perf_counter() - started
    left = None
    if job.gone is not None:
        left = sum(1 for doc in store.store.values() if doc["metadata"]["source"] == job.gone)
    return {
        "seconds": seconds,
        "embedded": embeddings.count,
        "chunks": chunks,
        "stored": len(store.store),
        "left": left,
        "detail": dict(result),
    }


def worker_llamaindex(job: Job) -> dict[str, Any]:
    """One LlamaIndex ingestion pass; state: persisted docstore + JSON vector store."""
    root, state, model_dir, cached = job.root, job.state, job.model_dir, job.cached
    from llama_index.core import Document
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.storage.kvstore import SimpleKVStore
    from llama_index.core.vector_stores import SimpleVectorStore

    class CountingEmbedding(BaseEmbedding):
        """The model2vec model as a LlamaIndex embedding, counting the texts it embeds."""

        _count: int = PrivateAttr(default=0)

        @property
        def count(self) -> int:
            return self._count

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            self._count += len(texts)
            return model.encode(list(texts))

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return model.encode([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    started = time.perf_counter()
    model = LazyModel(model_dir)
    cache_path = state / "embeddings_cache.json"
    embeddings_cache = None
    if cached:
        embeddings_cache = (
            SimpleKVStore.from_persist_path(str(cache_path))
            if cache_path.exists()
            else SimpleKVStore()
        )
    embed = CountingEmbedding(
        model_name=str(model_dir), embed_batch_size=BATCH_SIZE, embeddings_cache=embeddings_cache
    )
    vectors_path = state / "vector_store.json"
    vector_store = (
        SimpleVectorStore.from_persist_path(str(vectors_path))
        if vectors_path.exists()
        else SimpleVectorStore()
    )
    pipeline = IngestionPipeline(
        docstore=SimpleDocumentStore(),
        transformations=[
            MarkdownNodeParser(),
            SentenceSplitter(chunk_size=MAX_CHARS, chunk_overlap=OVERLAP, tokenizer=list),
            embed,
        ],
        vector_store=vector_store,
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
        # The transformation cache is keyed by the whole batch of changed documents, so it
        # cannot save embeddings of unchanged sections; persisting it would only add time.
        disable_cache=True,
    )
    pipeline_dir = state / "pipeline"
    if pipeline_dir.exists():
        pipeline.load(str(pipeline_dir))  # replaces the empty docstore with the persisted one
    documents = [
        Document(text=text, id_=rel, metadata={"path": rel}) for rel, text in read_corpus(root)
    ]
    nodes = pipeline.run(documents=documents)
    pipeline.persist(str(pipeline_dir))
    vector_store.persist(str(vectors_path))
    if embeddings_cache is not None:
        embeddings_cache.persist(str(cache_path))
    seconds = time.perf_counter() - started
    left = None
    if job.gone is not None:  # nodes keep the id of the document they came from
        refs = vector_store.data.text_id_to_ref_doc_id.values()
        left = sum(1 for ref in refs if ref == job.gone)
    return {
        "seconds": seconds,
        "embedded": embed.count,
        "chunks": len(nodes),
        "stored": len(vector_store.data.embedding_dict),
        "left": left,
        "detail": {"documents": len(documents), "nodes_processed": len(nodes)},
    }


def model_dimension(model_dir: Path) -> int:
    """The model's vector size from its config, so a run that embeds nothing need not load it
    (CocoIndex wants the LanceDB column's size before the first row)."""
    config = json.loads((model_dir / "config.json").read_text())
    return int(config["hidden_dim"])


def cocoindex_app(
    root: Path, state: Path, model_dir: Path, live: bool = False
) -> tuple[Any, dict[str, int]]:
    """CocoIndex's app for root: walk the *.md files, one memoized component per file that
    splits it (Markdown-aware) and declares one LanceDB row per chunk, with a memoized per-text
    embedding; its internal state (LMDB) and the LanceDB table live under state.

    Returns the app and counters of this process (texts embedded, chunks split). It registers
    the default environment's lifespan, so call it once per process. Used by the `cocoindex`
    worker (catch-up updates) and, with live=True, by live_edit.py (a live update).
    """
    os.environ.update(OFFLINE_ENV)  # before the import: the engine reads it when it loads
    from typing import Annotated

    import cocoindex as coco
    import numpy as np
    from cocoindex.connectors import lancedb as coco_lancedb
    from cocoindex.connectors import localfs
    from cocoindex.ops.text import RecursiveSplitter
    from cocoindex.resources.chunk import Chunk
    from cocoindex.resources.file import FileLike, PatternFilePathMatcher
    from cocoindex.resources.id import IdGenerator
    from cocoindex.resources.schema import VectorSchema
    from numpy.typing import NDArray

    counts = {"embedded": 0, "chunks": 0}
    model = LazyModel(model_dir)
    splitter = RecursiveSplitter()
    # The source root as a context key makes each file's key its path relative to the root.
    source_dir = coco.ContextKey[Path]("ragd_peers_source")
    lance = coco.ContextKey[coco_lancedb.LanceAsyncConnection]("ragd_peers_lancedb")
    vector = VectorSchema(dtype=np.dtype(np.float32), size=model_dimension(model_dir))
    # Built with real types: this module's annotations are strings CocoIndex could not resolve.
    row_type = make_dataclass(
        "ChunkRow",
        [("id", int), ("path", str), ("text", str), ("embedding", Annotated[NDArray, vector])],
    )

    @coco.fn.as_async(batching=True, max_batch_size=BATCH_SIZE)
    def embed_batch(texts: list[str]) -> list[Any]:
        """The model on a batch of the texts waiting to be embedded, counted."""
        counts["embedded"] += len(texts)
        return [np.asarray(row, dtype=np.float32) for row in model.encode_array(texts)]

    @coco.fn(memo=True)
    async def embed(text: str) -> Any:
        """One text's vector, memoized: a text seen before is not sent to the model again."""
        return await embed_batch(text)

    @coco.fn
    async def declare_chunk(chunk: Chunk, path: str, ids: IdGenerator, table: Any) -> None:
        row_id = await ids.next_id(chunk.text)  # stable: the same text keeps its id
        embedding = await embed(chunk.text)
        table.declare_row(row=row_type(id=row_id, path=path, text=chunk.text, embedding=embedding))

    @coco.fn(memo=True)
    async def index_file(file: FileLike, table: Any) -> None:
        """A file's rows; skipped whole while the file is unchanged (mtime, then content)."""
        text = await file.read_text()
        chunks = splitter.split(
            text,
            MAX_CHARS,
            min_chunk_size=COCO_MIN_CHUNK,
            chunk_overlap=OVERLAP,
            language="markdown",
        )
        counts["chunks"] += len(chunks)
        path = file.file_path.path.as_posix()
        await coco.map(declare_chunk, chunks, path, IdGenerator(), table)

    @coco.fn
    async def app_main() -> None:
        schema = await coco_lancedb.TableSchema.from_class(row_type, primary_key=["id"])
        table = await coco_lancedb.mount_table_target(lance, COCO_TABLE, schema)
        matcher = PatternFilePathMatcher(included_patterns=["**/*.md"])
        # live: the walk can be watched (by an update with live=True); a plain walk otherwise.
        files = localfs.walk_dir(source_dir, recursive=True, path_matcher=matcher, live=live)
        await coco.mount_each(index_file, files.items(), table)

    @coco.lifespan
    async def lifespan(builder: Any) -> Any:
        builder.settings.db_path = state / "cocoindex.db"
        builder.provide(source_dir, root)
        builder.provide(lance, await coco_lancedb.connect_async(str(state / "lancedb")))
        yield

    return coco.App("ragd_peers", app_main), counts


def cocoindex_rows(state: Path, where: str | None = None) -> int:
    """Rows in CocoIndex's LanceDB table (matching a SQL filter), read as a reader would."""
    import lancedb

    table = lancedb.connect(str(state / "lancedb")).open_table(COCO_TABLE)
    return int(table.count_rows(where))


def worker_cocoindex(job: Job) -> dict[str, Any]:
    """One CocoIndex catch-up update; state: its LMDB database + the LanceDB table."""
    os.environ.update(OFFLINE_ENV)  # before the first import of cocoindex
    # The imports cocoindex_app needs, done before the clock starts, as for the other peers.
    import cocoindex as coco
    import cocoindex.connectors.lancedb
    import cocoindex.connectors.localfs
    import cocoindex.ops.text

    started = time.perf_counter()
    app, counts = cocoindex_app(job.root, job.state, job.model_dir)
    app.update_blocking()  # opens the state (lifespan), processes what changed, commits
    coco.stop_blocking()  # closes the environment and its database
    seconds = time.perf_counter() - started
    left = None
    if job.gone is not None:
        left = cocoindex_rows(job.state, f"path = '{job.gone.replace(chr(39), chr(39) * 2)}'")
    return {
        "seconds": seconds,
        "embedded": counts["embedded"],
        "chunks": counts["chunks"],
        "stored": cocoindex_rows(job.state),
        "left": left,
        "detail": {},
    }


WORKERS: dict[str, Callable[[Job], dict[str, Any]]] = {
    "langchain": worker_langchain,
    "llamaindex": worker_llamaindex,
    "llamaindex+cache": worker_llamaindex,
    "cocoindex": worker_cocoindex,
}


# --------------------------------------------------------------------------- the driver


@dataclass
class Run:
    """One indexing process: wall seconds, in-process seconds, texts embedded, peak RSS."""

    wall_s: float
    work_s: float
    embedded: int
    chunks: int
    rss_mib: int
    removed: int | None = None  # chunks deleted from the store by this run
    left: int | None = None  # after a delete: chunks of the deleted document still stored


@dataclass
class Result:
    """The figures of one system."""

    system: str
    splitter: str
    fulls: list[Run] = field(default_factory=list)
    noop: list[Run] = field(default_factory=list)
    edit: Run | None = None
    delete: Run | None = None

    @property
    def full(self) -> Run:
        """The full run whose state the later runs continue from (the last one)."""
        return self.fulls[-1]

    @property
    def full_wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.fulls)

    @property
    def full_work_s(self) -> float:
        return statistics.median(r.work_s for r in self.fulls)

    @property
    def noop_wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.noop)

    @property
    def noop_work_s(self) -> float:
        return statistics.median(r.work_s for r in self.noop)

    @property
    def noop_embedded(self) -> int:
        return max(r.embedded for r in self.noop)


def run_process(argv: list[str]) -> tuple[bytes, float, int]:
    """Run a command offline; return its stdout, wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, env=dict(os.environ, **OFFLINE_ENV))
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[0]} {' '.join(argv[1:4])} ... failed with exit code {code}")
    return output, seconds, usage.ru_maxrss // 1024


def ragd_config(home: Path, root: Path, state: Path, model: Path) -> Path:
    """ragd's config: one folder source, the chunk sizes the peers get, and the second stage
    off (none of the peers has one, and it would embed every chunk again)."""
    config = home / "config.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{state}"\n'
        f'[embedding]\nmodel = "{model}"\n'
        "[rerank]\nenabled = false\n"
        f"[chunking]\nmax_chars = {MAX_CHARS}\noverlap = {OVERLAP}\n"
        f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
        'include = ["**/*.md"]\n'
    )
    return config


def run_ragd(ragd: Path, config: Path) -> Run:
    """One `ragd index --json` process."""
    output, wall, rss = run_process([str(ragd), "--config", str(config), "index", "--json"])
    report = json.loads(output)
    chunks = report["chunks"]
    return Run(
        wall,
        float(report["seconds"]),
        chunks["embedded"],
        chunks["embedded"] + chunks["reused"],
        rss,
        removed=chunks["deleted"],
    )


def ragd_chunks_of(ragd: Path, config: Path, path: str) -> int:
    """BM25 hits in document `path` for the edit's sentence, which its edited chunk holds:
    after the document is deleted there must be none (and before, at least one)."""
    query = ["query", "--mode", "bm25", "--path", path, "-k", "1000", "--json"]
    output, _, _ = run_process([str(ragd), "--config", str(config), *query, EDIT_SENTENCE.strip()])
    return sum(1 for hit in json.loads(output)["results"] if hit["path"] == path)


def run_peer(peer: str, python: Path, job: Job) -> tuple[Run, int]:
    """One worker process of this script for a peer; the run and the chunks stored after."""
    result_file = job.state / "result.json"
    argv = [str(python), str(Path(__file__).resolve()), "--worker", peer]
    argv += ["--root", str(job.root), "--state", str(job.state), "--model", str(job.model_dir)]
    argv += ["--result", str(result_file)] + (["--gone", job.gone] if job.gone else [])
    _, wall, rss = run_process(argv)
    report = json.loads(result_file.read_text())
    run = Run(wall, report["seconds"], report["embedded"], report["chunks"], rss)
    run.left = report.get("left")
    return run, int(report["stored"])


def prepare(corpus: Path, work: Path) -> Path:
    """A pristine copy of the corpus's markdown under work; a .tar.gz is unpacked there."""
    pristine = work / "pristine"
    if corpus.is_file():
        with tarfile.open(corpus) as archive:
            archive.extractall(pristine, filter="data")
    else:
        for path in markdown_files(corpus):
            target = pristine / path.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return pristine


def bench_system(
    system: str, pristine: Path, work: Path, edit: Edit, args: argparse.Namespace
) -> Result:
    """Full index, no-op re-indexes, the one-section edit and the delete for one system."""
    home = work / system.replace("+", "-")
    root = home / "corpus"
    shutil.copytree(pristine, root, symlinks=True)
    state = home / "state"
    model = args.model.resolve()
    config = ragd_config(home, root, state, model)
    stored = 0  # peers: chunks in the store after the previous run

    def once(gone: str | None = None) -> Run:
        nonlocal stored
        if system == "ragd":
            run = run_ragd(args.ragd, config)
            if gone is not None:
                run.left = ragd_chunks_of(args.ragd, config, gone)
            return run
        job = Job(root, state, model, system == "llamaindex+cache", gone)
        run, after = run_peer(system, args.peer_python[system], job)
        run.removed, stored = max(0, stored - after), after
        return run

    result = Result(system, SPLITTERS[system])
    for number in range(args.full_runs):
        print(f"  {system}: full index {number + 1} ...", file=sys.stderr, flush=True)
        shutil.rmtree(state, ignore_errors=True)
        state.mkdir()
        stored = 0
        result.fulls.append(once())
    for _ in range(args.noop_runs):
        result.noop.append(once())
    apply_edit(root, edit)
    result.edit = once()
    if system == "ragd" and not ragd_chunks_of(args.ragd, config, edit.path):
        raise SystemExit(f"ragd: no BM25 hit for the edit in {edit.path}; the delete check is void")
    (root / edit.path).unlink()
    result.delete = once(gone=edit.path)
    print(
        f"  {system}: full {result.full_wall_s:.1f} s, no-op {result.noop_wall_s:.1f} s, "
        f"edit embedded {result.edit.embedded}, delete left {result.delete.left}",
        file=sys.stderr,
        flush=True,
    )
    return result


def print_table(results: list[Result], files: int, edit: Edit, args: argparse.Namespace) -> None:
    """Markdown tables of the figures: the runs, the in-process times, the delete."""
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"corpus:  {args.corpus} ({files} .md files)")
    print(f"model:   {args.model}")
    print(f"edit:    {edit.path}, line {edit.line + 1}, in section {edit.heading!r}")
    print(f"delete:  {edit.path}, after the edit")
    print()
    print(
        "| system | chunks | full index s | no-op re-index s | edit re-index s "
        "| embedded: full | embedded: no-op | embedded: one-section edit | full peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        assert r.edit is not None
        print(
            f"| {r.system} | {r.full.chunks} | {r.full_wall_s:.2f} | {r.noop_wall_s:.2f} | "
            f"{r.edit.wall_s:.2f} | {r.full.embedded} | {r.noop_embedded} | {r.edit.embedded} | "
            f"{r.full.rss_mib} |"
        )
    print()
    print("In-process seconds (interpreter start-up and imports excluded):")
    print()
    print("| system | full index s | no-op re-index s | edit re-index s | delete re-index s |")
    print("|---|---|---|---|---|")
    for r in results:
        assert r.edit is not None and r.delete is not None
        print(
            f"| {r.system} | {r.full_work_s:.2f} | {r.noop_work_s:.2f} | {r.edit.work_s:.2f} "
            f"| {r.delete.work_s:.2f} |"
        )
    print()
    print("One-file delete (a new process after the edited document was deleted):")
    print()
    print("| system | delete re-index s | in-process s | chunks removed | its chunks left |")
    print("|---|---|---|---|---|")
    for r in results:
        assert r.delete is not None
        print(
            f"| {r.system} | {r.delete.wall_s:.2f} | {r.delete.work_s:.2f} | {r.delete.removed} "
            f"| {r.delete.left} |"
        )
    print()
    print(
        f"full index: median of {args.full_runs} processes, each into empty state; "
        f"no-op: median of {args.noop_runs} processes; edit, delete: one process each. "
        "Splitters:"
    )
    for r in results:
        print(f"- {r.system}: {r.splitter}")


def peer_pythons(pairs: list[str], systems: list[str]) -> dict[str, Path]:
    """The interpreter of each peer: --peer-python NAME=PATH, else the default for it
    (CocoIndex's own venv), else this one."""
    pythons = {peer: DEFAULT_PEER_PYTHON.get(peer, Path(sys.executable)) for peer in PEERS}
    for pair in pairs:
        name, _, path = pair.partition("=")
        if name not in PEERS or not path:
            raise SystemExit(f"--peer-python wants NAME=PATH with NAME one of {', '.join(PEERS)}")
        pythons[name] = Path(path)
    for system in systems:
        if system in pythons and not pythons[system].exists():
            raise SystemExit(
                f"{system}: no interpreter at {pythons[system]} (see bench/peers/README.md, "
                f"or pass --peer-python {system}=PATH)"
            )
    return pythons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--ragd", type=Path, default=DEFAULT_RAGD, help="the ragd executable")
    parser.add_argument(
        "--systems",
        default=",".join(("ragd", *PEERS)),
        help="comma-separated subset of: ragd," + ",".join(PEERS),
    )
    parser.add_argument(
        "--peer-python",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="the interpreter a peer's workers run under (repeatable); default: "
        f"cocoindex={DEFAULT_PEER_PYTHON['cocoindex'].relative_to(REPO)}, "
        "the others this script's interpreter",
    )
    parser.add_argument("--full-runs", type=int, default=3)
    parser.add_argument("--noop-runs", type=int, default=3)
    parser.add_argument(
        "--edit-file",
        help="the document to edit, then delete, relative to CORPUS (default: a typical one)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    # Internal: one peer indexing pass in this process.
    parser.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--gone", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        job = Job(args.root, args.state, args.model, args.worker == "llamaindex+cache", args.gone)
        args.result.write_text(json.dumps(WORKERS[args.worker](job)))
        return

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - {"ragd", *PEERS}
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    args.peer_python = peer_pythons(args.peer_python, systems)
    with tempfile.TemporaryDirectory(prefix="ragd-peers-") as tmp:
        work = Path(tmp)
        pristine = prepare(args.corpus.resolve(), work)
        files = len(markdown_files(pristine))
        edit = choose_edit(pristine, args.edit_file)
        print(f"{files} files; edit {edit.path} line {edit.line + 1}", file=sys.stderr)
        results = [bench_system(s, pristine, work, edit, args) for s in systems]

    if args.json:
        body = {
            "corpus": str(args.corpus),
            "files": files,
            "edit": asdict(edit),
            "machine": {"arch": platform.machine(), "cores": os.cpu_count()},
            "results": [
                {
                    **asdict(r),
                    "full_wall_s": r.full_wall_s,
                    "full_work_s": r.full_work_s,
                    "noop_wall_s": r.noop_wall_s,
                    "noop_work_s": r.noop_work_s,
                }
                for r in results
            ],
        }
        print(json.dumps(body, indent=2))
    else:
        print_table(results, files, edit, args)


if __name__ == "__main__":
    main()
