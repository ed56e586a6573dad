"""MDX (Markdown with JSX, as Docusaurus and Nextra write it) read as the Markdown a reader sees.

The MDX source is rewritten into Markdown in one pass, then `markdown.parse_markdown`
finds its sections, so MDX headings, blocks and limits are Markdown's. The rewrite drops
what renders as nothing or as chrome: YAML front matter (its `title` is the document's),
top-level `import`/`export` statements (and lines shaped like one below the top level),
JSX tags (their text children stay, attributes never), `{/* comments */}` and other
`{expressions}` (a string literal keeps its text), `{#id}` heading ids and `<!-- -->`.
Docusaurus admonitions (`:::tip Title` … `:::`) keep their text, the label first. Fenced
code is copied as code; a ```` ```mdx-code-block ```` fence is Docusaurus's way of
writing live MDX, so it is read as MDX. MDX has no indented code, so the lines inside a
JSX element lose their indent.

Every scan either consumes what it matched or stops at the first character that cannot
continue it, and a construct that never closes (an unclosed `{`, quote or comment, a tag
broken after an attribute value) makes the whole file malformed rather than being scanned
again from each later character: the rewrite is linear in the text. A malformed file is
parsed as plain Markdown (MDX's own compiler would refuse it), with a warning that says
why: the status report names the document with it.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from dataclasses import replace

from ragd.indexing.parsers import ParsedDocument, markdown, normalize_heading

_log = logging.getLogger("ragd.parsers")

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_ESM = re.compile(r"(?:import|export)(?=[\s{*]|$)")
# Below the top level MDX reads `import x from 'y'` as text; a line shaped so is still code.
_JS_STATEMENT = re.compile(
    r"import\s+(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*\s*as\s+[\w$]+)?\s*from\s*['\"]"
    r"|import\s*['\"]|export\s+(?:default|const|let|var|function|class|async)\b|export\s*[{*]"
)
_ADMONITION = re.compile(r"(:{3,})([A-Za-z][\w-]*)?(.*)")
# Inside an admonition title: `[Title]` and a trailing `{#id .class}` attribute list.
_BRACKETED_TITLE = re.compile(r"\[(.*)\]")
_TRAILING_ATTRIBUTES = re.compile(r"\{[^{}]*\}\s*\Z")
_PROSE_SPECIAL = re.compile(r"[`\\{<\n]")
_BACKTICKS = re.compile(r"`+")
_NAME = re.compile(r"[A-Za-z_$][\w$.:-]*")
_SPACE = re.compile(r"\s+")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[^\s<>@]+@[^\s<>]+)>")
_EXPRESSION_TOKEN = re.compile(r"[{}'\"`]|/\*|//")
_STRING_END = {
    "'": re.compile(r"(?:[^'\\\n]|\\.)*'"),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),
    "`": re.compile(r"(?:[^`\\]|\\.)*`", re.S),
}
_STRING_LITERAL = re.compile(r"\s*(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`([^`$]*)`)\s*")
_TITLE_KEY = re.compile(r"title[ \t]*:[ \t]*(.*)")


class MalformedMdx(ValueError):
    """MDX that MDX's compiler would refuse; the file is read as plain Markdown instead."""


def parse_mdx(source: str, stem: str, filename: str = "") -> ParsedDocument:
    """Parse MDX into sections; the title is front matter's `title`, the first h1, or `stem`."""
    body, front_title = _split_front_matter(source)
    try:
        rewritten = to_markdown(body)
    except MalformedMdx as exc:
        _log.warning("mdx_read_as_markdown file=%s reason=%s", filename or stem, exc)
        fallback = markdown.parse_markdown(source, stem)
        return replace(fallback, warnings=(f"read as Markdown: malformed MDX ({exc})",))
    document = markdown.parse_markdown(rewritten, stem)
    return replace(document, title=front_title) if front_title else document


def to_markdown(mdx: str) -> str:
    """The Markdown an MDX body (front matter removed) shows a reader; raise MalformedMdx."""
    return _Rewriter(mdx).rewrite()


class _Rewriter:
    """One left-to-right pass over the text; `_line` is called at every line start."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.open_elements: list[str] = []
        self.mdx_fence: tuple[str, int] | None = None  # an open ```mdx-code-block
        self.join_next = False  # an admonition label waits for its first paragraph
        # The backtick runs of the line last asked (its start and end, run lengths by
        # position, positions by length): a code span closes on its line, and each line is
        # searched once however many spans it holds.
        self.line_runs: tuple[int, int, dict[int, int], dict[int, list[int]]] = (0, 0, {}, {})

    def rewrite(self) -> str:
        position = 0
        while position < len(self.text):
            position = self._line(position)
        return "".join(self.out)

    def _line_end(self, position: int) -> int:
        end = self.text.find("\n", position)
        return len(self.text) if end < 0 else end

    def _line(self, start: int) -> int:
        """Rewrite the line at `start` (and any construct it opens); return the next line start."""
        text = self.text
        end = self._line_end(start)
        line = text[start:end]
        content = line.lstrip(" \t")
        indent = len(line) - len(content)
        after = end + 1
        if self.join_next and not content:
            return after
        self.join_next = False

        first = content[:1]
        fence = _FENCE.fullmatch(content.rstrip()) if first in ("`", "~") and first else None
        if self.mdx_fence and fence and self._closes(fence, self.mdx_fence):
            self.mdx_fence = None
            return after
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            if fence.group(2).strip().startswith("mdx-code-block") and self.mdx_fence is None:
                self.mdx_fence = (fence.group(1)[0], len(fence.group(1)))
                return after
            return self._fenced_code(content, after, indent, fence)

        top_level = indent == 0 and not self.open_elements
        if first in ("i", "e") and (_ESM if top_level else _JS_STATEMENT).match(content):
            return self._skip_esm(start)

        admonition = _ADMONITION.fullmatch(content.rstrip()) if first == ":" else None
        if admonition:
            kind, rest = admonition.group(2), admonition.group(3).strip()
            if kind:
                self.out.append(_admonition_label(kind, rest) + "\n")
                self.join_next = True
                return after
            if not rest:
                self.out.append("\n")
                return after

        if self.open_elements:
            start += indent  # MDX has no indented code: a JSX child's indent is layout
        return self._prose(start)

    @staticmethod
    def _closes(fence: re.Match[str], opened: tuple[str, int]) -> bool:
        marker = fence.group(1)
        return marker[0] == opened[0] and len(marker) >= opened[1] and not fence.group(2).strip()

    def _fenced_code(self, content: str, position: int, indent: int, fence: re.Match[str]) -> int:
        """Copy a fence to its closing line (or the end), each line less the fence's indent."""
        opened = (fence.group(1)[0], len(fence.group(1)))
        self.out.append(content + "\n")
        text = self.text
        while position < len(text):
            end = self._line_end(position)
            line = text[position:end]
            stripped = line.lstrip(" \t")
            cut = min(indent, len(line) - len(stripped))
            self.out.append(line[cut:] + "\n")
            position = end + 1
            if stripped.startswith(opened[0]):
                closing = _FENCE.fullmatch(stripped.rstrip())
                if closing and self._closes(closing, opened):
                    break
        return position

    def _skip_esm(self, position: int) -> int:
        """Drop an import/export statement: lines up to a blank one (or the end of its
        mdx-code-block) outside brackets."""
        text = self.text
        depth = 0
        while position < len(text):
            end = self._line_end(position)
            line = text[position:end]
            if not line.strip() and depth <= 0:
                return end + 1
            if self.mdx_fence and depth <= 0:
                fence = _FENCE.fullmatch(line.strip())
                if fence and self._closes(fence, self.mdx_fence):
                    return position  # the statement ends with its mdx-code-block
            depth += sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))
            position = end + 1
        if depth > 0:
            raise MalformedMdx("an import or export statement never closes its brackets")
        return position

    def _prose(self, position: int) -> int:
        """Rewrite text up to and including the end of the line where its constructs end."""
        text, out = self.text, self.out
        while True:
            special = _PROSE_SPECIAL.search(text, position)
            if special is None:
                out.append(text[position:])
                return len(text)
            at = special.start()
            out.append(text[position:at])
            char = text[at]
            if char == "\n":
                out.append("\n")
                return at + 1
            if char == "\\":
                out.append(text[at : at + 2])
                position = at + 2
            elif char == "`":
                position = self._code_span(at)
            elif char == "{":
                position = self._expression(at)
            else:
                position = self._angle(at)

    def _code_span(self, at: int) -> int:
        if not self.line_runs[0] <= at < self.line_runs[1]:
            line_start, line_end = self.text.rfind("\n", 0, at) + 1, self._line_end(at)
            lengths: dict[int, int] = {}
            by_length: dict[int, list[int]] = {}
            for run in _BACKTICKS.finditer(self.text, line_start, line_end):
                lengths[run.start()] = len(run.group())
                by_length.setdefault(len(run.group()), []).append(run.start())
            self.line_runs = (line_start, line_end, lengths, by_length)
        _, _, lengths, by_length = self.line_runs
        length = lengths.get(at, 1)  # 1: the rest of a run an escape began
        starts = by_length.get(length, [])
        following = bisect_right(starts, at)
        if at in lengths and following < len(starts):
            closing = starts[following]
            self.out.append(self.text[at : closing + length])
            return closing + length
        self.out.append(self.text[at : at + length])
        return at + length

    def _expression(self, at: int) -> int:
        """A `{…}`: a string literal keeps its text; comments, ids and code render as nothing."""
        end = _expression_end(self.text, at)
        literal = _STRING_LITERAL.fullmatch(self.text, at + 1, end - 1)
        if literal:
            self.out.append(next(group for group in literal.groups() if group is not None))
        return end

    def _angle(self, at: int) -> int:
        text = self.text
        if text.startswith("<!--", at):
            closing = text.find("-->", at + 4)
            if closing < 0:
                raise MalformedMdx("an HTML comment never closes")
            return closing + 3
        autolink = _AUTOLINK.match(text, at)
        if autolink:
            self.out.append(autolink.group(1))
            return autolink.end()
        tag = _tag(text, at)
        if tag is None:
            self.out.append("<")
            return at + 1
        end, name, closing, self_closing = tag
        if closing:
            if name in self.open_elements:
                while self.open_elements.pop() != name:
                    pass
        elif not self_closing:
            self.open_elements.append(name)
        return end


def _admonition_label(kind: str, rest: str) -> str:
    """`:::tip[Title]{#id}` → `Tip: Title`; the label leads the admonition's text."""
    rest = _TRAILING_ATTRIBUTES.sub("", rest).strip()
    bracketed = _BRACKETED_TITLE.fullmatch(rest)
    title = bracketed.group(1).strip() if bracketed else rest
    label = kind.replace("-", " ").replace("_", " ").capitalize()
    return f"{label}: {title}" if title else f"{label}:"


def _expression_end(text: str, at: int) -> int:
    """The index after the `}` that closes the `{` at `at`, skipping strings and comments."""
    depth, position = 1, at + 1
    while True:
        token = _EXPRESSION_TOKEN.search(text, position)
        if token is None:
            raise MalformedMdx("a { expression never closes")
        kind, position = token.group(), token.end()
        if kind == "{":
            depth += 1
        elif kind == "}":
            depth -= 1
            if depth == 0:
                return position
        elif kind == "/*":
            closing = text.find("*/", position)
            if closing < 0:
                raise MalformedMdx("a /* comment never closes")
            position = closing + 2
        elif kind == "//":
            newline = text.find("\n", position)
            position = len(text) if newline < 0 else newline
        else:
            string = _STRING_END[kind].match(text, position)
            if string is None:
                raise MalformedMdx(f"a {kind} string inside {{ }} never closes")
            position = string.end()


def _tag(text: str, at: int) -> tuple[int, str, bool, bool] | None:
    """A JSX tag at `at`: (end, name, closing, self-closing), or None when `<` is text.

    Only a tag that has read no attribute value may turn out to be text (`a <b` in
    prose): its scan covered names and spaces, which hold no `<` to start another. A
    value read and then a broken tag is malformed, as MDX's compiler has it."""
    position = at + 1
    closing = text.startswith("/", position)
    if closing:
        position = _after_space(text, position + 1)
    name_match = _NAME.match(text, position)
    name = name_match.group() if name_match else ""
    if not name and not text.startswith(">", position):
        return None
    position = name_match.end() if name_match else position
    read_value = False
    while True:
        position = _after_space(text, position)
        char = text[position : position + 1]
        if char == ">":
            return position + 1, name, closing, False
        if text.startswith("/>", position) and not closing:
            return position + 2, name, closing, True
        if char == "{" and not closing:
            position = _expression_end(text, position)
            read_value = True
            continue
        attribute = None if closing else _NAME.match(text, position)
        if attribute is None:
            break
        position = _after_space(text, attribute.end())
        if not text.startswith("=", position):
            continue
        position = _after_space(text, position + 1)
        quote = text[position : position + 1]
        if quote == "{":
            position = _expression_end(text, position)
        elif quote in ("'", '"'):
            end = text.find(quote, position + 1)
            if end < 0:
                raise MalformedMdx("an attribute value's quote never closes")
            position = end + 1
        else:
            break
        read_value = True
    if read_value:
        raise MalformedMdx(f"the JSX tag <{name}> is broken after an attribute value")
    return None


def _after_space(text: str, position: int) -> int:
    space = _SPACE.match(text, position)
    return space.end() if space else position


def _split_front_matter(source: str) -> tuple[str, str | None]:
    """The body after YAML front matter, and front matter's `title`, if any."""
    if not source.startswith("---"):
        return source, None
    lines = source.split("\n")
    if lines[0].rstrip() != "---":
        return source, None
    title: str | None = None
    for number in range(1, len(lines)):
        line = lines[number].rstrip()
        if line in ("---", "..."):
            return "\n".join(lines[number + 1 :]), title
        match = _TITLE_KEY.fullmatch(line)
        if match and title is None:
            title = normalize_heading(_unquote(match.group(1).strip())) or None
    return source, None  # never closed: a thematic break, not front matter


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value
