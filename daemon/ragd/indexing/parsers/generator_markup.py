"""Doc generators' Markdown extensions reduced to the text a rendered page shows.

MkDocs/Material and pymdown admonitions (`!!! note "Title"`, `??? tip`, `/// warning |
Title` ... `///`), Docusaurus/VitePress containers (`:::tip Title` ... `:::`), Hugo
shortcodes (`{{< x >}}`, `{{% x %}}`), attribute lists (`{ #id .cls }`), mkdocstrings'
`::: package.name` and includes (`--8<-- "file"`, FastAPI's `{* file hl[3] *}`,
`{! file !}`) are written as plain lines that CommonMark reads as paragraphs or code,
so without this pass their markers reach chunks verbatim and crowd out the words a
question matches.

One pass over the lines, before markdown-it sees them: a block's markers become its label
("Note", "Tip" or the title given) on a line of its own, so the label is the first words
of the block's text; closing markers, includes and shortcodes become nothing. Includes are
dropped, not read. An indented admonition body is dedented by the four columns the
admonition adds, so it stays text rather than becoming an indented code block. Lines inside
fenced code are code and are left as written. Every line is looked at a bounded number of
times, so the pass is linear in the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# `!!! note "Title"`, `??? tip`, `???+ warning inline end`: the body is indented four columns.
_ADMONITION = re.compile(r"(?:!!!|\?\?\?\+?)[ \t]+([\w-]+)(?:[ \t]+[\w-]+)*(?:[ \t]+\"(.*)\")?")
# `/// note | Title`, `//// tab | Python 3.10+`; a bare `///` closes the block.
_PYMDOWN_BLOCK = re.compile(r"/{3,}[ \t]*([\w-]+)[ \t]*(?:\|[ \t]*(.*))?")
# `:::tip Title`, `:::tip[Title]`, `::: warning Title` (VitePress), `:::note{.x}`.
# The title in brackets stops at the first `]`: `.*` there backtracks quadratically.
_CONTAINER = re.compile(
    r":{3,}[ \t]*([A-Za-z][\w-]*)(?:\[([^\]]*)\])?(?:\{[^}]*\})?(?:[ \t]+(.*))?"
)
# mkdocstrings' `::: package.module.Name`: API docs rendered from code, an include.
_AUTODOC = re.compile(r":{3,}[ \t]*([A-Za-z_][\w-]*(?:\.[\w-]+)+)")
_BARE_CLOSER = re.compile(r"(?:/{3,}|:{3,})")
_SNIPPET = re.compile(r"-{1,}8<-{1,}(?:[ \t]+.*)?")
# `#id`, `.class` or `key=value` (value quoted or not), after Python-Markdown's optional `:`;
# anything else means the braces are text.
_ATTRIBUTE = r"""(?:[#.][^\s"'{}=]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'{}]+))"""
_ATTRIBUTE_LIST = re.compile(rf"[ \t]*:?[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*")
_BACKTICKS = re.compile(r"`+")
_LINE_INCLUDE = re.compile(r"\{!.*!\}")
_FENCE = re.compile(r"(`{3,}|~{3,})")
# Types that mark up without titling: their content needs no label.
_UNLABELLED = frozenset({"html", "caption", "figure-caption", "table-caption", "code-group"})
# Markup removed from inside a line with what it encloses: includes (FastAPI's `{* f *}`,
# mdx_include's `{! f !}`) and Hugo shortcodes, whose text between an opening and a
# closing shortcode is outside both and stays.
_INLINE_MARKERS = (("{*", "*}"), ("{!", "!}"), ("{{<", ">}}"), ("{{%", "%}}"))
# Whatever the pass could change starts with one of these (a superset, so a miss is exact).
_MAY_HOLD_MARKUP = re.compile(
    r"^[ \t]*(?:!!!|\?\?\?|/{3}|:{3}|-+8<)|\{[*!]|\{\{[<%]|\{[ \t]*:?[ \t]*(?:[#.]|[\w-]+=)",
    re.M,
)
_TAB_COLUMNS = 4  # CommonMark's tab stop
_ADMONITION_INDENT = 4


def strip_generator_markup(lines: list[str]) -> list[str]:
    """The lines with generator markers replaced by their labels or removed."""
    if not _MAY_HOLD_MARKUP.search("\n".join(lines)):
        return lines  # most pages: one scan in C instead of a Python step per line
    rewriter = _Rewriter()
    for line in lines:
        rewriter.read(line)
    return rewriter.out


class _Rewriter:
    """The state of one pass: open admonitions, an open fence, what the last marker began."""

    def __init__(self) -> None:
        self.out: list[str] = []
        # Raw indentation each open `!!!` admonition's body needs, innermost last.
        self._admonitions: list[int] = []
        # An open fence: its marker, its indentation, and the admonitions open at it.
        self._fence: tuple[str, str, int] | None = None
        self._options_above: int | None = None  # dropping a header's options deeper than this
        self._in_snippet_list = False
        # After a label, blank lines wait: the body's first paragraph joins its label.
        self._label_columns: int | None = None
        self._held_blanks = 0

    def read(self, raw: str) -> None:
        content = raw.lstrip(" \t")
        prefix = raw[: len(raw) - len(content)]
        columns = len(prefix.expandtabs(_TAB_COLUMNS)) if "\t" in prefix else len(prefix)
        admonitions = self._admonitions
        if content:
            while admonitions and columns < admonitions[-1]:
                admonitions.pop()
        # Outside admonitions a line is kept as written, its tabs included.
        kept = max(columns - _ADMONITION_INDENT * len(admonitions), 0)
        indent = " " * kept if admonitions else prefix
        if self._fence is not None and self._fence[2] > len(admonitions):
            # The admonition holding the fence has ended, and so has the fence.
            self._emit(self._fence[1] + self._fence[0], 0)
            self._fence = None
        if self._fence is not None:
            marker = self._fence[0]
            if content.startswith(marker) and not content.rstrip().strip(marker[0]):
                self._fence = None
            elif _LINE_INCLUDE.fullmatch(content.rstrip()):
                return  # mdx_include fills code blocks: `{!> file !}` is no line of code
            self._emit(indent + content, kept)
            return
        if self._options_above is not None:
            if content and columns > self._options_above:
                return
            self._options_above = None
        if self._in_snippet_list:
            self._in_snippet_list = bool(content) and _SNIPPET.fullmatch(content.rstrip()) is None
            return
        if not content:
            self._emit("", 0)
            return
        opened = _FENCE.match(content)
        if opened and not (opened.group(1)[0] == "`" and "`" in content[opened.end() :]):
            self._fence = (opened.group(1), indent, len(admonitions))
            self._emit(indent + _fence_opening(content, opened.end()), kept)
            return
        if not self._marker(content.rstrip(), columns, indent):
            if "{" in content:
                content = _strip_inline(content)
            self._emit(indent + content if content.strip() else "", kept)

    def _marker(self, marker: str, columns: int, indent: str) -> bool:
        """Rewrite a marker line and return True, or return False for any other line."""
        first = marker[0]
        if first in "!?" and (match := _ADMONITION.fullmatch(marker)):
            title = match.group(2)  # `""` asks for no title at all
            self._label(indent, _label(match.group(1), None) if title is None else title)
            self._admonitions.append(columns + _ADMONITION_INDENT)
        elif first == "/" and (match := _PYMDOWN_BLOCK.fullmatch(marker)):
            self._label(indent, _label(match.group(1), match.group(2)))
            self._options_above = columns
        elif first == ":" and (match := _AUTODOC.fullmatch(marker)):
            # The rendered page shows the object's name over its docs, which are not read.
            self._label(indent, match.group(1))
            self._options_above = columns
        elif first == ":" and (match := _CONTAINER.fullmatch(marker)):
            self._label(indent, _label(match.group(1), match.group(2) or match.group(3)))
        elif first in "/:" and _BARE_CLOSER.fullmatch(marker):
            self._boundary()
        elif first == "-" and _SNIPPET.fullmatch(marker):
            # `--8<--` alone opens a list of files, one a line, up to another `--8<--`.
            self._in_snippet_list = not marker.strip("-8<")
            self._boundary()
        else:
            return False
        return True

    def _label(self, indent: str, label: str) -> None:
        """The label on a line of its own, apart from a paragraph above it."""
        if not label.strip():
            self._boundary()
            return
        if self.out and self.out[-1]:
            self.out.append("")
        self.out.append(indent + label.strip())
        self._label_columns, self._held_blanks = len(indent), 0

    def _boundary(self) -> None:
        """A blank line that ends the text above, a label's included."""
        self._label_columns = None
        if self.out and self.out[-1]:
            self.out.append("")

    def _emit(self, line: str, columns: int) -> None:
        if self._label_columns is not None:
            if not line:
                self._held_blanks += 1
                return
            # Joined to the label, a line indented four more would stop being code.
            if columns >= self._label_columns + 4:
                self.out.extend([""] * self._held_blanks)
            self._label_columns = None
        self.out.append(line)


def _fence_opening(content: str, info_start: int) -> str:
    """A fence's opening line with a pymdown `{ .lang hl_lines="2" }` info reduced to `lang`."""
    info = content[info_start:].strip()
    if not (info.startswith("{") and info.endswith("}") and is_attribute_list(info[1:-1])):
        return content
    classes = [part[1:] for part in info[1:-1].split() if part.startswith(".")]
    return content[:info_start] + (classes[0] if classes else "")


def _label(kind: str, title: str | None) -> str:
    """A block's label: its title, else its type capitalized ("Note"), else nothing."""
    if title and title.strip():
        return title
    return "" if kind.lower() in _UNLABELLED else kind[:1].upper() + kind[1:]


def _strip_inline(text: str) -> str:
    """`text` without inline markers, except inside code spans, which are code."""
    if "`" not in text:
        return _strip_prose(text)
    parts: list[str] = []
    position = 0
    for start, end in _code_spans(text):
        parts += [_strip_prose(text[position:start]), text[start:end]]
        position = end
    parts.append(_strip_prose(text[position:]))
    return "".join(parts)


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where a line's code spans start and end: a run of backticks up to the next run of
    the same length (CommonMark). Each length's runs are walked once, so this is linear."""
    runs = [match.span() for match in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    next_of_length = dict.fromkeys(by_length, 0)
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same = by_length[end - start]
        cursor = next_of_length[end - start]
        while cursor < len(same) and same[cursor] <= index:
            cursor += 1
        next_of_length[end - start] = cursor
        if cursor < len(same):
            closing = same[cursor]
            yield start, runs[closing][1]
            index = closing + 1
        else:
            index += 1


def _strip_prose(text: str) -> str:
    for opening, closing in _INLINE_MARKERS:
        text = _remove_spans(text, opening, closing)
    return _remove_attribute_lists(text)


def _remove_spans(text: str, opening: str, closing: str) -> str:
    """`text` without each `opening ... closing` span; each character is scanned once."""
    if opening not in text:
        return text
    parts: list[str] = []
    position = 0
    while (start := text.find(opening, position)) >= 0:
        end = text.find(closing, start + len(opening))
        if end < 0:
            break
        parts.append(text[position:start])
        position = end + len(closing)
    parts.append(text[position:])
    return "".join(parts)


def _remove_attribute_lists(text: str) -> str:
    """`text` without `{ #id .class key=value }` lists, and the space before them."""
    parts: list[str] = []
    position = 0
    while (start := text.find("{", position)) >= 0:
        end = text.find("}", start)
        if end < 0:
            break
        opening = text.rfind("{", start, end)  # the innermost `{` before this `}`
        # `{{.Name}}` is a template's placeholder, not an attribute list.
        doubled = text[opening - 1 : opening] == "{" or text[end + 1 : end + 2] == "}"
        if not doubled and is_attribute_list(text[opening + 1 : end]):
            parts.append(text[position:opening].rstrip(" \t"))
        else:
            parts.append(text[position : end + 1])
        position = end + 1
    parts.append(text[position:])
    return "".join(parts)


def is_attribute_list(inner: str) -> bool:
    """Whether the text between braces is an attribute list such as ` #id .cls key="v w" `."""
    return _ATTRIBUTE_LIST.fullmatch(inner) is not None
