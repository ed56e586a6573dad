"""Peer comparison: ragd against LangChain's indexing API and LlamaIndex's IngestionPipeline.

Usage (in a separate venv, see bench/peers/README.md):
    .venv-peers/bin/python bench/peers/compare.py [CORPUS] [--model DIR] [--json]

CORPUS is a directory (default ../shared/corpora/fastapi-docs) or a .tar.gz to unpack. Each
system gets its own temporary copy of every *.md file under it, the same local model2vec model,
and three runs, each a fresh process that reloads the state the previous one persisted:

1. full index into empty state (median of --full-runs processes, each into fresh state);
2. no-op re-index, nothing changed (median of --noop-runs processes);
3. re-index after one paragraph of one section of one document was edited.

For each run it records the process wall time, the time spent inside the process on the work
itself (interpreter start-up and imports excluded) and how many texts were sent to the model.

ragd runs as real `ragd index --json` processes (the repository's venv). The peers run as
worker processes of this script (`--worker NAME`), with their state persisted between runs:
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
  re-embedding texts it has seen.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "fastapi-docs"
DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
DEFAULT_RAGD = REPO / ".venv" / "bin" / "ragd"

MAX_CHARS = 900  # ragd's default chunking.max_chars
OVERLAP = 120  # ragd's default chunking.overlap
BATCH_SIZE = 1024  # ragd's default embedding.batch_size; the peers get the same batches
EDIT_SENTENCE = " This sentence was added by the peer benchmark to change one section."

_PROSE_MARKS = ("-", "*", ">")  # list items and quotes count as prose lines to edit
PEERS = ("langchain", "llamaindex", "llamaindex+cache")
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

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Encode texts the way ragd does: one thread, model2vec batches of BATCH_SIZE."""
        if self._model is None:
            from model2vec import StaticModel

            self._model = StaticModel.from_pretrained(str(self.model_dir))
        vectors = self._model.encode(texts, batch_size=BATCH_SIZE, use_multiprocessing=False)
        return [[float(x) for x in row] for row in vectors]


# --------------------------------------------------------------------------- peer workers


def worker_langchain(root: Path, state: Path, model_dir: Path, cached: bool) -> dict[str, Any]:
    """One LangChain indexing pass; state: SQLite record manager + JSON vector store."""
    del cached  # the record manager already skips unchanged chunks
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
    return {
        "seconds": time.perf_counter() - started,
        "embedded": embeddings.count,
        "chunks": chunks,
        "stored": len(store.store),
        "detail": dict(result),
    }


def worker_llamaindex(root: Path, state: Path, model_dir: Path, cached: bool) -> dict[str, Any]:
    """One LlamaIndex ingestion pass; state: persisted docstore + JSON vector store."""
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
    return {
        "seconds": time.perf_counter() - started,
        "embedded": embed.count,
        "chunks": len(nodes),
        "stored": len(vector_store.data.embedding_dict),
        "detail": {"documents": len(documents), "nodes_processed": len(nodes)},
    }


WORKERS: dict[str, Callable[[Path, Path, Path, bool], dict[str, Any]]] = {
    "langchain": worker_langchain,
    "llamaindex": worker_llamaindex,
    "llamaindex+cache": worker_llamaindex,
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


@dataclass
class Result:
    """The figures of one system."""

    system: str
    splitter: str
    fulls: list[Run] = field(default_factory=list)
    noop: list[Run] = field(default_factory=list)
    edit: Run | None = None

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
    """Run a command; return its stdout, wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, env=dict(os.environ, HF_HUB_OFFLINE="1")
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[0]} {' '.join(argv[1:4])} ... failed with exit code {code}")
    return output, seconds, usage.ru_maxrss // 1024


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
    )


def run_peer(peer: str, root: Path, state: Path, model: Path) -> Run:
    """One worker process of this script for a peer."""
    result_file = state / "result.json"
    _, wall, rss = run_process(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            peer,
            "--root",
            str(root),
            "--state",
            str(state),
            "--model",
            str(model),
            "--result",
            str(result_file),
        ]
    )
    report = json.loads(result_file.read_text())
    return Run(wall, report["seconds"], report["embedded"], report["chunks"], rss)


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
    """Full index, no-op re-indexes and the one-section edit for one system."""
    home = work / system.replace("+", "-")
    root = home / "corpus"
    shutil.copytree(pristine, root, symlinks=True)
    state = home / "state"
    if system == "ragd":
        config = home / "config.toml"
        config.write_text(
            f'[daemon]\ndata_dir = "{state}"\n'
            f'[embedding]\nmodel = "{args.model.resolve()}"\n'
            f"[chunking]\nmax_chars = {MAX_CHARS}\noverlap = {OVERLAP}\n"
            f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
            'include = ["**/*.md"]\n'
        )

        def once() -> Run:
            return run_ragd(args.ragd, config)
    else:

        def once() -> Run:
            return run_peer(system, root, state, args.model.resolve())

    result = Result(system, SPLITTERS[system])
    for number in range(args.full_runs):
        print(f"  {system}: full index {number + 1} ...", file=sys.stderr, flush=True)
        shutil.rmtree(state, ignore_errors=True)
        state.mkdir()
        result.fulls.append(once())
    for _ in range(args.noop_runs):
        result.noop.append(once())
    apply_edit(root, edit)
    result.edit = once()
    print(
        f"  {system}: full {result.full_wall_s:.1f} s, no-op {result.noop_wall_s:.1f} s, "
        f"edit embedded {result.edit.embedded}",
        file=sys.stderr,
        flush=True,
    )
    return result


def print_table(results: list[Result], files: int, edit: Edit, args: argparse.Namespace) -> None:
    """One markdown table of the figures, and the in-process times beside them."""
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"corpus:  {args.corpus} ({files} .md files)")
    print(f"model:   {args.model}")
    print(f"edit:    {edit.path}, line {edit.line + 1}, in section {edit.heading!r}")
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
    print("| system | full index s | no-op re-index s | edit re-index s |")
    print("|---|---|---|---|")
    for r in results:
        assert r.edit is not None
        print(f"| {r.system} | {r.full_work_s:.2f} | {r.noop_work_s:.2f} | {r.edit.work_s:.2f} |")
    print()
    print(
        f"full index: median of {args.full_runs} processes, each into empty state; "
        f"no-op: median of {args.noop_runs} processes; edit: one process. Splitters:"
    )
    for r in results:
        print(f"- {r.system}: {r.splitter}")


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
    parser.add_argument("--full-runs", type=int, default=3)
    parser.add_argument("--noop-runs", type=int, default=3)
    parser.add_argument(
        "--edit-file", help="the document to edit, relative to CORPUS (default: a typical one)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    # Internal: one peer indexing pass in this process.
    parser.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        report = WORKERS[args.worker](
            args.root, args.state, args.model, args.worker == "llamaindex+cache"
        )
        args.result.write_text(json.dumps(report))
        return

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - {"ragd", *PEERS}
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
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
