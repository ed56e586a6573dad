"""Markdown (CommonMark plus tables, MkDocs conventions) to sections of source blocks.

markdown-it-py finds the structure: top-level headings start sections, top-level blocks
become Blocks. The text of every block is the original source lines the token covers, so
a code fence keeps its ``` markers and a list keeps its bullets; nothing is re-rendered.
Heading text is what a reader sees: the inline source with MkDocs attribute lists such as
`{ #anchor }` removed. YAML front matter is stripped and may supply the title.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from ragd.parsers import Block, ParsedDocument, SectionBuilder, normalize_heading

# Only block structure is needed: inline parsing (links, emphasis) is the slow and
# pathological part of markdown-it, and headings keep their raw inline source anyway.
_PARSER = MarkdownIt("commonmark").enable("table")
_PARSER.disable("inline")

_CODE_TOKENS = frozenset({"fence", "code_block"})
_FRONT_MATTER_KEY = re.compile(r"[A-Za-z_][\w-]*[ \t]*:")
_TITLE_KEY = re.compile(r"title[ \t]*:[ \t]*(.*)")


def parse_markdown(source: str, stem: str) -> ParsedDocument:
    """Parse Markdown into sections; the title is the first h1, front matter, or `stem`."""
    lines = source.split("\n")
    body_start, front_title = _front_matter(lines)
    # Blank the front matter rather than cut it, so token line numbers index `lines`.
    parse_lines = [""] * body_start + lines[body_start:]
    tokens = _PARSER.parse("\n".join(parse_lines))

    builder = SectionBuilder()
    first_h1: str | None = None
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting < 0 or token.map is None:
            continue
        if token.type == "heading_open":
            text = builder.heading(int(token.tag[1:]), heading_text(tokens[index + 1].content))
            if token.tag == "h1" and first_h1 is None and text:
                first_h1 = text
            continue
        start, end = token.map
        block_source = "\n".join(line.rstrip() for line in lines[start:end]).strip("\n")
        builder.add(Block(block_source, is_code=token.type in _CODE_TOKENS))

    title = first_h1 or front_title or normalize_heading(stem)
    return ParsedDocument(title=title, sections=builder.sections())


def heading_text(inline_source: str) -> str:
    """A heading as a reader sees it: a trailing attribute list such as `{ #id .cls }` removed."""
    text = inline_source.strip()
    if not text.endswith("}"):
        return text
    opening = text.rfind("{")
    if opening < 0:
        return text
    inner = text[opening + 1 : -1].strip()
    if inner.startswith(":"):  # the Python-Markdown `{: #id }` spelling
        inner = inner[1:]
    parts = inner.split()
    if parts and all(_is_attribute(part) for part in parts):
        return text[:opening].rstrip()
    return text


def _is_attribute(part: str) -> bool:
    # `#id`, `.class` or `key=value`; anything else means the braces are heading text.
    if part[0] in "#." and len(part) > 1:
        return True
    key, equals, _ = part.partition("=")
    return bool(equals) and bool(key) and key.replace("-", "").replace("_", "").isalnum()


def _front_matter(lines: list[str]) -> tuple[int, str | None]:
    """The number of leading lines that are YAML front matter, and its `title`, if any."""
    if not lines or lines[0].rstrip() != "---":
        return 0, None
    title: str | None = None
    seen_key = False
    for number in range(1, len(lines)):
        line = lines[number].rstrip()
        if line in ("---", "..."):
            return (number + 1, title) if seen_key else (0, None)
        if not seen_key and line and not line.startswith("#"):
            if not _FRONT_MATTER_KEY.match(line):
                return 0, None  # a thematic break opening the text, not a YAML mapping
            seen_key = True
        match = _TITLE_KEY.fullmatch(line)
        if match and title is None:
            title = normalize_heading(_unquote(match.group(1).strip())) or None
    return 0, None


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value
