"""Bytes to text, in one place: byte-order marks, strict UTF-8, binary detection, newlines.

Every format decodes through `decode_document`, so a document is read the same way
whatever its suffix. There is deliberately no guessing of legacy encodings: a latin-1 file
that happens to decode would be indexed as mojibake, so invalid UTF-8 is reported instead.
"""

from __future__ import annotations

import codecs

from ragd.indexing.parsers import UnsupportedDocument

# Longest BOMs first: the UTF-32-LE mark begins with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)

# Text editors never write NUL; binary formats nearly always do so early on.
BINARY_SNIFF_BYTES = 8192


def decode_document(data: bytes) -> str:
    """Decode a document's bytes to text with `\\n` newlines, or raise UnsupportedDocument."""
    codec, label, skip = "utf-8", "UTF-8", 0
    for bom, bom_codec, bom_label in _BOMS:
        if data.startswith(bom):
            codec, label, skip = bom_codec, bom_label, len(bom)
            break
    # UTF-16/32 text is full of NUL bytes; only their BOM makes NUL legitimate.
    if label == "UTF-8":
        nul = data.find(b"\x00", 0, BINARY_SNIFF_BYTES)
        if nul >= 0:
            raise UnsupportedDocument(f"binary file (NUL byte at offset {nul})")
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        raise UnsupportedDocument(
            f"not valid {label} (invalid byte 0x{data[offset]:02x} at offset {offset})"
        ) from None
    # A stray NUL past the sniffed prefix would reach the stores; show it as unknown text.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
