"""How far a PDF's compressed streams inflate, measured before PDFium inflates them.

PDFium inflates a page's content streams whole, in memory, with no limit: a 1 MB PDF
whose content stream is a Flate bomb took 2 GB of memory and 3.5 s to read as "no text",
so the 20 MB a file may hold could take the machine's memory. The parse guard records a
process that dies parsing, but only after the OOM killer has been through. So the Flate
streams are inflated here first, output counted and dropped (memory stays at one window),
and a PDF whose streams inflate past a bound in total is refused (`pdf.MAX_INFLATED_BYTES`).

Image XObjects are not counted: PDFium does not decode images to extract text (measured:
the same bomb as an image read in 0.05 s, 30 MB). Streams of other filters (LZW, rare in
PDFs written since 2000) and streams an encryption hides are not measured.
"""

from __future__ import annotations

import re
import zlib

_STREAM = re.compile(rb"(?<!end)stream\r?\n")
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")
# How far back from `stream` its dictionary is looked for; dictionaries are short.
_DICTIONARY_WINDOW = 4096
_INPUT_PIECE = 1 << 16


def inflated_size(data: bytes, limit: int) -> int:
    """The total size the Flate streams of `data` inflate to, counted up to `limit` + 1."""
    view = memoryview(data)
    total = 0
    for match in _STREAM.finditer(data):
        head = data[max(0, match.start() - _DICTIONARY_WINDOW) : match.start()]
        if _IMAGE.search(head[head.rfind(b" obj") + 1 :]):
            continue
        total += _inflate(view[match.end() :], limit - total + 1)
        if total > limit:
            break
    return total


def _inflate(stream: memoryview, budget: int) -> int:
    """Bytes the zlib stream at the start of `stream` inflates to, stopping past `budget`."""
    inflater = zlib.decompressobj()
    size = 0
    try:
        for start in range(0, len(stream), _INPUT_PIECE):
            pending: bytes | memoryview = stream[start : start + _INPUT_PIECE]
            while pending and size <= budget and not inflater.eof:
                size += len(inflater.decompress(pending, _INPUT_PIECE))
                pending = inflater.unconsumed_tail
            if inflater.eof or size > budget:
                break
    except zlib.error:
        pass  # not Flate, or corrupt: PDFium judges it; what inflated so far counts
    return size
