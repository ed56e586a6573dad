"""Markdown (CommonMark plus tables, MkDocs conventions) to sections of source blocks.

markdown-it-pyrs (markdown-it.rs, the Rust port of the markdown-it family) finds the
structure: top-level headings start sections, other top-level nodes become Blocks. The
text of every block is the original source lines the node covers, so a code fence keeps
its ``` markers and a list keeps its bullets; nothing is re-rendered. Heading text is
what a reader sees: the inline source with MkDocs attribute lists such as `{ #anchor }`
removed. YAML front matter is stripped and may supply the title. Doc generators' markup
(admonitions, containers, includes, shortcodes) is reduced to its text first, by
`generator_markup`, after the includes that can be read are expanded (`includes`).
"""

from __future__ import annotations

import re

from ragd.adapters.markdown_it import Node, block_parser
from ragd.indexing.parsers import (
    Block,
    ParsedDocument,
    ReadInclude,
    SectionBuilder,
    UnsupportedDocument,
    normalize_heading,
)
from ragd.indexing.parsers.generator_markup import is_attribute_list, strip_generator_markup
from ragd.indexing.parsers.includes import expand_markdown_includes

# CommonMark's block rules plus tables, and no inline rules: headings keep their raw
# inline source anyway, and inline parsing is the slow, memory-hungry part (a 1 MB run of
# emphasis takes minutes). markdown-it-pyrs, not markdown-it-py: the same sections for
# every page of tldr and fastapi-docs, in about a third of the time.
_PARSER = block_parser()
# markdown-it.rs recurses once per nested list or quote and overflows the stack (SIGSEGV,
# which no handler can catch) at 10,000-30,000 levels. Each level costs a line at least
# one character of prefix (`>`, a list marker, or two columns of indentation), so a file
# whose lines open with fewer than 1,000 such characters nests under 2,000 deep.
MAX_NESTING_PREFIX = 1000
_DEEP_NESTING = re.compile(
    rf"^(?:[ \t>]|(?:[-*+]|\d{{1,9}}[.)])(?=[ \t]|$)){{{MAX_NESTING_PREFIX}}}", re.M
)

_CODE_NODES = frozenset({"fence", "code_block"})
_HEADING_NODES = frozenset({"heading", "lheading"})
# Link reference definitions render as nothing; they are not text a reader sees.
_SKIPPED_NODES = frozenset({"definition"})
# Paragraphs of nothing but space characters written as references, as pages put them
# between blocks for spacing (every page of Redux Toolkit's docs opens with `&nbsp;`).
_BLANK_ENTITIES = re.compile(
    r"(?:\s|&(?:nbsp|ensp|emsp|thinsp|zwsp|zwnj|zwj|NewLine|Tab);|&#(?:160|32|x[aA]0|x20);)+"
)
_FRONT_MATTER_KEY = re.compile(r"[A-Za-z_][\w-]*[ \t]*:")
_TITLE_KEY = re.compile(r"title[ \t]*:[ \t]*(.*)")


def parse_markdown(
    source: str, stem: str, read_include: ReadInclude | None = None
) -> ParsedDocument:
    """Parse Markdown into sections; the title is the first h1, front matter, or `stem`.
    Includes are read through `read_include` (ragd.indexing.parsers.includes)."""
    lines = source.split("\n")
    body_start, front_title = _front_matter(lines)
    body = lines[body_start:]
    if read_include is not None:
        body = expand_markdown_includes(body, read_include)
    # Node positions index `lines`: the front matter is blanked rather than cut.
    lines = [""] * body_start + strip_generator_markup(body)
    text = "\n".join(lines)
    if _DEEP_NESTING.search(text):
        raise UnsupportedDocument(
            f"a line opens with {MAX_NESTING_PREFIX}+ characters of quote, list or indent"
            " nesting; no page nests that deep"
        )
    try:
        root = _PARSER.tree(text)
    except BaseException as exc:  # a Rust panic arrives as pyo3's PanicException
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit
        raise UnsupportedDocument(f"the Markdown parser failed: {exc}") from exc
    # Node positions are byte offsets into the UTF-8 text; blocks are whole lines. Nodes
    # come in order, so counting newlines from the previous one finds each line number.
    data = text.encode("utf-8", "surrogatepass")
    line, counted_to = 0, 0

    builder = SectionBuilder()
    first_h1: str | None = None
    for node in root.children:
        name, span = node.name, node.srcmap  # each attribute read converts from Rust
        if span is None or name in _SKIPPED_NODES:
            continue
        if name in _HEADING_NODES:
            level = int(node.meta["level"])
            heading = builder.heading(level, heading_text(_inline_source(node, data)))
            if level == 1 and first_h1 is None and heading:
                first_h1 = heading
            continue
        start_byte, end_byte = span
        stop = max(end_byte - 1, start_byte)
        first = line + data.count(b"\n", counted_to, start_byte)
        line, counted_to = first + data.count(b"\n", start_byte, stop), stop
        block_source = "\n".join(row.rstrip() for row in lines[first : line + 1]).strip("\n")
        if name == "paragraph" and _BLANK_ENTITIES.fullmatch(block_source):
            continue  # a `&nbsp;` spacer renders as blank space, not text
        builder.add(Block(block_source, is_code=name in _CODE_NODES))

    title = first_h1 or front_title or normalize_heading(stem)
    return ParsedDocument(title=title, sections=builder.sections())


def _inline_source(heading: Node, data: bytes) -> str:
    """A heading's inline source as written: from its first inline node to its last."""
    spans = [child.srcmap for child in heading.children if child.srcmap is not None]
    if not spans:
        return ""
    return data[spans[0][0] : spans[-1][1]].decode("utf-8", "surrogatepass")


def heading_text(inline_source: str) -> str:
    """A heading as a reader sees it: a trailing attribute list such as `{ #id .cls }` removed."""
    text = inline_source.strip()
    if not text.endswith("}"):
        return text
    opening = text.rfind("{")
    if opening < 0:
        return text
    if is_attribute_list(text[opening + 1 : -1]):
        return text[:opening].rstrip()
    return text


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
