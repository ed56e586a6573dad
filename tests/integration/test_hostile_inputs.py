"""Hostile inputs: a folder of pathological files and a flood of malformed queries.

The folder half runs one real `ragd index` over a root that holds every hostile file beside
a few normal pages, measuring the child's peak RSS, then checks each file's
outcome in `ragd status --json` and `ragd query --json`: indexed, or failed with a reason,
or (FIFOs, sockets, symlinks) never a document at all. Races between listing and reading
cannot be timed from outside the CLI, so those go through the library (FolderSource,
Indexer with a fake embedder).

The HTTP half throws hostile query bodies at a real `ragd serve`: each must be answered
with 200 and results or a 4xx JSON error, never a 5xx, and the daemon must stay healthy.
How long each takes is bench/hostile_queries.py's figure.
"""

from __future__ import annotations

import codecs
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragd.errors import DocumentError
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline
from ragd.sources.folders import FileContent, FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from tests.conftest import FASTAPI_DOCS, FakeEmbedder, write_config
from tests.integration.conftest import _AS_ORDINARY_READER, run_json, run_ragd
from tests.integration.daemon import Served

TUTORIAL = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial"
NORMAL_PAGES = ("body.md", "first-steps.md", "query-params.md")

# A hang (a FIFO opened, a quadratic parse) is a failure, not a stuck test run: the run
# takes seconds.
INDEX_TIMEOUT_SECONDS = 180
MAX_RSS_BYTES = 1_500_000_000
MAX_FILE_BYTES = 20_000_000  # daemon.max_file_bytes default
MAX_QUERY_CHARS = 2000  # search.max_query_chars default

SPARSE_BYTES = 200 * 1024 * 1024
LONG_LINE_BYTES = 10_000_000
BRACKETS = 200_000
NESTED_BULLETS = 100_000  # markdown-it.rs overflows its stack (SIGSEGV) at 10k-30k levels
EMPHASIS_RUNS = 150_000  # ~1 MB of `*b* _c_`: minutes, with inline parsing on
NESTED_DIVS = 100_000
HEADINGS = 100_000

# Marker words, one per hostile file, so a query can prove the file's text was indexed.
UTF16_WORD = "zebrawide"
LINE_HEAD = "longlinehead"
LINE_TAIL = "longlinetail"
BRACKET_WORD = "quokkabracket"
EMPHASIS_WORD = "numbatemphasis"
NESTED_WORD = "deepnestword"
HEADING_WORD = "headingmarker"
NORMAL_WORD = "wallabyguide"
SECRET_WORD = "exfiltrated"  # only outside the root, reachable only through symlinks
UNREADABLE_WORD = "forbiddenword"


# -- the hostile folder ---------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """A finished child process: exit code, output and peak RSS."""

    returncode: int
    stdout: str
    stderr: str
    max_rss_bytes: int


@dataclass(frozen=True)
class HostileRun:
    """The one index run over the hostile folder, and what status and queries say after it."""

    config: Path
    root: Path
    index: Measured
    report: dict[str, Any]
    source: dict[str, Any]

    @property
    def failed(self) -> dict[str, str]:
        return {d["path"]: d["error"] for d in self.source["failed_documents"]}

    @property
    def empty(self) -> list[str]:
        return list(self.source["empty_documents"])

    def query(self, text: str, k: int = 20) -> list[dict[str, Any]]:
        result = run_json(self.config, "query", text, "--mode", "bm25", "-k", str(k))
        hits: list[dict[str, Any]] = result["results"]
        return hits


def run_measured(config: Path, *args: str, timeout: float, unreadable_as_root: bool) -> Measured:
    """Run the real CLI like run_ragd, but reap it with wait4 to read its peak RSS."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAGD_CONFIG", None)
    prefix = _AS_ORDINARY_READER if unreadable_as_root else []
    # setpriv execs the interpreter, so the pid reaped below is ragd's own.
    command = [*prefix, sys.executable, "-m", "ragd", "--config", str(config), *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        while True:
            pid, wait_status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                process.kill()
                process.wait()
                raise AssertionError(f"ragd {' '.join(args)} still running after {timeout} s")
            time.sleep(0.02)
        process.returncode = os.waitstatus_to_exitcode(wait_status)
        out.seek(0)
        err.seek(0)
        return Measured(
            process.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            usage.ru_maxrss * 1024,  # Linux reports kilobytes
        )


def _write_hostile_files(root: Path, outside: Path) -> None:
    for name in NORMAL_PAGES:
        shutil.copyfile(TUTORIAL / name, root / name)
    (root / "normal.md").write_text(f"# Normal page\n\nThe {NORMAL_WORD} explains installation.\n")

    (root / "binary.md").write_bytes(b"# Binary\n\x00\x01\x02\xff" + bytes(range(256)) * 16)
    (root / "bad-utf8.md").write_bytes(b"# Caf\xe9\n\nna\xefve latin-1 text\n")
    utf16 = f"# Wide page\n\n{UTF16_WORD} appears in UTF-16 text with a BOM.\n"
    (root / "utf16.md").write_bytes(codecs.BOM_UTF16_LE + utf16.encode("utf-16-le"))
    (root / "empty.md").write_bytes(b"")
    with (root / "sparse.md").open("wb") as sparse:
        sparse.truncate(SPARSE_BYTES)  # a hole: no data blocks are written

    filler = "lorem ipsum dolor sit amet "
    body = filler * (LONG_LINE_BYTES // len(filler))
    line = f"{LINE_HEAD} {body}"[: LONG_LINE_BYTES - len(LINE_TAIL) - 1] + f" {LINE_TAIL}"
    (root / "one-line.md").write_text(line)  # no newline anywhere

    (root / "brackets.md").write_text(f"# {BRACKET_WORD}\n\n" + "[" * BRACKETS + "\n")
    (root / "nesting.md").write_text("- " * NESTED_BULLETS + "deep\n")
    (root / "emphasis.md").write_text(f"# {EMPHASIS_WORD}\n\n" + "a *b* _c_ " * EMPHASIS_RUNS)
    (root / "nested.html").write_text(
        "<html><body><h1>Nested</h1>"
        + "<div>" * NESTED_DIVS
        + NESTED_WORD
        + "</div>" * NESTED_DIVS
        + "</body></html>"
    )
    headings = "".join(f"<h{1 + i % 6}>Heading {i}</h{1 + i % 6}>" for i in range(HEADINGS))
    (root / "headings.html").write_text(
        f"<html><body>{headings}<p>{HEADING_WORD} under the last heading</p></body></html>"
    )

    os.mkfifo(root / "fifo.md")  # nobody ever writes it: a blocking open() hangs forever
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "socket.md"))

    unreadable = root / "unreadable.md"
    unreadable.write_text(f"# Unreadable\n\n{UNREADABLE_WORD}\n")
    unreadable.chmod(0o000)

    (root / "loop-a.md").symlink_to("loop-b.md")
    (root / "loop-b.md").symlink_to("loop-a.md")
    (root / "cycle").mkdir()
    (root / "cycle" / "up").symlink_to("..")  # followed, the tree would never end

    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET_WORD} credentials\n")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-dir").symlink_to(outside)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRun:
    base = tmp_path_factory.mktemp("hostile")
    root = base / "docs"
    root.mkdir()
    _write_hostile_files(root, base / "outside")
    config = write_config(base, root, include=("**/*.md", "**/*.html"))

    index = run_measured(
        config,
        "index",
        "--json",
        timeout=INDEX_TIMEOUT_SECONDS,
        unreadable_as_root=True,
    )
    assert index.returncode == 0, index.stderr
    status = run_json(config, "status")
    return HostileRun(config, root, index, json.loads(index.stdout), status["sources"][0])


def _paths(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["path"] for hit in hits]


def test_the_hostile_folder_run_exits_0(hostile: HostileRun) -> None:
    assert hostile.index.returncode == 0
    assert hostile.report["errors"] == []
    assert hostile.report["interrupted"] is False


def test_the_hostile_folder_run_stays_under_1_5_gb_of_memory(hostile: HostileRun) -> None:
    assert 0 < hostile.index.max_rss_bytes < MAX_RSS_BYTES, hostile.index.max_rss_bytes


def test_the_normal_pages_beside_hostile_files_are_indexed(hostile: HostileRun) -> None:
    hits = hostile.query(NORMAL_WORD)
    body_hits = hostile.query("request body pydantic model")

    assert _paths(hits)[:1] == ["normal.md"]
    assert "body.md" in _paths(body_hits)
    # 3 fastapi pages, normal, utf16, empty, one-line, brackets, nested, headings
    assert hostile.source["indexed"] == 11
    assert hostile.report["documents"]["added"] == 11


def test_the_failed_documents_are_exactly_the_five_unusable_files(hostile: HostileRun) -> None:
    assert set(hostile.failed) == {
        "binary.md",
        "bad-utf8.md",
        "sparse.md",
        "unreadable.md",
        "nesting.md",
    }
    assert hostile.report["documents"]["failed"] == 5
    assert hostile.source["documents"] == 16


def test_a_binary_file_is_failed_as_binary(hostile: HostileRun) -> None:
    assert "binary" in hostile.failed["binary.md"]


def test_an_invalid_utf8_file_is_failed_naming_the_encoding(hostile: HostileRun) -> None:
    assert "not valid UTF-8" in hostile.failed["bad-utf8.md"]
    assert "0xe9" in hostile.failed["bad-utf8.md"]


def test_a_utf16_file_with_a_bom_is_indexed_and_searchable(hostile: HostileRun) -> None:
    hits = hostile.query(UTF16_WORD)

    assert _paths(hits)[:1] == ["utf16.md"]
    assert hits[0]["title"] == "Wide page"
    assert f"{UTF16_WORD} appears in UTF-16 text" in hits[0]["text"]
    assert "\x00" not in hits[0]["text"]


def test_an_empty_file_is_an_empty_document_not_a_failure(hostile: HostileRun) -> None:
    assert hostile.empty == ["empty.md"]
    assert "empty.md" not in hostile.failed


def test_a_200_mb_sparse_file_is_failed_by_the_size_cap(hostile: HostileRun) -> None:
    reason = hostile.failed["sparse.md"]

    assert str(SPARSE_BYTES) in reason
    assert str(MAX_FILE_BYTES) in reason


def test_a_10_mb_single_line_is_indexed_from_head_to_tail(hostile: HostileRun) -> None:
    head = hostile.query(LINE_HEAD)
    tail = hostile.query(LINE_TAIL)

    assert _paths(head)[:1] == ["one-line.md"]
    assert _paths(tail)[:1] == ["one-line.md"]
    assert head[0]["text"].startswith(LINE_HEAD)
    assert tail[0]["text"].endswith(LINE_TAIL)
    assert all(len(hit["text"]) <= 900 for hit in head + tail)


def test_200000_open_brackets_are_indexed_as_text(hostile: HostileRun) -> None:
    hits = hostile.query(BRACKET_WORD)

    assert _paths(hits)[:1] == ["brackets.md"]
    assert set(hits[0]["text"]) == {"["}
    assert "brackets.md" not in hostile.failed


def test_markdown_nested_100000_deep_is_failed_with_a_reason_not_a_crash(
    hostile: HostileRun,
) -> None:
    assert "nesting" in hostile.failed["nesting.md"]


def test_a_megabyte_of_emphasis_is_indexed_as_text(hostile: HostileRun) -> None:
    hits = hostile.query(EMPHASIS_WORD)

    assert _paths(hits)[:1] == ["emphasis.md"]
    assert "emphasis.md" not in hostile.failed


def test_100000_nested_divs_are_indexed(hostile: HostileRun) -> None:
    hits = hostile.query(NESTED_WORD)

    assert _paths(hits)[:1] == ["nested.html"]
    assert hits[0]["text"] == NESTED_WORD
    assert hits[0]["heading_path"] == ["Nested"]


def test_100000_headings_are_indexed_with_a_bounded_heading_path(hostile: HostileRun) -> None:
    hits = hostile.query(HEADING_WORD)

    assert _paths(hits)[:1] == ["headings.html"]
    assert hits[0]["text"] == f"{HEADING_WORD} under the last heading"
    # h1..h6 cycle: the last heading (99999, an h4) sits under the h1..h3 just before it.
    assert hits[0]["heading_path"] == [f"Heading {i}" for i in (99996, 99997, 99998, 99999)]


def test_a_fifo_is_skipped_without_blocking_the_run(hostile: HostileRun) -> None:
    assert "fifo.md" not in hostile.failed
    assert "fifo.md" not in hostile.empty
    assert hostile.index.returncode == 0  # a blocking open would have hung it past its timeout


def test_a_unix_socket_is_skipped(hostile: HostileRun) -> None:
    assert "socket.md" not in hostile.failed
    assert "socket.md" not in hostile.empty


def test_a_file_without_read_permission_is_failed_as_permission_denied(
    hostile: HostileRun,
) -> None:
    assert "permission denied" in hostile.failed["unreadable.md"]
    assert hostile.query(UNREADABLE_WORD) == []


def test_symlink_loops_are_not_followed(hostile: HostileRun) -> None:
    listed = set(hostile.failed) | set(hostile.empty)

    assert not listed & {"loop-a.md", "loop-b.md"}
    assert not any(path.startswith("cycle/") for path in listed)


def test_a_symlink_escaping_the_root_is_not_followed(hostile: HostileRun) -> None:
    hits = hostile.query(f"{SECRET_WORD} credentials secret")

    assert not any(SECRET_WORD in hit["text"] for hit in hits)
    assert not any(hit["path"].startswith("escape") for hit in hits)
    assert not any(path.startswith("escape") for path in hostile.failed)


def test_a_file_name_that_is_not_utf8_does_not_abort_the_run(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.md").write_text(f"# Good\n\nThe {NORMAL_WORD} is here.\n")
    # A name from a latin-1 system: Python lists it as 'caf\udce9.md' (surrogateescape).
    with open(os.path.join(os.fsencode(root), b"caf\xe9.md"), "wb") as latin1_name:
        latin1_name.write(b"# Cafe\n\nmenu text\n")
    config = write_config(tmp_path, root)

    result = run_ragd(config, "index", "--json", timeout=INDEX_TIMEOUT_SECONDS)
    status = run_json(config, "status")

    assert result.returncode == 0, result.stderr
    assert status["sources"][0]["indexed"] >= 1
    assert "good.md" in _paths(run_json(config, "query", NORMAL_WORD, "--mode", "bm25")["results"])


def test_a_cli_query_of_invalid_utf8_bytes_is_not_an_internal_error(hostile: HostileRun) -> None:
    # argv bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape).
    query = os.fsdecode(b"quokka \xff \xed\xa0\x80 guide")

    result = run_ragd(hostile.config, "query", query, "--mode", "bm25", "--json")

    assert result.returncode in (0, 2), result.stderr
    assert "internal error" not in result.stderr


# -- races between listing and reading: through the library ----------------------------------


def _folder(root: Path) -> FolderSource:
    return FolderSource("docs", root, ("**/*.md",))


def test_reading_a_file_that_vanished_after_listing_is_a_document_error(tmp_path: Path) -> None:
    (tmp_path / "gone.md").write_text("# Gone\n\nsoon\n")
    folder = _folder(tmp_path)
    assert [f[0] for f in folder.scan().files] == ["gone.md"]
    (tmp_path / "gone.md").unlink()

    with pytest.raises(DocumentError, match="vanished"):
        folder.read("gone.md")


def test_a_file_swapped_for_a_fifo_after_listing_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    path = tmp_path / "swap.md"
    path.write_text("# Swap\n\ntext\n")
    folder = _folder(tmp_path)
    assert [f[0] for f in folder.scan().files] == ["swap.md"]
    path.unlink()
    os.mkfifo(path)
    outcome: list[BaseException | FileContent] = []

    def read() -> None:
        try:
            outcome.append(folder.read("swap.md"))
        except BaseException as exc:  # reported below, in the test's thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(1.0)
    blocked = reader.is_alive()
    if blocked:  # release the reader so no thread stays stuck in open()
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5.0)

    assert not blocked, "reading a FIFO blocked"
    assert isinstance(outcome[0], DocumentError)
    assert "not a regular file" in str(outcome[0])


def test_a_file_swapped_for_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (tmp_path / "secret.md").write_text(f"# Secret\n\n{SECRET_WORD}\n")
    path = root / "swap.md"
    path.write_text("# Swap\n\ntext\n")
    folder = _folder(root)
    assert [f[0] for f in folder.scan().files] == ["swap.md"]
    path.unlink()
    path.symlink_to(tmp_path / "secret.md")

    with pytest.raises(DocumentError):
        folder.read("swap.md")


class VanishingFolder(FolderSource):
    """A folder source whose files disappear right after listing, just before reading."""

    def read(self, key: str) -> FileContent:
        if key.startswith("doomed"):
            self.path_for(key).unlink()
        return super().read(key)


def _index(root: Path, data: Path, embedder: FakeEmbedder) -> tuple[dict[str, Any], Any]:
    stores = WriterStores(DataDir(data))
    try:
        folder = VanishingFolder("docs", root, ("**/*.md",))
        pipeline = Pipeline(ChunkSettings(900, 120), embedder.identity)
        report = Indexer(stores, [folder], pipeline, embedder).run().to_json()
        return report, stores.manifest.document("docs:doomed.md")
    finally:
        stores.close()


def test_a_file_deleted_between_listing_and_reading_is_failed_and_the_pass_completes(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfirst page\n")
    (root / "doomed.md").write_text("# Doomed\n\ngone before it is read\n")
    (root / "z.md").write_text("# Z\n\nlast page\n")

    report, doomed = _index(root, tmp_path / "data", fake_embedder)

    assert report["errors"] == []
    assert report["documents"]["added"] == 2
    assert report["documents"]["failed"] == 1
    assert doomed is not None and doomed.status == "failed"
    assert doomed.error is not None and "vanished" in doomed.error


def test_the_next_pass_forgets_a_file_that_vanished_while_being_read(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfirst page\n")
    (root / "doomed.md").write_text("# Doomed\n\ngone before it is read\n")
    _index(root, tmp_path / "data", fake_embedder)

    report, doomed = _index(root, tmp_path / "data", fake_embedder)

    assert report["documents"]["deleted"] == 1
    assert doomed is None or doomed.status == "deleted"


# -- hostile queries over HTTP ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


def _post_query(served: Served, body: bytes) -> Answer:
    """POST raw bytes to /v1/query on a fresh connection; status and parsed body. A
    request the daemon hangs on fails on the connection's 30 s timeout."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        connection.request(
            "POST", "/v1/query", body=body, headers={"Content-Type": "application/json"}
        )
        reply = connection.getresponse()
        raw = reply.read()
    finally:
        connection.close()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw
    return Answer(reply.status, parsed)


def _healthy(served: Served) -> bool:
    assert served.process is not None
    return served.process.poll() is None and served.get("/healthz")["status"] == "ok"


def _answered(served: Served, answer: Answer) -> None:
    """200 with results or a 4xx JSON error, and the daemon still healthy."""
    assert answer.status < 500, answer.body
    assert isinstance(answer.body, dict), answer.body
    if answer.status == 200:
        assert isinstance(answer.body["results"], list)
    else:
        assert 400 <= answer.status < 500
        assert isinstance(answer.body["error"], str) and answer.body["error"]
    assert _healthy(served)


def _ask(served: Served, payload: object) -> Answer:
    answer = _post_query(served, json.dumps(payload).encode())
    _answered(served, answer)
    return answer


def _bm25_ids(served: Served, text: str) -> list[str]:
    answer = _ask(served, {"query": text, "mode": "bm25", "k": 50})
    assert answer.status == 200, answer.body
    return [hit["chunk_id"] for hit in answer.body["results"]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("hostile-queries")
    root = base / "docs"
    root.mkdir()
    # No page says "chunk", "id", "doc", "to" or a single letter: field syntax and
    # range or wildcard syntax must match nothing.
    (root / "guide.md").write_text(
        "# Quokka guide\n\nThe quokka guide explains installation.\n\n"
        "## Install\n\nRun the installer and wait while the quokka finishes.\n"
    )
    (root / "settings.md").write_text(
        "# Settings\n\nEvery setting has a default value.\n\n"
        "## Text search\n\nThe text search ranks pages by their words.\n"
    )
    (root / "wombat.md").write_text("# Wombats\n\nWombats dig burrows with strong claws.\n")
    daemon = Served(base, root)
    daemon.start().wait_ready()
    daemon.wait_scanned()
    for _ in range(3):  # warm the query path: the first query opens readers and tables
        daemon.query("quokka guide", mode="hybrid")
    yield daemon
    daemon.stop()


def test_a_100_kb_query_is_refused_with_400(served: Served) -> None:
    answer = _ask(served, {"query": "quokka " * 15_000})

    assert answer.status == 400
    assert str(MAX_QUERY_CHARS) in answer.body["error"]


def test_a_query_one_character_over_the_limit_is_400(served: Served) -> None:
    answer = _ask(served, {"query": "q" * (MAX_QUERY_CHARS + 1)})

    assert answer.status == 400


def test_a_query_at_the_limit_is_answered(served: Served) -> None:
    text = ("quokka " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]

    answer = _ask(served, {"query": text})

    assert answer.status == 200
    assert answer.body["results"]


def test_5000_nested_parentheses_are_refused_as_too_long(served: Served) -> None:
    answer = _ask(served, {"query": "(" * 5000 + "quokka" + ")" * 5000})

    assert answer.status == 400


def test_nested_parentheses_within_the_limit_are_just_words(served: Served) -> None:
    depth = (MAX_QUERY_CHARS - len("quokka")) // 2
    nested = "(" * depth + "quokka" + ")" * depth

    assert _bm25_ids(served, nested) == _bm25_ids(served, "quokka")
    assert _bm25_ids(served, "quokka")


@pytest.mark.parametrize("text", ["chunk_id:*", "doc_id:*", "chunk_id:[* TO *]", "doc_id:docs*"])
def test_field_syntax_targets_no_field(served: Served, text: str) -> None:
    # Passed to Tantivy's parser, each of these would return every chunk.
    assert _bm25_ids(served, text) == []


def test_a_field_prefix_is_searched_as_a_word(served: Served) -> None:
    as_field = _bm25_ids(served, "text:quokka")

    assert as_field == _bm25_ids(served, "text quokka")
    assert as_field


def test_a_regex_flood_matches_nothing_by_bm25(served: Served) -> None:
    text = ("/.*/ " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]

    assert _bm25_ids(served, text) == []


def test_a_regex_flood_is_answered_in_hybrid_mode(served: Served) -> None:
    text = ("/.*/ " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]

    answer = _ask(served, {"query": text, "mode": "hybrid"})

    assert answer.status in (200, 400)


def test_a_wildcard_flood_is_answered(served: Served) -> None:
    text = ("a* b* c* " * 1000)[:MAX_QUERY_CHARS]

    answer = _ask(served, {"query": text})

    assert answer.status in (200, 400)


def test_a_wildcard_does_not_expand(served: Served) -> None:
    assert _bm25_ids(served, "quok* wom*") == []


def test_an_escaped_nul_inside_the_query_is_a_word_separator(served: Served) -> None:
    with_nul = _bm25_ids(served, "quokka\u0000guide\u0000")

    assert with_nul == _bm25_ids(served, "quokka guide")
    assert with_nul


def test_a_raw_nul_byte_inside_the_json_string_is_400(served: Served) -> None:
    answer = _post_query(served, b'{"query": "quokka\x00guide"}')

    _answered(served, answer)
    assert answer.status == 400


def test_a_lone_surrogate_in_the_query_is_not_a_server_error(served: Served) -> None:
    # Valid JSON, but not encodable as UTF-8 once decoded.
    answer = _post_query(served, b'{"query": "quokka \\ud800 guide"}')

    _answered(served, answer)


def test_a_body_of_invalid_utf8_is_400(served: Served) -> None:
    answer = _post_query(served, b'{"query": "quokka \xff\xfe guide"}')

    _answered(served, answer)
    assert answer.status == 400


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["array", "object", "in-query"],
)
def test_json_nested_100000_levels_deep_is_400(served: Served, body: bytes) -> None:
    answer = _post_query(served, body)

    _answered(served, answer)
    assert answer.status == 400


@pytest.mark.parametrize(
    "body",
    [b"[]", b'["quokka"]', b'"quokka"', b"42", b"null", b"true", b"", b"{", b"quokka"],
)
def test_a_body_that_is_not_a_json_object_is_400(served: Served, body: bytes) -> None:
    answer = _post_query(served, body)

    _answered(served, answer)
    assert answer.status == 400


@pytest.mark.parametrize(
    "fields",
    [
        {"k": "10"},
        {"k": 0},
        {"k": -1},
        {"k": 1001},
        {"k": 2**64},
        {"k": 1.5},
        {"k": 10.0},
        {"k": True},
        {"k": [10]},
        {"mode": "regex"},
        {"mode": "BM25"},
        {"mode": 1},
        {"mode": ["bm25"]},
        {"exclude_stale": "yes"},
        {"exclude_stale": 1},
        {"exclude_stale": {}},
        {"query": 123},
        {"query": None},
        {"query": ["quokka"]},
        {"query": ""},
        {"query": " \t\u0000\u001f "},
        {"limit": 5},
    ],
    ids=repr,
)
def test_wrong_field_types_are_400(served: Served, fields: dict[str, object]) -> None:
    answer = _ask(served, {"query": "quokka", **fields})

    assert answer.status == 400


def test_the_daemon_is_the_same_healthy_process_after_the_hostile_queries(
    served: Served,
) -> None:
    assert served.process is not None
    pid = served.status()["daemon"]["pid"]

    hits = served.query("quokka installer", mode="hybrid")

    assert _healthy(served)
    assert pid == served.process.pid
    assert hits["results"][0]["path"] == "guide.md"
