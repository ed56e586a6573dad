"""HTML to sections: h1–h6 split the text, chrome and scripts are dropped, <pre> is code.

The stdlib `HTMLParser` reads the document as a stream of events (no tree, so nesting
depth costs nothing). In front of it, `_defuse` rewrites the markup into plain tags without
attributes: CPython 3.11's parser rescans to the end of the input for every unterminated
construct (`<a `, `</`, `<!--` repeated), which is quadratic, and 100 kB of `<a ` took minutes.
The rewrite is one forward pass; every search it makes resumes where the last one ended.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ragd.indexing.parsers import Block, ParsedDocument, SectionBuilder, normalize_heading

# Elements whose content is not text a reader of the page came for.
_DROPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside"}
    | {"form", "button", "select", "textarea", "iframe", "noembed", "noframes", "math"}
)
# Raw-text elements: their content is not markup, so `_defuse` skips it whole.
_RAW_TEXT = frozenset({"script", "style", "noscript", "textarea", "iframe", "noembed", "noframes"})
# Inside these, a <header> holds the article's own heading, not the site's banner.
_CONTENT = frozenset({"article", "main", "section"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK = frozenset(
    {"p", "div", "li", "ul", "ol", "tr", "br", "hr", "section", "article", "main", "table"}
    | {"blockquote", "dd", "dt", "dl", "figure", "figcaption", "caption", "details"}
    | {"summary", "address", "body", "head", "html", "thead", "tbody", "tfoot", "center"}
    | set(_HEADINGS)
)
_CELLS = frozenset({"td", "th"})

_NO_GT = -1
_RUNS_TO_END = -2
_TAG_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9:_.-]*")
# A `<` that does not open a bare tag such as <div>, </p> or <br/>, which pass unchanged.
_NEEDS_WORK = re.compile(
    r"<(?!/?[a-zA-Z][a-zA-Z0-9]*/?>)"
    r"|<(?=(?i:script|style|noscript|textarea|iframe|noembed|noframes)>)"
)
_PLAIN_TAG = re.compile(r"""<(/?)([a-zA-Z][a-zA-Z0-9:_.-]*)(?:[^<>"']|"[^"<>]*"|'[^'<>]*')*>""")
# Inside a start tag, a quote only opens after `=`; `>` elsewhere ends the tag.
_TAG_STOP = re.compile(r"""=\s*(["'])|>""")


def parse_html(source: str, stem: str) -> ParsedDocument:
    """Parse HTML into sections; the title is <title>, else the first h1, else `stem`."""
    extractor = _Extractor()
    extractor.feed(_defuse(source))
    extractor.close()
    title = extractor.title or extractor.first_h1 or normalize_heading(stem)
    return ParsedDocument(title=title, sections=extractor.builder.sections())


class _Extractor(HTMLParser):
    """Turns parser events into sections of paragraph and code blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = SectionBuilder()
        self.title = ""
        self.first_h1 = ""
        self._skipping: list[str] = []  # open dropped elements, innermost last
        self._content_depth = 0
        self._paragraph: list[str] = []
        self._pre: list[str] | None = None
        self._pre_depth = 0
        self._heading: list[str] | None = None
        self._heading_level = 0
        self._title: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skipping:
            if tag in _DROPPED:
                self._skipping.append(tag)
            return
        self._end_title()
        if tag in _DROPPED and not (tag == "header" and self._content_depth):
            self._skipping.append(tag)
            return
        if tag == "title" and not self.title:
            self._title = []
        elif tag in _CONTENT:
            self._content_depth += 1
        if self._pre is not None:
            if tag == "br":
                self._pre.append("\n")
            self._pre_depth += tag == "pre"
        elif tag == "pre":
            self._end_heading()
            self._end_paragraph()
            self._pre, self._pre_depth = [], 1
        elif tag in _HEADINGS:
            self._end_heading()
            self._end_paragraph()
            self._heading, self._heading_level = [], _HEADINGS[tag]
        elif tag == "br" and self._heading is not None:
            self._heading.append(" ")
        elif tag in _BLOCK:
            # A block inside a heading is malformed; ending the heading keeps the body text.
            self._end_heading()
            self._end_paragraph()
        elif tag in _CELLS:
            self._paragraph.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if tag in self._skipping:
                del self._skipping[_last_index(self._skipping, tag) :]
            return
        if tag == "title":
            self._end_title()
        elif tag in _CONTENT:
            self._content_depth = max(0, self._content_depth - 1)
        if self._pre is not None:
            self._pre_depth -= tag == "pre"
            if self._pre_depth <= 0:
                self._end_pre()
        elif tag in _HEADINGS:
            self._end_heading()
        elif tag in _BLOCK:
            self._end_paragraph()
        elif tag in _CELLS:
            self._paragraph.append(" ")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._pre is not None:
            self._pre.append(data)
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self._paragraph.append(data)

    def close(self) -> None:
        super().close()
        self._end_title()
        self._end_pre()
        self._end_heading()
        self._end_paragraph()

    def _end_title(self) -> None:
        if self._title is not None:
            self.title = normalize_heading("".join(self._title))
            self._title = None

    def _end_paragraph(self) -> None:
        if self._paragraph:
            self.builder.add(Block(" ".join("".join(self._paragraph).split())))
            self._paragraph = []

    def _end_pre(self) -> None:
        if self._pre is not None:
            code = "".join(self._pre)
            # HTML drops one newline right after <pre>.
            self.builder.add(Block(code.removeprefix("\n").rstrip(), is_code=True))
            self._pre, self._pre_depth = None, 0

    def _end_heading(self) -> None:
        if self._heading is None:
            return
        # Permalink anchors ("¶") are chrome, not part of the heading.
        text = normalize_heading("".join(self._heading)).rstrip("¶\u200b ")
        text = self.builder.heading(self._heading_level, text)
        if self._heading_level == 1 and not self.first_h1:
            self.first_h1 = text
        self._heading = None


def _last_index(items: list[str], item: str) -> int:
    return len(items) - 1 - items[::-1].index(item)


class _Search:
    """Finds the next match of a pattern at or after a position, re-using earlier answers.

    Positions only move forward in `_defuse`, so a cached hit ahead of the position is still
    the next one, and "no match" stays true: each pattern scans the text about once.
    """

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self._text = text
        self._pattern = pattern
        self._asked = -1
        self._hit: re.Match[str] | None = None

    def next(self, pos: int) -> re.Match[str] | None:
        stale = self._hit is not None and self._hit.start() < pos
        if self._asked < 0 or pos < self._asked or stale:
            self._hit = self._pattern.search(self._text, pos)
            self._asked = pos
        return self._hit


class _Defuser:
    """One pass over HTML that emits bare tags, drops comments and raw text, escapes strays."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self._gt = _Search(text, re.compile(">"))
        self._comment_end = _Search(text, re.compile(r"--!?>"))
        self._quote = {q: _Search(text, re.compile(q)) for q in "\"'"}
        self._raw_end: dict[str, _Search] = {}

    def run(self) -> str:
        text, pos = self.text, 0
        while (found := _NEEDS_WORK.search(text, pos)) is not None:
            lt = found.start()
            self.out.append(text[pos:lt])
            after = lt + 1
            if text.startswith("<!--", lt):
                # From `<!` on, so that the abrupt `<!-->` and `<!--->` close themselves.
                match = self._comment_end.next(lt + 2)
                if match is None:  # an unclosed comment runs to the end, as in a browser
                    return "".join(self.out)
                pos = match.end()
            elif (tag := _PLAIN_TAG.match(text, lt)) and tag.group(2).lower() not in _RAW_TEXT:
                # The common case in one match: a tag whose quoted values hold no < or >.
                slash = "/" if text.startswith("/>", tag.end() - 2) else ""
                self.out.append(f"<{tag.group(1)}{tag.group(2).lower()}{slash}>")
                pos = tag.end()
            elif name := _TAG_NAME.match(text, after):
                pos = self._start_tag(lt, name.group().lower(), name.end())
            elif text.startswith("/", after) and (name := _TAG_NAME.match(text, after + 1)):
                close = self._gt.next(name.end())
                pos = self._stray(lt) if close is None else close.end()
                if close is not None:
                    self.out.append(f"</{name.group().lower()}>")
            elif text.startswith(("!", "?"), after):  # doctype, CDATA, processing instruction
                close = self._gt.next(after)
                pos = self._stray(lt) if close is None else close.end()
            else:
                pos = self._stray(lt)
            if pos < 0:
                return "".join(self.out)
        self.out.append(text[pos:])
        return "".join(self.out)

    def _stray(self, lt: int) -> int:
        self.out.append("&lt;")
        return lt + 1

    def _start_tag(self, lt: int, name: str, pos: int) -> int:
        end = self._tag_end(pos)
        if end == _NO_GT:
            return self._stray(lt)
        if end == _RUNS_TO_END:
            return -1
        if name not in _RAW_TEXT:
            closing = "/" if self.text.startswith("/>", end - 2) else ""
            self.out.append(f"<{name}{closing}>")
            return end
        if name not in self._raw_end:
            pattern = re.compile(rf"</{re.escape(name)}(?=[\s/>])", re.IGNORECASE)
            self._raw_end[name] = _Search(self.text, pattern)
        close = self._raw_end[name].next(end)
        after = None if close is None else self._gt.next(close.end())
        return -1 if after is None else after.end()  # unclosed raw text runs to the end

    def _tag_end(self, pos: int) -> int:
        """The index just past the `>` closing a start tag, or _NO_GT, or _RUNS_TO_END."""
        if self._gt.next(pos) is None:
            return _NO_GT  # "a <b" in running text: not a tag
        # Each search below starts past the previous stop, and a `>` is known to lie ahead.
        while (stop := _TAG_STOP.search(self.text, pos)) is not None:
            quote = stop.group(1)
            if quote is None:
                return stop.end()
            closing = self._quote[quote].next(stop.end())
            if closing is None:  # an unclosed quote: end the tag at the next `>`
                gt = self._gt.next(stop.end())
                return _RUNS_TO_END if gt is None else gt.end()
            pos = closing.end()
            if self._gt.next(pos) is None:
                break
        # A quoted value swallowed every `>`: like a browser, the tag runs to the end.
        return _RUNS_TO_END


def _defuse(source: str) -> str:
    """Rewrite HTML so the stdlib parser sees only well-formed, attribute-free tags."""
    return _Defuser(source).run()
