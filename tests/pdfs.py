"""Small PDFs written byte by byte, for what the real fixtures cannot show: an edit, a bomb.

Text PDFs: one Helvetica line per string, a top-level outline entry per (title, page
index), an optional Info title. Enough PDF for PDFium to read: a classic xref table.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def _literal(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1") + b")"


def text_pdf(
    pages: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    outline: Sequence[tuple[str, int]] = (),
) -> bytes:
    """A PDF whose page i shows the lines pages[i], top to bottom."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the pages and outline exist
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    page_ids = []
    for lines in pages:
        ops = [b"BT /F1 12 Tf 14 TL 72 720 Td"]
        ops += [_literal(line) + b" '" for line in lines]
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
                b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (tree, content, font)
            )
        )
    kids = b" ".join(b"%d 0 R" % page for page in page_ids)
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    outline_ref = b""
    if outline:
        root = add(b"")
        first = len(objects) + 1
        for number, (name, index) in enumerate(outline):
            links = b"" if number == 0 else b" /Prev %d 0 R" % (first + number - 1)
            if number < len(outline) - 1:
                links += b" /Next %d 0 R" % (first + number + 1)
            add(
                b"<< /Title %s /Parent %d 0 R%s /Dest [%d 0 R /XYZ 0 792 0] >>"
                % (_literal(name), root, links, page_ids[index])
            )
        objects[root - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            first,
            len(objects),
            len(outline),
        )
        outline_ref = b" /Outlines %d 0 R" % root
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (tree, outline_ref)
    info = add(b"<< /Title %s >>" % _literal(title)) if title is not None else None

    return _written(objects, catalog, info)


def flate_bomb_pdf(inflated: int, *, as_image: bool = False) -> bytes:
    """A one-page PDF, text "Hello", with a Flate stream of `inflated` zero bytes as the
    page's second content stream or, `as_image`, as an image drawn on it."""
    packer = zlib.compressobj(9)
    piece = bytes(1 << 20)
    packed = (
        b"".join(
            packer.compress(piece[: min(len(piece), inflated - done)])
            for done in range(0, inflated, len(piece))
        )
        + packer.flush()
    )
    side = int(inflated**0.5)
    image_keys = b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray"
    image_keys = image_keys % (side, side) + b" /BitsPerComponent 8 " if as_image else b""
    bomb = b"<< %s/Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (
        image_keys,
        len(packed),
        packed,
    )
    draw = b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET" + (b" q 9 0 0 9 0 0 cm /Im1 Do Q" * as_image)
    text = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw)
    contents = b"4 0 R" if as_image else b"[4 0 R 5 0 R]"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %s /Resources"
        b" << /XObject << /Im1 5 0 R >> /Font << /F1 6 0 R >> >> >>" % contents,
        text,
        bomb,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return _written(objects, 1, None)


def _written(objects: list[bytes], catalog: int, info: int | None) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"/Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    return bytes(out)
