"""PDFium's child process: a PDF past its deadline or memory limit, or one that kills it,
fails with its reason, and the next PDF is read by a fresh child."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ragd.adapters.pdfium_process import PdfProcess
from ragd.adapters.pypdfium2 import PdfText, PdfUnreadable, read_pdf
from ragd.indexing.parsers import parse_document
from tests.pdfs import flate_bomb_pdf, text_pdf

FIXTURES = Path(__file__).parent / "fixtures" / "pdf"
LIMIT = 256 << 20
HELLO = text_pdf([["Hello"]])
# PDFs whose text asks `misbehave` to sleep, allocate or crash in the child.
SLEEP = text_pdf([["sleep"]])
ALLOCATE = text_pdf([["allocate"]])
CRASH = text_pdf([["crash"]])
_PID_FILE = re.compile(rb"\(pid file (.+?)\)")


def misbehave(data: bytes) -> None:
    """The child's `while_open` hook: a PDF that says so sleeps, allocates or crashes (and
    first writes the child's pid to the file it names, if it names one)."""
    named = _PID_FILE.search(data)
    if named:
        Path(named[1].decode()).write_text(str(os.getpid()))
    if b"(sleep)" in data:
        time.sleep(600)
    elif b"(allocate)" in data:
        bytearray(LIMIT)
    elif b"(crash)" in data:
        os.kill(os.getpid(), signal.SIGSEGV)


@pytest.fixture
def reader() -> Iterator[PdfProcess]:
    process = PdfProcess(memory_limit=LIMIT, deadline_s=2.0, page_s=0.0, while_open=misbehave)
    yield process
    process.close()


def read(process: PdfProcess, data: bytes) -> PdfText:
    return process.read(data, max_pages=100, max_page_chars=10_000, max_outline=100)


def reason(process: PdfProcess, data: bytes) -> str:
    with pytest.raises(PdfUnreadable) as caught:
        read(process, data)
    return caught.value.reason


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie not yet reaped has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(") ")[2].startswith("Z")


def wait_until(condition: Callable[[], object], seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_a_pdf_past_the_deadline_fails_naming_it(reader: PdfProcess) -> None:
    assert reason(reader, SLEEP) == "PDF took longer than 2 s to read"


def test_the_deadline_grows_by_the_allowance_for_each_page() -> None:
    process = PdfProcess(deadline_s=1.0, page_s=1.0, while_open=misbehave)
    try:
        assert reason(process, text_pdf([["sleep"], ["two"]])) == (
            "PDF took longer than 3 s to read"
        )
    finally:
        process.close()


def test_after_a_pdf_past_the_deadline_the_next_pdf_is_read_by_a_new_child(
    reader: PdfProcess,
) -> None:
    read(reader, HELLO)
    first = reader.pid
    reason(reader, SLEEP)
    assert read(reader, HELLO).pages == ("Hello",)
    assert reader.pid != first


def test_a_pdf_pdfium_inflates_past_the_memory_limit_fails_naming_it(
    reader: PdfProcess,
) -> None:
    # A Flate bomb, which parse_pdf refuses before PDFium sees it, here given to PDFium.
    assert reason(reader, flate_bomb_pdf(LIMIT)) == "PDF needed more than 256 MiB to read"
    assert read(reader, HELLO).pages == ("Hello",)


def test_a_memory_error_in_the_child_fails_naming_the_memory_limit(reader: PdfProcess) -> None:
    assert reason(reader, ALLOCATE) == "PDF needed more than 256 MiB to read"
    assert read(reader, HELLO).pages == ("Hello",)


def test_a_crash_in_the_child_fails_naming_the_signal_and_the_next_pdf_is_read(
    reader: PdfProcess,
) -> None:
    assert reason(reader, CRASH) == "the PDF reader crashed reading this PDF (SIGSEGV)"
    assert read(reader, HELLO).pages == ("Hello",)


def test_a_child_killed_between_pdfs_is_replaced(reader: PdfProcess) -> None:
    read(reader, HELLO)
    pid = reader.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # Reaped (active_children waits for ended children), so the reader sees it dead.
    assert wait_until(lambda: pid not in [c.pid for c in multiprocessing.active_children()])
    assert read(reader, HELLO).pages == ("Hello",)
    assert reader.pid != pid


def test_what_pdfium_refuses_fails_with_its_reason_and_keeps_the_child(
    reader: PdfProcess,
) -> None:
    read(reader, HELLO)
    pid = reader.pid
    assert reason(reader, b"%PDF-1.4 not really") == "not a readable PDF (corrupt or not a PDF)"
    assert reader.pid == pid


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.pdf")))
def test_the_child_reads_what_pdfium_reads_in_process(reader: PdfProcess, name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    try:
        here: PdfText | str = read_pdf(data, max_pages=100, max_page_chars=10_000, max_outline=100)
    except PdfUnreadable as exc:
        here = exc.reason
    try:
        apart: PdfText | str = read(reader, data)
    except PdfUnreadable as exc:
        apart = exc.reason
    assert apart == here


def test_the_parser_reads_pdfs_in_a_child_process() -> None:
    parse_document(HELLO, "hello.pdf")
    assert "ragd-pdf" in [child.name for child in multiprocessing.active_children()]


def test_the_child_ends_when_its_parent_is_killed_mid_pdf(tmp_path: Path) -> None:
    started = tmp_path / "child.pid"
    script = (
        "import sys\n"
        "from ragd.adapters.pdfium_process import PdfProcess\n"
        "from tests.test_pdf_limits import misbehave, read\n"
        "from tests.pdfs import text_pdf\n"
        "pdf = text_pdf([['sleep', f'pid file {sys.argv[1]}']])\n"
        "read(PdfProcess(while_open=misbehave), pdf)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(started)])
    try:
        assert wait_until(lambda: started.exists() and started.read_text() != "")
        child = int(started.read_text())
    finally:
        parent.kill()
        parent.wait()
    assert wait_until(lambda: gone(child))


_inherited: list[PdfProcess] = []  # the reader a forked process finds, as it was copied


def _read_in_a_fork() -> tuple[str, int | None]:
    return read(_inherited[0], HELLO).pages[0], _inherited[0].pid


def test_a_forked_copy_of_the_reader_starts_a_child_of_its_own(reader: PdfProcess) -> None:
    read(reader, HELLO)
    first = reader.pid
    _inherited[:] = [reader]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        text, forks_child = pool.submit(_read_in_a_fork).result(timeout=30)
    assert text == "Hello"
    assert forks_child != first
    assert read(reader, HELLO).pages == ("Hello",)
    assert reader.pid == first
