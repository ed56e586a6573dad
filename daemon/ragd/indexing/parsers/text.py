"""Plain text to one untitled section of paragraphs.

A paragraph is a run of lines between blank lines; line breaks inside it are kept, since
plain-text files often use them for lists and tables. The title is the file's stem.
"""

from __future__ import annotations

import re

from ragd.indexing.parsers import Block, ParsedDocument, SectionBuilder, normalize_heading

# A blank line may still hold spaces or tabs.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v]*\n")


def parse_text(source: str, stem: str) -> ParsedDocument:
    """Parse plain text into one section with heading path () whose blocks are paragraphs."""
    builder = SectionBuilder()
    for paragraph in _PARAGRAPH_BREAK.split(source):
        builder.add(Block("\n".join(line.rstrip() for line in paragraph.split("\n")).strip()))
    return ParsedDocument(title=normalize_heading(stem), sections=builder.sections())
