"""PDF text extraction: pages/s, MB/s and text quality of pypdf and pypdfium2 on real PDFs.

Usage:
    PYTHONPATH=daemon python bench/pdf_parse.py [--seconds S] [PDF_OR_WHEEL ...]

Reads the PDFs given (a wheel is opened and its PDFs taken, so the offline registry's
files can be named as they are), by default tests/fixtures/pdf/*.pdf (but the encrypted
one) plus zlib's "Everything we know about CRC" paper from the cmeel-zlib wheel when
/opt/pypi/files has it. Each installed library extracts every page's text, repeatedly for
S seconds, on a pool of 2 processes (the issue's target: >= 20 pages/s on 2 cores), and
prints pages/s and MB/s; then the same for ragd's own parser (ragd.indexing.parsers.pdf:
the inflation bound, PDFium, cleaning, sections; a PDF it refuses counts its bytes, not
its pages). Then, per PDF and library, the text's quality: the share of word tokens that
look like words (letters only, with a vowel, <= 20 letters: a run of glued words or a
broken glyph map fails it), ligature code points (U+FB00-FB06) left in, control
characters (a glyph with no Unicode mapping), words cut by an end-of-line hyphen, and a
reading-order check: the first 60 characters of each page where the outputs differ, for
a person to compare. A library that is not installed is reported as such (ragd keeps
only pypdfium2; `pip install pypdf` to compare again). None of the PDFs has two columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import re
import sys
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZLIB_WHEEL = Path("/opt/pypi/files/cmeel_zlib-1.3.2-0-py3-none-manylinux_2_28_x86_64.whl")
LIBRARIES = ("pypdf", "pypdfium2")
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
LOOKS_LIKE_WORD = re.compile(r"(?i)^[a-z]*[aeiouy][a-z]*$")


def _pages_pypdf(data: bytes) -> list[str]:
    import pypdf  # type: ignore[import-not-found, unused-ignore]  # uninstalled: ragd keeps pypdfium2

    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def _pages_pypdfium2(data: bytes) -> list[str]:
    import pypdfium2

    document = pypdfium2.PdfDocument(data)
    try:
        texts = []
        for page in document:
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return texts
    finally:
        document.close()


def _pages_ragd(data: bytes) -> list[str]:
    """ragd's parser, start to end; a refused PDF counts its bytes but no pages."""
    from ragd.indexing.parsers import UnsupportedDocument
    from ragd.indexing.parsers.pdf import parse_pdf

    try:
        sections = parse_pdf(data, "bench").sections
    except UnsupportedDocument:
        return []
    pages = [""] * max(s.page or 0 for s in sections)
    for section in sections:
        pages[(section.page or 1) - 1] += "\n\n".join(b.text for b in section.blocks)
    return pages


EXTRACT: dict[str, Callable[[bytes], list[str]]] = {
    "pypdf": _pages_pypdf,
    "pypdfium2": _pages_pypdfium2,
    "ragd": _pages_ragd,
}


def _pages_of(job: tuple[str, bytes]) -> int:
    library, data = job
    return len(EXTRACT[library](data))


def load(paths: list[Path]) -> dict[str, bytes]:
    pdfs: dict[str, bytes] = {}
    for path in paths:
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                for name in wheel.namelist():
                    if name.endswith(".pdf") and "mpl-data" not in name:
                        pdfs[f"{path.name.split('-')[0]}:{Path(name).name}"] = wheel.read(name)
        else:
            pdfs[path.name] = path.read_bytes()
    return pdfs


def throughput(library: str, pdfs: dict[str, bytes], seconds: float) -> tuple[float, float]:
    jobs = [(library, data) for data in pdfs.values()]
    pages = size = 0
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_pages_of, jobs))  # start the workers and import the library first
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            pages += sum(pool.map(_pages_of, jobs))
            size += sum(len(data) for data in pdfs.values())
        elapsed = time.perf_counter() - start
    return pages / elapsed, size / elapsed / 1e6


def quality(texts: list[str]) -> str:
    text = "\n".join(texts)
    words = WORD.findall(text)
    good = sum(1 for w in words if len(w) <= 20 and LOOKS_LIKE_WORD.match(w))
    ligatures = sum(1 for c in text if "\ufb00" <= c <= "\ufb06")
    controls = sum(1 for c in text if c < " " and c not in "\n\r\t")
    hyphenated = len(re.findall(r"[a-z]-\r?\n[a-z]", text))
    share = good / len(words) if words else 0.0
    return (
        f"{len(words):6d} words, {share:6.1%} word-like, {ligatures:3d} ligatures,"
        f" {controls:4d} control chars, {hyphenated:3d} end-of-line hyphens"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args()
    fixtures = (ROOT / "tests/fixtures/pdf").glob("*.pdf")
    paths = args.paths or sorted(p for p in fixtures if "encrypted" not in p.name)
    if not args.paths and ZLIB_WHEEL.exists():
        paths.append(ZLIB_WHEEL)
    pdfs = load(paths)
    total = sum(len(data) for data in pdfs.values()) / 1e6
    print(f"{len(pdfs)} PDFs, {total:.2f} MB, 2 worker processes, {args.seconds:.0f} s each")
    installed = [lib for lib in LIBRARIES if importlib.util.find_spec(lib)]
    for library in LIBRARIES:
        if library not in installed:
            print(f"{library:10s} not installed")
            continue
        pages_per_s, mb_per_s = throughput(library, pdfs, args.seconds)
        print(f"{library:10s} {pages_per_s:8.1f} pages/s {mb_per_s:7.2f} MB/s")
    # ragd's parser: the stream inflation bound, PDFium, cleaning and sections.
    pages_per_s, mb_per_s = throughput("ragd", pdfs, args.seconds)
    print(f"{'ragd parse':10s} {pages_per_s:8.1f} pages/s {mb_per_s:7.2f} MB/s")
    for name, data in pdfs.items():
        print(f"\n{name} ({len(data) / 1e3:.0f} KB)")
        firsts = {}
        for library in [*installed, "ragd"]:
            try:
                texts = EXTRACT[library](data)
            except Exception as exc:  # a bench reports a failure, it does not stop
                print(f"  {library:10s} failed: {exc!r}")
                continue
            print(f"  {library:10s} {len(texts):3d} pages, {quality(texts)}")
            firsts[library] = [" ".join(t.split())[:60] for t in texts]
        for number, starts in enumerate(zip(*firsts.values(), strict=False), 1):
            if len(set(starts)) > 1:
                for library, start in zip(firsts, starts, strict=True):
                    print(f"    p{number} {library:10s} {start!r}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
