"""SIGKILL at every fault point of tests/faults.py, then run again: the stores equal a rebuild.

Each case starts from the same indexed state (400 tldr pages, version 1), changes the corpus to
version 2 (120 edited, 200 added, 30 deleted, 20 moved into a subdirectory: 390 documents to
write, so `ragd index` flushes twice: 256 documents, then the rest with the deletions), runs the
real `ragd index` with a crash plan (tests/integration/crashing_ragd.py) and expects it to die
of SIGKILL. A normal
`ragd index --json` must then reconcile and leave the three stores exactly as a from-scratch
index of version 2 in another data_dir: the same chunk ids in the manifest, LanceDB and Tantivy,
no duplicates, the same chunk texts and documents, and the same top 10 from `ragd query` in
bm25 and hybrid mode (up to Tantivy's score drift, see `_assert_same_top`). Every case runs
twice: with the vectors on local disk, and on a real S3 server ([storage] uri on SeaweedFS).

`during_compaction` is reached once a vector table is fragmented enough to compact; a child
process runs the writer's compaction step (`ragd.indexing.passes.settle_vectors`) on one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragd.cli import main as cli_main
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.records import DocId
from ragd.stores.vectors import VectorRow, VectorStore
from tests import faults
from tests.conftest import REPO, SHARED, storage_section, write_config
from tests.faults import FaultPlan
from tests.integration.conftest import run_json

TLDR = SHARED / "corpora" / "tldr-pages.tar.gz"
PAGES = 600  # the first 600 common pages in name order; version 1 uses 400 of them
QUERIES = ("list files in a directory", "compress an archive", "show network interfaces")
MODES = ("bm25", "hybrid")
# The vector store on local disk, and on an S3 server ([storage] uri, SeaweedFS on loopback).
STORAGES = ("local", "s3")
_CRASHING_RAGD = (sys.executable, "-m", "tests.integration.crashing_ragd")
# How much a score may move between an index that replaced chunks and a fresh one. Measured
# here: up to 1.09 (bm25) and 1.06 (hybrid), the same with or without a crash; much more would
# mean something other than Tantivy's statistics differs.
MAX_SCORE_DRIFT = 1.25

# (fault plan, what the stores hold when the process dies). `:2` is the second flush of the
# run, after the first committed; it carries the deletions, which come after all visits.
CASES = [
    ("mid_batch:2", "first flush committed, second not started"),
    ("after_intent", "first flush's intent committed, no store written"),
    ("after_lancedb:2", "second flush in LanceDB only (its deletions too)"),
    ("after_tantivy", "first flush in both search stores, not in the manifest"),
    ("before_commit:2", "second flush in both search stores, not in the manifest"),
]


def _read_pages() -> dict[str, bytes]:
    """The first PAGES common pages by name, read in one pass over the archive."""
    found: dict[str, bytes] = {}
    with tarfile.open(TLDR) as archive:
        for member in archive:
            name = member.name
            if member.isfile() and name.startswith("tldr/pages/common/") and name.endswith(".md"):
                handle = archive.extractfile(member)
                assert handle is not None
                found[name.rsplit("/", 1)[1]] = handle.read()
    return {name: found[name] for name in sorted(found)[:PAGES]}


def _version_1(pages: dict[str, bytes]) -> dict[str, bytes]:
    return dict(list(pages.items())[:400])


def _version_2(pages: dict[str, bytes]) -> dict[str, bytes]:
    """Of version 1's pages: 30 deleted, 20 moved under moved/, 120 edited; 200 pages added."""
    names = list(pages)
    files: dict[str, bytes] = {}
    for i, name in enumerate(names[:400]):
        if i < 30:
            continue
        if i < 50:
            files[f"moved/{name}"] = pages[name]
        elif i < 170:
            extra = f"\n- Check the crash-recovery example:\n\n`{name[:-3]} --fault-check`\n"
            files[name] = pages[name] + extra.encode()
        else:
            files[name] = pages[name]
    for name in names[400:]:
        files[name] = pages[name]
    return files


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for key, data in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _move_to(root: Path, files: dict[str, bytes]) -> None:
    """Make the tree under root hold exactly `files`, touching only what differs."""
    for path in sorted(root.rglob("*.md")):
        key = path.relative_to(root).as_posix()
        if key not in files:
            path.unlink()
    for key, data in files.items():
        path = root / key
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


@dataclass(frozen=True)
class Snapshot:
    """What the stores of one data_dir hold, and what `ragd query` answers from them."""

    chunk_ids: frozenset[str]
    chunks: dict[str, tuple[str, int, tuple[str, ...], str]]  # id -> doc, ordinal, path, text
    documents: dict[DocId, tuple[str, str | None, str]]  # doc_id -> status, hash, title
    answers: dict[tuple[str, str], list[tuple[str, float]]]  # (mode, query) -> ranking


def _snapshot(config: Path, data: Path, storage_uri: str | None = None) -> Snapshot:
    manifest = ManifestReader.open(data / "state.db")
    location = data / "lancedb" if storage_uri is None else f"{storage_uri}/lancedb"
    vectors = VectorStore.open_readonly(location)
    keywords = KeywordStore.open_readonly(data / "tantivy")
    try:
        listed = manifest.chunk_ids()
        # The manifest is the truth; each search store must list exactly its chunks, once.
        assert vectors.chunk_ids() == listed, "LanceDB disagrees with the manifest"
        assert keywords.chunk_ids() == listed, "Tantivy disagrees with the manifest"
        assert vectors.count() == len(listed), "duplicate rows in LanceDB"
        assert keywords.count() == len(listed), "duplicate documents in Tantivy"
        chunks = {
            c.chunk_id: (c.doc_id, c.ordinal, c.heading_path, c.text)
            for c in manifest.chunks(listed).values()
        }
        documents = {d.doc_id: (d.status, d.content_hash, d.title) for d in manifest.documents()}
    finally:
        manifest.close()
    return Snapshot(frozenset(listed), chunks, documents, _answers(config))


def _answers(config: Path) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """Top 50 per (mode, query) from `ragd query --json`.

    Run through the CLI's own entry point in this process: the same command, without paying
    ~2 s of imports for each of the 6 queries of each case (the budget of this file is 120 s).
    """
    answers: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for mode in MODES:
        for query in QUERIES:
            out = io.StringIO()
            args = ["--config", str(config), "query", query, "--json", "--mode", mode, "-k", "50"]
            with contextlib.redirect_stdout(out):
                code = cli_main(args)
            assert code == 0, (mode, query, out.getvalue())
            body: dict[str, Any] = json.loads(out.getvalue())
            answers[mode, query] = [
                (hit["chunk_id"], float(hit["score"])) for hit in body["results"]
            ]
    return answers


def _assert_same_top(
    got: list[tuple[str, float]], want: list[tuple[str, float]], top: int = 10
) -> None:
    """The same top results as the rebuild, allowing only for Tantivy's statistics drift.

    Tantivy counts deleted documents in its BM25 statistics (document frequencies, average
    length) until their segment is merged, and tantivy-py cannot force a merge. So an index
    that replaced chunks scores a little differently from a fresh one (measured: 6.469 where
    the rebuild gives 6.386) and can swap results whose scores nearly tie. The rule:

    - every result of either top list is among the other's results (top 50);
    - the score ratio r between the two indexes, over those results, stays small;
    - with r == 1 (no drift) the top lists are equal, ties ordered by chunk id;
    - otherwise each result of one top list scores in the other at least that list's cut-off
      divided by r**2: what a ratio of at most r can explain, and no more.
    """
    got_score, want_score = dict(got), dict(want)
    assert len(got_score) == len(got), f"a chunk is returned twice: {got}"
    tops = {c for c, _ in got[:top]} | {c for c, _ in want[:top]}
    missing = tops - (got_score.keys() & want_score.keys())
    assert not missing, f"in one top {top} and missing from the other's results: {missing}"
    ratio = max(max(got_score[c], want_score[c]) / min(got_score[c], want_score[c]) for c in tops)
    assert ratio <= MAX_SCORE_DRIFT, f"scores differ by a factor {ratio:.3f}"
    if ratio <= 1 + 1e-6:
        assert sorted(got, key=_by_score)[:top] == sorted(want, key=_by_score)[:top]
        return
    for mine, theirs, label in ((got, want_score, "rebuild"), (want, got_score, "recovered")):
        cut = sorted(theirs.values(), reverse=True)[:top][-1]
        for chunk, _ in mine[:top]:
            assert theirs[chunk] >= cut / ratio**2 - 1e-9, (
                f"{chunk} ranks in one top {top} but scores {theirs[chunk]} in the {label}, "
                f"below its cut-off {cut} beyond what drift {ratio:.4f} explains"
            )


def _by_score(hit: tuple[str, float]) -> tuple[float, str]:
    return -hit[1], hit[0]


def _assert_equal(recovered: Snapshot, rebuilt: Snapshot) -> None:
    assert recovered.chunk_ids == rebuilt.chunk_ids
    assert recovered.chunks == rebuilt.chunks
    assert recovered.documents == rebuilt.documents
    assert {status for status, _, _ in recovered.documents.values()} == {"indexed"}
    for key, want in rebuilt.answers.items():
        _assert_same_top(recovered.answers[key], want)


@dataclass(frozen=True)
class Setup:
    base: Path  # version 1, indexed: docs/ and data/
    version_2: dict[str, bytes]
    rebuilt: Snapshot


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    pages = _read_pages()
    assert len(pages) == PAGES
    base = tmp_path_factory.mktemp("version-1")
    _write_tree(base / "docs", _version_1(pages))
    report = run_json(write_config(base, base / "docs"), "index")
    assert report["documents"]["added"] == 400

    version_2 = _version_2(pages)
    scratch = tmp_path_factory.mktemp("rebuild")
    _write_tree(scratch / "docs", version_2)
    config = write_config(scratch, scratch / "docs")
    report = run_json(config, "index")
    assert report["documents"]["added"] == len(version_2)
    return Setup(base, version_2, _snapshot(config, scratch / "data"))


def _copy_base(setup: Setup, target: Path) -> Path:
    """A copy of the indexed version 1 (copy2 keeps mtimes, so nothing looks changed)."""
    shutil.copytree(setup.base / "docs", target / "docs")
    shutil.copytree(setup.base / "data", target / "data")
    return write_config(target, target / "docs")


def _index_base_at(setup: Setup, target: Path, uri: str) -> Path:
    """Version 1 indexed with its vectors at `uri` (an object store prefix): indexed
    afresh, as a LanceDB dataset on object storage is not copied like a directory."""
    shutil.copytree(setup.base / "docs", target / "docs")
    config = write_config(target, target / "docs", sections=storage_section(uri))
    assert run_json(config, "index")["documents"]["added"] == 400
    return config


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize(("fault", "state"), CASES, ids=[c[0] for c in CASES])
def test_a_kill_at_a_fault_point_is_repaired_by_the_next_run(
    setup: Setup,
    tmp_path: Path,
    fault: str,
    state: str,
    storage: str,
    request: pytest.FixtureRequest,
) -> None:
    uri: str | None = None
    if storage == "s3":
        uri = request.getfixturevalue("s3_uri")
        config = _index_base_at(setup, tmp_path, uri)
    else:
        config = _copy_base(setup, tmp_path)
    _move_to(tmp_path / "docs", setup.version_2)

    killed = _run_crashing(config, fault, "index")
    assert killed.returncode == -signal.SIGKILL, (fault, state, killed.stderr[-2000:])

    report = run_json(config, "index")
    assert report["reconciled"] is True, report
    assert report["documents"]["failed"] == 0 and not report["errors"], report
    _assert_equal(_snapshot(config, tmp_path / "data", uri), setup.rebuilt)


def test_every_named_point_has_a_case() -> None:
    # poisoned_parse has its cases in tests/integration/test_parse_crash.py, the second
    # stage's in tests/integration/test_second_stage_faults.py.
    # mid_publish has its case in tests/integration/test_replicas.py.
    elsewhere = {
        "during_compaction",
        "poisoned_parse",
        "after_second_stage",
        "second_stage_rows",
        "mid_publish",
    }
    covered = {fault.partition(":")[0] for fault, _ in CASES} | elsewhere
    assert covered == set(faults.POINTS)


def _run_crashing(config: Path, fault: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    return subprocess.run(
        [*_CRASHING_RAGD, fault, "--config", str(config), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


# -- the plan itself ----------------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import sys
    from tests.faults import POINTS, FaultPlan
    plan = FaultPlan.parse(sys.argv[1])
    for round in (1, 2, 3):
        for name in POINTS:
            plan.reached(name)
        print(round, flush=True)
    """
)


def _probe(fault: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, fault], capture_output=True, text=True, check=False, cwd=REPO
    )


def test_without_a_plan_every_fault_point_is_a_no_op() -> None:
    plan = FaultPlan()
    for _ in range(3):
        for name in faults.POINTS:
            plan.reached(name)  # still alive


def test_a_count_picks_the_nth_arrival() -> None:
    second = _probe("after_lancedb:2")
    assert (second.returncode, second.stdout.split()) == (-signal.SIGKILL, ["1"])
    first = _probe("after_lancedb")
    assert (first.returncode, first.stdout) == (-signal.SIGKILL, "")


@pytest.mark.parametrize(
    "spec", ["after_lance", "after_lancedb:0", "after_lancedb:x", "mid_batch:1"]
)
def test_a_misspelt_plan_is_refused_before_anything_runs(spec: str) -> None:
    with pytest.raises(ValueError, match="fault"):
        FaultPlan.parse(spec)


def test_a_worker_process_counts_its_own_arrivals() -> None:
    import pickle

    plan = FaultPlan("after_lancedb", 2)
    plan.reached("after_lancedb")  # the first arrival here

    copy = pickle.loads(pickle.dumps(plan))

    assert repr(copy) == "FaultPlan('after_lancedb', 2)"
    assert copy._arrivals == 0  # a new process starts counting anew


# -- during_compaction --------------------------------------------------------------------------

DIM = 64

_COMPACT = textwrap.dedent(
    """
    import sys, warnings
    from datetime import timedelta
    from pathlib import Path
    from ragd.indexing.passes import settle_vectors
    from ragd.stores.vectors import VectorStore
    from tests.faults import FaultPlan
    warnings.simplefilter("ignore")  # LanceDB warns about cleanup_older_than=0
    store = VectorStore.open(Path(sys.argv[1]), int(sys.argv[2]))
    plan = FaultPlan.parse(sys.argv[3]) if len(sys.argv) > 3 else FaultPlan()
    print("ready", flush=True)
    settle_vectors(plan(store), timedelta(0))
    print("done", flush=True)
    """
)


def _fragmented_table(directory: Path) -> frozenset[str]:
    """40 commits of 1,000 rows with deletes in between: ~80 ms of work for optimize."""
    store = VectorStore.open(directory, DIM)
    rng = np.random.default_rng(7)
    for batch in range(40):
        docs = [f"doc-{batch}-{i}" for i in range(100)]
        vectors = rng.standard_normal((1000, DIM)).astype(np.float32)
        store.replace_documents(
            docs,
            [
                VectorRow(f"{docs[j // 10]}#{j % 10}", docs[j // 10], vectors[j])
                for j in range(1000)
            ],
        )
        if batch % 2:  # delete a third of the previous batch's documents: deletion files
            store.replace_documents([f"doc-{batch - 1}-{i}" for i in range(0, 100, 3)], [])
    ids = store.chunk_ids()
    assert store.count() == len(ids)
    return frozenset(ids)


def _assert_intact(directory: Path, expected: frozenset[str]) -> None:
    store = VectorStore.open_readonly(directory)
    assert store.chunk_ids() == expected
    assert store.count() == len(expected)
    assert len(store.search(np.ones(DIM, dtype=np.float32), 5)) == 5  # data files still read


def _compact(directory: Path, fault: str | None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _COMPACT, str(directory), str(DIM), *([fault] if fault else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,  # where tests.faults is found
    )


def _wait_ready(process: subprocess.Popen[str]) -> None:
    """Block until the child has imported LanceDB and opened the table."""
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    assert line == "ready\n", process.stderr.read()


def test_a_kill_at_during_compaction_leaves_the_table_intact(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    expected = _fragmented_table(pristine)
    directory = tmp_path / "lancedb"
    shutil.copytree(pristine, directory)

    process = _compact(directory, "during_compaction")
    _, err = process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, err
    _assert_intact(directory, expected)

    # The fault point sits before LanceDB starts. Kills inside optimize itself come from
    # outside, each on a fresh copy of the fragmented table, spread over its ~0.1 s.
    interrupted = 0
    for trial, delay in enumerate((0.0, 0.03, 0.08, 0.15)):
        directory = tmp_path / f"trial-{trial}"
        shutil.copytree(pristine, directory)
        process = _compact(directory, None)
        _wait_ready(process)
        time.sleep(delay + random.uniform(0, 0.01))
        process.send_signal(signal.SIGKILL)
        out, _ = process.communicate(timeout=120)
        interrupted += "done" not in out
        _assert_intact(directory, expected)
    assert interrupted, "every kill came after optimize finished"

    # The writer carries on after a kill: a write, then a complete compaction.
    store = VectorStore.open(directory, DIM)
    store.replace_documents(["doc-0-1"], [])
    store.optimize(timedelta(hours=1))
    _assert_intact(directory, frozenset(c for c in expected if not c.startswith("doc-0-1#")))
