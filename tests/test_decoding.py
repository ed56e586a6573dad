"""Decoding and dispatch: BOMs, strict UTF-8, binary detection, suffixes, empty files."""

from __future__ import annotations

import codecs
from pathlib import PurePosixPath

import pytest

from ragd.errors import DocumentError
from ragd.indexing.parsers import (
    SUPPORTED_SUFFIXES,
    UnsupportedDocument,
    file_suffix,
    parse_document,
)
from ragd.indexing.parsers.decoding import decode_document

TEXT = "Café — naïve résumé, 東京\n"


def reason(data: bytes, filename: str = "doc.md") -> str:
    with pytest.raises(UnsupportedDocument) as info:
        parse_document(data, filename)
    return info.value.reason


def test_utf8_without_bom_is_decoded() -> None:
    assert decode_document(TEXT.encode()) == TEXT


def test_utf8_bom_is_removed() -> None:
    assert decode_document(codecs.BOM_UTF8 + TEXT.encode()) == TEXT


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_are_decoded_by_their_bom(codec: str) -> None:
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }[codec]
    assert decode_document(bom + TEXT.encode(codec)) == TEXT


def test_utf16_document_parses_despite_nul_bytes() -> None:
    data = codecs.BOM_UTF16_LE + "# Über\n\nText.\n".encode("utf-16-le")
    doc = parse_document(data, "page.md")
    assert doc.title == "Über"
    assert doc.sections[0].blocks[0].text == "Text."


def test_nul_byte_without_bom_means_binary() -> None:
    assert reason(b"hello world\x00\x01\x02", "image.md") == "binary file (NUL byte at offset 11)"


def test_nul_byte_past_the_sniffed_prefix_is_replaced() -> None:
    data = b"a" * 9000 + b"\x00b"
    assert decode_document(data).endswith("a\ufffdb")


def test_invalid_utf8_reports_the_byte_and_offset() -> None:
    assert reason(b"abc\xff def") == "not valid UTF-8 (invalid byte 0xff at offset 3)"


def test_latin1_text_is_not_guessed() -> None:
    assert reason("café".encode("latin-1")) == "not valid UTF-8 (invalid byte 0xe9 at offset 3)"


def test_invalid_utf8_offset_counts_the_bom() -> None:
    data = codecs.BOM_UTF8 + b"ok\xc3"
    assert reason(data) == "not valid UTF-8 (invalid byte 0xc3 at offset 5)"


def test_truncated_utf16_is_reported() -> None:
    assert reason(codecs.BOM_UTF16_LE + b"a\x00b").startswith("not valid UTF-16 (")


def test_newlines_are_normalised() -> None:
    assert decode_document(b"a\r\nb\rc\n") == "a\nb\nc\n"


def test_unknown_suffix_is_unsupported() -> None:
    assert reason(b"\x89PNG", "logo.png") == "unsupported file type '.png'"


def test_missing_suffix_is_unsupported() -> None:
    assert reason(b"all:", "Makefile") == "unsupported file type (no suffix)"


def test_suffix_match_ignores_case() -> None:
    assert parse_document(b"# Read me\n\nText.", "docs/README.MD").title == "Read me"


def test_supported_suffixes_are_lowercase_with_dot() -> None:
    assert {".md", ".html", ".txt"} <= SUPPORTED_SUFFIXES
    assert all(s.startswith(".") and s == s.lower() for s in SUPPORTED_SUFFIXES)


@pytest.mark.parametrize("filename", ["empty.md", "empty.html", "empty.txt"])
@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n ", codecs.BOM_UTF8])
def test_empty_file_parses_to_no_sections(data: bytes, filename: str) -> None:
    doc = parse_document(data, filename)
    assert doc.sections == ()
    assert doc.title == "empty"


def test_unsupported_document_is_a_document_error() -> None:
    error = UnsupportedDocument("binary file (NUL byte at offset 0)")
    assert isinstance(error, DocumentError)
    assert str(error) == error.reason == "binary file (NUL byte at offset 0)"


@pytest.mark.parametrize(
    "filename",
    ["a.md", "dir/a.MD", ".md", "a.", "a.b.md", "a", "dir.x/readme", "x/.hidden.md",
     "C:\\docs\\a.Html", "a/b/", "..md", "a..", "...", "/", "", "dir/"],
)  # fmt: skip
def test_a_file_suffix_is_the_one_pathlib_names(filename: str) -> None:
    path = PurePosixPath(filename.replace("\\", "/"))

    assert file_suffix(filename) == (path.name, PurePosixPath(path.name).suffix.lower())
