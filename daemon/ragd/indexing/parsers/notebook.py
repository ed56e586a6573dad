"""Jupyter notebooks to sections: the notebook rewritten as one Markdown text, then parsed.

nbformat (through `ragd.adapters.nbformat`) reads, upgrades and validates the JSON; an
invalid notebook is an UnsupportedDocument saying why. Markdown cells are copied as they
are, so their headings give the heading path and the first h1 the title, exactly as in a
`.md` file. A code cell becomes a fence in the kernel's language, followed by a `text`
fence of its plain-text output: stdout and the `text/plain` of results and displays,
ANSI colours removed, at most `MAX_OUTPUT_CHARS` per cell. Everything else a notebook
stores never reaches a chunk: images and other base64 payloads, HTML, JavaScript,
widgets, error tracebacks, stderr, attachments, raw cells (nbconvert's LaTeX/RST
passthrough) and `data:` URIs written inline in Markdown. Outputs that are dropped are
never joined or copied; kept ones are cut before they are joined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ragd.adapters.nbformat import read_notebook
from ragd.indexing.parsers import ParsedDocument, UnsupportedDocument
from ragd.indexing.parsers.markdown import parse_markdown

# A cell's outputs are evidence of what its code does, not the document: a printed array or
# a DataFrame's repr is useful in its first lines, noise after (a 10,000-row print).
MAX_OUTPUT_CHARS = 2000

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# `<matplotlib.figure.Figure at 0x10c>`, `<IPython.core.display.HTML object>`: the
# text/plain stand-in of a rich output, nothing a reader would search for.
_OBJECT_REPR = re.compile(r"<[^<>\n]*>")
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+=-]+)*;base64,[A-Za-z0-9+/=\s]*")
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BACKTICK_RUN = re.compile(r"`{3,}")
_LANGUAGE = re.compile(r"[\w+#.-]+")


def parse_notebook(source: str, stem: str) -> ParsedDocument:
    """Parse a notebook's JSON text; the title is the first h1 of its Markdown, else `stem`."""
    try:
        notebook = read_notebook(source)
    except ValueError as exc:
        raise UnsupportedDocument(str(exc)) from None
    return parse_markdown(notebook_markdown(notebook), stem)


def notebook_markdown(notebook: Mapping[str, Any]) -> str:
    """The notebook as the Markdown a reader sees: cells in order, blank lines between."""
    language = _kernel_language(notebook.get("metadata", {}))
    parts: list[str] = []
    for cell in notebook.get("cells", ()):
        kind = cell.get("cell_type")
        if kind == "markdown":
            parts.append(_markdown_cell(_text(cell.get("source", ""))))
        elif kind == "code":
            code = _text(cell.get("source", ""))
            if code.strip():
                parts.append(_fenced(code, language))
            output = _plain_output(cell.get("outputs", ()))
            if output.strip():
                parts.append(_fenced(output, "text"))
    return "\n\n".join(parts) + "\n"


def _kernel_language(metadata: Mapping[str, Any]) -> str:
    for name in (
        metadata.get("kernelspec", {}).get("language"),
        metadata.get("language_info", {}).get("name"),
    ):
        if isinstance(name, str):
            match = _LANGUAGE.search(name)
            if match:
                return match.group().lower()
    return ""


def _markdown_cell(text: str) -> str:
    """A Markdown cell that cannot swallow the cells after it, without inline base64."""
    text = _DATA_URI.sub("", text)
    # Jupyter renders each cell alone, so a fence left open ends at the cell's end; in one
    # Markdown text it would run on over every later cell.
    opened: str | None = None
    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        if match is None:
            continue
        marker = match.group(1)
        if opened is None:
            opened = marker
        elif marker[0] == opened[0] and len(marker) >= len(opened) and not line.strip(" `~"):
            opened = None
    return text if opened is None else f"{text}\n{opened}"


def _fenced(text: str, info: str) -> str:
    # A fence longer than any backtick run inside, so code that writes ``` stays inside.
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _plain_output(outputs: Iterable[Mapping[str, Any]]) -> str:
    """A code cell's plain-text output, at most MAX_OUTPUT_CHARS of it."""
    kept: list[str] = []
    room = MAX_OUTPUT_CHARS
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name") != "stdout":
                continue  # stderr: warnings and progress bars
            text = _text(output.get("text", ""), room)
        elif kind in ("execute_result", "display_data"):
            text = _text(output.get("data", {}).get("text/plain", ""), room)
            if _OBJECT_REPR.fullmatch(text.strip()):
                continue
        else:
            continue  # `error`: a traceback in ANSI colours, not documentation
        text = _ANSI_ESCAPE.sub("", text).replace("\x1b", "").replace("\r", "\n").strip("\n")
        if not text.strip():
            continue
        if len(text) >= room:
            kept.append(text[: room - 1].rstrip() + "…")
            break
        kept.append(text)
        room -= len(text) + 1
    return "\n".join(kept)


def _text(value: object, limit: int | None = None) -> str:
    """A multiline string as nbformat stores it (a string or a list of lines), cut to `limit`."""
    if isinstance(value, str):
        return value if limit is None else value[: limit + 1]
    if not isinstance(value, list):
        return ""
    lines: list[str] = []
    size = 0
    for line in value:
        if not isinstance(line, str):
            continue
        lines.append(line)
        size += len(line)
        if limit is not None and size > limit:
            break
    text = "".join(lines)
    return text if limit is None else text[: limit + 1]
