"""Parse throughput per format: files/s and MB/s (and pages/s for PDF) of `parse_document`.

Usage:
    python bench/parse_formats.py [--seconds 2] [--rounds 3] [--rst-root DIR ...] [--json]

Each format's set of real documents is parsed in this process by `parse_document`
(ragd.indexing.parsers), repeated until a round has run `--seconds` of CPU time, for
`--rounds` rounds; then the same for parse + `chunk_document` (900/120, the default).
Figures are the median round in CPU time, one core (the machine's other load shows in wall
time only, printed beside them); PDF's are wall time, as PDFium reads in a child process
whose CPU this one does not see. PDF is then also parsed on a pool of 2 processes, in wall
time: the issue's target is >= 20 pages/s on 2 cores.

The sets, nothing copied into the repository:
- markdown: fastapi-docs' 155 pages (../shared/corpora/fastapi-docs), MkDocs generator
  markup included;
- html: the same pages rendered to HTML by markdown-it-py (no site chrome);
- text: the same pages read as `.txt`;
- mdx, rst, notebook, pdf: tests/fixtures/{mdx,rst,notebooks,pdf} (real pages, READMEs
  there), without the invalid notebook and the two PDFs ragd refuses (encrypted, image
  only); pdf adds zlib's "Everything we know about CRC" paper from the cmeel-zlib wheel
  when /opt/pypi/files has it. `--rst-root` adds every .rst under a directory (a checkout
  of Kitware/CMake's Help/, 2,458 pages, is a realistic one).
A document ragd refuses is counted and its reason printed; it still counts in the sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "daemon"))

from ragd.adapters.pypdfium2 import read_pdf  # noqa: E402
from ragd.indexing.chunking import ChunkSettings, chunk_document  # noqa: E402
from ragd.indexing.parsers import UnsupportedDocument, parse_document  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
FASTAPI_DOCS = REPO.parent / "shared" / "corpora" / "fastapi-docs" / "docs" / "en" / "docs"
ZLIB_WHEEL = Path("/opt/pypi/files/cmeel_zlib-1.3.2-0-py3-none-manylinux_2_28_x86_64.whl")
REFUSED_PDFS = ("matplotlib-logo.pdf", "matplotlib-logo-encrypted.pdf")
SETTINGS = ChunkSettings()

Files = list[tuple[str, bytes]]


@dataclass(frozen=True)
class Figure:
    """One format's median round: throughput in CPU time, and the wall time beside it."""

    format: str
    step: str
    files: int
    megabytes: float
    pages: int | None
    sections: int
    chunks: int | None  # None: not chunked
    refused: int
    files_per_s: float
    mb_per_s: float
    pages_per_s: float | None
    wall_files_per_s: float


def _fastapi_pages() -> Files:
    pages = sorted(FASTAPI_DOCS.rglob("*.md"))
    if len(pages) < 100:
        sys.exit(f"{FASTAPI_DOCS} is missing: ../shared/corpora/fastapi-docs is needed")
    return [(p.name, p.read_bytes()) for p in pages]


def _as_html(pages: Files) -> Files:
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark").enable("table").render
    return [
        (
            name.removesuffix(".md") + ".html",
            f"<!doctype html><html><head><title>{name}</title></head><body><main>"
            f"{render(data.decode())}</main></body></html>".encode(),
        )
        for name, data in pages
    ]


def _fixtures(folder: str, pattern: str, *, skip: tuple[str, ...] = ()) -> Files:
    found = sorted(p for p in (FIXTURES / folder).glob(pattern) if p.name not in skip)
    return [(p.name, p.read_bytes()) for p in found]


def _pdfs() -> Files:
    pdfs = _fixtures("pdf", "*.pdf", skip=REFUSED_PDFS)
    if ZLIB_WHEEL.exists():
        with zipfile.ZipFile(ZLIB_WHEEL) as wheel:
            pdfs += [
                (Path(n).name, wheel.read(n))
                for n in wheel.namelist()
                if n.endswith(".pdf") and "mpl-data" not in n
            ]
    return pdfs


def format_sets(rst_roots: list[Path]) -> dict[str, Files]:
    fastapi = _fastapi_pages()
    rst = _fixtures("rst", "*.rst")
    rst += [(p.name, p.read_bytes()) for root in rst_roots for p in sorted(root.rglob("*.rst"))]
    return {
        "markdown": fastapi,
        "mdx": _fixtures("mdx", "*.mdx"),
        "rst": rst,
        "notebook": _fixtures("notebooks", "*.ipynb", skip=("invalid.ipynb",)),
        "html": _as_html(fastapi),
        "text": [(name.removesuffix(".md") + ".txt", data) for name, data in fastapi],
        "pdf": _pdfs(),
    }


def _page_count(data: bytes) -> int:
    return len(read_pdf(data, max_pages=100_000, max_page_chars=1, max_outline=0).pages)


def _parse(files: Files) -> tuple[int, int, Counter[str]]:
    sections, refused = 0, Counter[str]()
    for name, data in files:
        try:
            sections += len(parse_document(data, name).sections)
        except UnsupportedDocument as exc:
            refused[exc.reason] += 1
    return sections, 0, refused


def _parse_and_chunk(files: Files) -> tuple[int, int, Counter[str]]:
    sections = chunks = 0
    refused = Counter[str]()
    for name, data in files:
        try:
            doc = parse_document(data, name)
        except UnsupportedDocument as exc:
            refused[exc.reason] += 1
            continue
        sections += len(doc.sections)
        chunks += len(chunk_document(doc, SETTINGS))
    return sections, chunks, refused


STEPS: dict[str, Callable[[Files], tuple[int, int, Counter[str]]]] = {
    "parse": _parse,
    "parse+chunk": _parse_and_chunk,
}


def measure(
    fmt: str, step: str, files: Files, pages: int | None, seconds: float, rounds: int
) -> tuple[Figure, Counter[str]]:
    run = STEPS[step]
    sections, chunks, refused = run(files)  # warm up: imports, regex compiles, caches
    # PDFium reads in a child process (ragd.adapters.pdfium_process) whose CPU time this
    # process does not count: PDF is timed on the wall clock.
    clock = time.perf_counter if fmt == "pdf" else time.process_time
    cpu, wall = [], []
    for _ in range(rounds):
        passes = 0
        start_cpu, start_wall = clock(), time.perf_counter()
        while True:
            run(files)
            passes += 1
            if clock() - start_cpu >= seconds:
                break
        cpu.append((clock() - start_cpu) / passes)
        wall.append((time.perf_counter() - start_wall) / passes)
    per_pass, wall_pass = statistics.median(cpu), statistics.median(wall)
    size = sum(len(data) for _, data in files) / 1e6
    figure = Figure(
        format=fmt,
        step=step,
        files=len(files),
        megabytes=round(size, 3),
        pages=pages,
        sections=sections,
        chunks=chunks if step == "parse+chunk" else None,
        refused=sum(refused.values()),
        files_per_s=round(len(files) / per_pass, 1),
        mb_per_s=round(size / per_pass, 3),
        pages_per_s=None if pages is None else round(pages / per_pass, 1),
        wall_files_per_s=round(len(files) / wall_pass, 1),
    )
    return figure, refused


def _parse_one(job: tuple[str, bytes]) -> int:
    return len(parse_document(job[1], job[0]).sections)


def pdf_on_two_processes(files: Files, pages: int, seconds: float) -> float:
    """Wall-clock pages/s of `parse_document` over the PDFs on a pool of 2 processes."""
    done = 0
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_parse_one, files * 2))  # start both workers and import first
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            list(pool.map(_parse_one, files * 2))
            done += 2 * pages
        return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rst-root", type=Path, action="append", default=[])
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    sets = format_sets(args.rst_root)
    pdf_pages = sum(_page_count(data) for _, data in sets["pdf"])
    figures: list[Figure] = []
    reasons: dict[str, dict[str, int]] = {}
    for fmt, files in sets.items():
        pages = pdf_pages if fmt == "pdf" else None
        for step in STEPS:
            figure, refused = measure(fmt, step, files, pages, args.seconds, args.rounds)
            figures.append(figure)
            if refused:
                reasons[fmt] = dict(refused)
    two = pdf_on_two_processes(sets["pdf"], pdf_pages, args.seconds * args.rounds)
    # The machine's other load changes wall time most: say what it was.
    machine = {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}
    if args.json:
        rows = [asdict(f) for f in figures]
        out = {
            "machine": machine,
            "figures": rows,
            "refused": reasons,
            "pdf_pages_per_s_2_processes": round(two, 1),
        }
        print(json.dumps(out, indent=2))
        return
    print(
        f"median of {args.rounds} rounds of >= {args.seconds:g} s CPU each, one core;"
        " wall files/s beside"
    )
    print(
        f"{'format':9s} {'step':12s} {'files':>5s} {'MB':>6s} {'chunks':>6s}"
        f" {'files/s':>8s} {'MB/s':>6s} {'pages/s':>8s} {'wall f/s':>8s}"
    )
    for f in figures:
        rate = "" if f.pages_per_s is None else f"{f.pages_per_s:8.1f}"
        chunks = "" if f.chunks is None else str(f.chunks)
        print(
            f"{f.format:9s} {f.step:12s} {f.files:5d} {f.megabytes:6.2f} {chunks:>6s}"
            f" {f.files_per_s:8.1f} {f.mb_per_s:6.2f} {rate:>8s} {f.wall_files_per_s:8.1f}"
        )
    print(f"pdf parse on 2 processes (wall): {two:.1f} pages/s ({pdf_pages} pages a pass)")
    print(f"{machine['cpus']} CPUs, load average at the end {machine['load_average']}")
    for fmt, counts in reasons.items():
        for reason, count in counts.items():
            print(f"  {fmt} refused {count}: {reason}")


if __name__ == "__main__":
    main()
