"""Includes expanded where they stand: doc generators' snippet and code includes, RST's files.

Markdown: pymdown snippets (`--8<-- "file"`, `"file:3:10"` for lines 3 to 10, and a
`--8<--` ... `--8<--` block listing files one a line), FastAPI's `{* file hl[3] ln[3:10] *}`
and mdx_include's `{! file !}`, each on a line of its own. reStructuredText: `.. include::`
(with `:start-line:`, `:end-line:`, `:start-after:`, `:end-before:`, `:literal:`, `:code:`)
and `.. literalinclude::` (also with `:lines:`).

Files are read through a `ReadInclude` callback the indexing layer builds from the
document's source root: it takes the path as written and returns the file's bytes, or None
for an include that is missing, outside the root or too big. An include that is not read
stays as written, and the generator-markup pass (or the RST rules) drops it as before; with
no callback (a delivered document has no root) nothing is expanded.

An included Markdown or plain-text file becomes lines of the including Markdown, and an
RST `include` lines of the including RST: they are parsed with it. Any other file, every
`{* *}` and every `literalinclude` becomes a code block; inside a fenced code block an
include becomes the file's lines. The included lines are not scanned again, so an included
file's own includes are dropped (one level deep) and an include cycle cannot arise.
"""

from __future__ import annotations

import re

from ragd.indexing.parsers import ReadInclude, UnsupportedDocument, file_suffix
from ragd.indexing.parsers.decoding import decode_document

# Suffixes whose text joins a Markdown document as Markdown; any other file is code.
_MARKDOWN_TEXT = frozenset({".md", ".markdown", ".mdx", ".txt"})

_SNIPPET = re.compile(r"""([ \t]*)-+8<-+[ \t]+(["'])(.+)\2[ \t]*""")
_SNIPPET_BLOCK = re.compile(r"[ \t]*-+8<-+[ \t]*")
_CODE_INCLUDE = re.compile(r"([ \t]*)\{\*[ \t]*(\S+)(.*?)\*\}[ \t]*")
_MDX_INCLUDE = re.compile(r"([ \t]*)\{![<>+-]*[ \t]*([^|!\s]+)[^!]*!\}[ \t]*")
_MARKDOWN_MAY_INCLUDE = re.compile(r"-8<-|\{\*|\{!")
_LINE_SELECTION = re.compile(r"(.+?)((?::\d*){1,2})")
_LN = re.compile(r"\bln\[([\d:, ]+)\]")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")

_RST_INCLUDE = re.compile(r"([ \t]*)\.\.[ \t]+(include|literalinclude)::[ \t]*(\S.*?)[ \t]*")
_RST_OPTION = re.compile(r"[ \t]*:([\w-]+):[ \t]*(.*?)[ \t]*")
_RST_LITERAL_DIRECTIVE = re.compile(
    r"\.\.[ \t]+(?:code-block|code|sourcecode|parsed-literal|doctest|testcode|testoutput)::"
)
_RST_MAY_INCLUDE = re.compile(r"^[ \t]*\.\.[ \t]+(?:literal)?include::", re.M)


def expand_markdown_includes(lines: list[str], read: ReadInclude) -> list[str]:
    """Markdown lines with each include that `read` reads replaced by what it includes."""
    if not _MARKDOWN_MAY_INCLUDE.search("\n".join(lines)):
        return lines
    out: list[str] = []
    fence: str | None = None  # the marker of the open fenced code block
    listed: list[str] | None = None  # the lines of an open `--8<--` block
    for line in lines:
        if listed is not None:
            if _SNIPPET_BLOCK.fullmatch(line):
                out.extend(_snippet_list(listed, read, line[: len(line) - len(line.lstrip())]))
                listed = None
            else:
                listed.append(line)
            continue
        stripped = line.lstrip(" \t")
        if fence is not None:
            if stripped.startswith(fence) and not stripped.rstrip().strip(fence[0]):
                fence = None
            elif (included := _markdown_include(line, read)) is not None:
                indent, _, text, _ = included
                out.extend(indent + row for row in text.split("\n"))
                continue
            out.append(line)
            continue
        if (opened := _FENCE.match(line)) and "`" not in stripped[len(opened.group(1)) :]:
            fence = opened.group(1)
        elif _SNIPPET_BLOCK.fullmatch(line):
            listed = []
            continue
        elif (included := _markdown_include(line, read)) is not None:
            out.extend(_included_lines(*included))
            continue
        out.append(line)
    if listed is not None:  # an unclosed list: its lines stay, as markup to drop
        out.extend(lines[len(lines) - len(listed) - 1 :])
    return out


def _markdown_include(line: str, read: ReadInclude) -> tuple[str, str, str, bool] | None:
    """(indentation, path, text, whether it is code whatever its suffix) of a line that is
    an include `read` reads, else None."""
    if match := _SNIPPET.fullmatch(line):
        indent, written = match.group(1), match.group(3)
        path, selection = _snippet_selection(written)
        text = _read_text(path, read)
        return None if text is None else (indent, path, _select(text, selection), False)
    if match := _CODE_INCLUDE.fullmatch(line):
        indent, path, options = match.groups()
        text = _read_text(path, read)
        if text is None:
            return None
        ln = _LN.search(options)
        return indent, path, text if ln is None else _select(text, _ranges(ln.group(1))), True
    if match := _MDX_INCLUDE.fullmatch(line):
        text = _read_text(match.group(2), read)
        return None if text is None else (match.group(1), match.group(2), text, False)
    return None


def _snippet_list(listed: list[str], read: ReadInclude, indent: str) -> list[str]:
    """The lines a `--8<--` block's listed files include (a blank or `;`-escaped line is none)."""
    out: list[str] = []
    for name in listed:
        name = name.strip()
        if not name or name.startswith(";"):
            continue
        path, selection = _snippet_selection(name)
        text = _read_text(path, read)
        if text is not None:
            out.extend(_included_lines(indent, path, _select(text, selection)))
    return out


def _included_lines(indent: str, path: str, text: str, code: bool = False) -> list[str]:
    """Included text outside code: Markdown as lines, anything else as a fenced code block."""
    text = text.strip("\n")
    _, suffix = file_suffix(path)
    rows = text.split("\n")
    if suffix in _MARKDOWN_TEXT and not code:
        return ["", *(indent + row if row else row for row in rows), ""]
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = [indent + row if row else row for row in rows]
    return ["", f"{indent}{fence}{suffix[1:]}", *body, f"{indent}{fence}", ""]


def _snippet_selection(written: str) -> tuple[str, list[tuple[int | None, int | None]]]:
    """A snippet's path and its `:start:end` line selection (pymdown's, 1-based)."""
    match = _LINE_SELECTION.fullmatch(written)
    if match is None:
        return written, []
    start, _, end = match.group(2)[1:].partition(":")
    return match.group(1), [(int(start) if start else None, int(end) if end else None)]


def _ranges(text: str) -> list[tuple[int | None, int | None]]:
    """FastAPI's `ln[3:10,12:14]` as 1-based inclusive ranges."""
    ranges: list[tuple[int | None, int | None]] = []
    for part in text.split(","):
        start, _, end = part.strip().partition(":")
        ranges.append((int(start) if start else None, int(end) if end else None))
    return ranges


def _select(text: str, ranges: list[tuple[int | None, int | None]]) -> str:
    """The lines of `text` in 1-based inclusive `ranges`; all of it without ranges."""
    if not ranges:
        return text
    lines = text.split("\n")
    picked: list[str] = []
    for start, end in ranges:
        picked.extend(lines[max((start or 1) - 1, 0) : end])
    return "\n".join(picked)


def _read_text(path: str, read: ReadInclude) -> str | None:
    """An included file as text, or None when it is not read or is not text."""
    if "://" in path:
        return None  # pymdown may fetch URLs; a server reads only its own files
    data = read(path)
    if data is None:
        return None
    try:
        return decode_document(data)
    except UnsupportedDocument:
        return None  # a binary file is not text to include


def expand_rst_includes(lines: list[str], read: ReadInclude) -> list[str]:
    """RST lines with each `include`/`literalinclude` that `read` reads replaced by what it
    includes: RST text, or a literal block. Directives inside literal blocks are code."""
    if not _RST_MAY_INCLUDE.search("\n".join(lines)):
        return lines
    out: list[str] = []
    literal_above: int | None = None  # the indentation a literal block's lines exceed
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip(" \t")
        column = len(line) - len(stripped)
        if literal_above is not None and (not stripped or column > literal_above):
            out.append(line)
            index += 1
            continue
        literal_above = None
        match = _RST_INCLUDE.fullmatch(line)
        if match is None:
            if (
                stripped.rstrip().endswith("::") and not stripped.startswith(".. ")
            ) or _RST_LITERAL_DIRECTIVE.match(stripped):
                literal_above = column
            out.append(line)
            index += 1
            continue
        options, after = _rst_options(lines, index + 1, column)
        replaced = _rst_include(match.group(1), match.group(2), match.group(3), options, read)
        out.extend(lines[index:after] if replaced is None else replaced)
        index = after
    return out


def _rst_options(lines: list[str], start: int, column: int) -> tuple[dict[str, str], int]:
    """A directive's `:name: value` options below it, and the index of the line after them."""
    options: dict[str, str] = {}
    index = start
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip(" \t")
        if stripped and len(line) - len(stripped) <= column:
            break
        option = _RST_OPTION.fullmatch(line)
        if stripped and option is None:
            break  # a directive with content; its content is not an include's
        if option is not None:
            options[option.group(1)] = option.group(2)
        index += 1
    return options, index


def _rst_include(
    indent: str, kind: str, path: str, options: dict[str, str], read: ReadInclude
) -> list[str] | None:
    """The lines an RST include becomes, or None when its file is not read."""
    if path.startswith("<"):
        return None  # docutils' own standard files (`<isonum.txt>`): substitutions only
    text = _read_text(path, read)
    if text is None:
        return None
    lines = text.split("\n")
    if "start-line" in options or "end-line" in options:
        lines = lines[_int(options.get("start-line")) : _int(options.get("end-line")) or None]
    text = _between("\n".join(lines), options.get("start-after"), options.get("end-before")).strip(
        "\n"
    )
    if kind == "literalinclude" and "lines" in options:
        text = _select(text, _rst_ranges(options["lines"]))
    if kind == "include" and "literal" not in options and "code" not in options:
        return ["", *(indent + row if row else row for row in text.split("\n")), ""]
    body = [indent + "   " + row if row else row for row in text.split("\n")]
    return ["", indent + "::", "", *body, ""]


def _between(text: str, after: str | None, before: str | None) -> str:
    """`text` after the first `after` and before the next `before` (Sphinx's options)."""
    if after:
        found = text.find(after)
        text = "" if found < 0 else text[found + len(after) :].partition("\n")[2]
    if before:
        found = text.find(before)
        text = text if found < 0 else text[:found].rpartition("\n")[0]
    return text


def _rst_ranges(text: str) -> list[tuple[int | None, int | None]]:
    """Sphinx's `:lines: 1,3,5-10,20-` as 1-based inclusive ranges."""
    ranges: list[tuple[int | None, int | None]] = []
    for part in text.split(","):
        start, dash, end = part.strip().partition("-")
        first = int(start) if start.isdigit() else None
        ranges.append((first, (int(end) if end.isdigit() else None) if dash else first))
    return ranges


def _int(value: str | None) -> int:
    return int(value) if value and value.lstrip("-").isdigit() else 0
