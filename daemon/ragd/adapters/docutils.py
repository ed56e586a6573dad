"""docutils behind one adapter: reStructuredText source to a stream of headings and blocks.

Owns parsing with docutils' reStructuredText parser, as a docs server holds Sphinx
projects: no Sphinx build and no docutils transforms, only the doctree of the source as
written. Every directive and role resolves: the ones a Sphinx project defines for itself
are unknown to docutils, and would otherwise fail the document or leave error messages
and their raw markup in its text. So before a parse, each directive and role name the
source uses that docutils does not know is registered (`register_directive`,
`register_local_role`, docutils' public extension API) as a generic directive (its
arguments and content kept as text) or a generic role (its visible text). The caller
names which directives are code, which are labelled admonitions and which are dropped.

Nothing reaches the file system: file insertion (`include`, `literalinclude`, `raw` with
`:file:`) and raw passthrough are disabled, and every report is swallowed (report and
halt levels above severe, warnings into a null sink).
"""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import docutils.frontend
import docutils.languages
import docutils.utils
from docutils import nodes
from docutils.parsers import rst
from docutils.parsers.rst import directives, roles

__all__ = [
    "MAX_BLOCKS_TIMES_LINES",
    "RstBlock",
    "RstHeading",
    "RstPart",
    "RstRules",
    "blocks_times_lines",
    "parse_rst",
]


@dataclass(frozen=True, slots=True)
class RstHeading:
    """A section title; `level` is 1 for a top-level section, 2 for one inside it, ..."""

    level: int
    text: str


@dataclass(frozen=True, slots=True)
class RstBlock:
    """Visible text of one block-level element, in reading order."""

    text: str
    is_code: bool


RstPart = RstHeading | RstBlock


@dataclass(frozen=True, slots=True)
class RstRules:
    """Which directives become code, which keep a label before their text, which vanish."""

    code: frozenset[str]
    labels: Mapping[str, str]  # directive name -> label, for `note`-like directives
    versioned: Mapping[str, str]  # the same, for directives whose first argument is a version
    dropped: frozenset[str]
    described: frozenset[str] = frozenset()  # object descriptions: `function::`, `option::`


class _AnyOption(dict[str, Callable[[str | None], Any]]):
    """An option_spec that accepts every option: Sphinx directives take many of their own."""

    def __missing__(self, key: str) -> Callable[[str | None], Any]:
        return directives.unchanged

    def __bool__(self) -> bool:  # docutils reads options only when the spec is truthy
        return True


class _Generic(rst.Directive):
    """An unknown directive: its arguments as a paragraph, its content parsed as text."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[dict[str, Any]] = _AnyOption()

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        if self.arguments:
            out.append(self._inline(self.arguments[0]))
        if self.content:
            box = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, box)
            out.append(box)
        return out

    def _inline(self, text: str) -> nodes.paragraph:
        """An argument as a paragraph, its roles and markup read as in any paragraph."""
        pieces, _ = self.state.inline_text(text, self.lineno)
        return nodes.paragraph(text, "", *pieces)


class _Dropped(_Generic):
    def run(self) -> list[nodes.Node]:
        return []


class _Code(_Generic):
    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        return [nodes.literal_block(code, code)] if code.strip() else []


class _Labelled(_Generic):
    """An admonition under its label; `label` is set per directive name by a subclass."""

    optional_arguments = 0
    label: ClassVar[str] = ""

    def run(self) -> list[nodes.Node]:
        box = nodes.admonition("", nodes.title(text=self.label))
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _Versioned(_Labelled):
    """`versionadded:: 3.1 text`: the version joins the label, the rest is text."""

    optional_arguments = 2  # a missing version is no reason to lose the text

    def run(self) -> list[nodes.Node]:
        box = nodes.admonition("", nodes.title(text=" ".join([self.label, *self.arguments[:1]])))
        if len(self.arguments) > 1:
            box += self._inline(self.arguments[1])
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


_ESCAPED = re.compile(r"\\(.)")


class _Signature(nodes.section):
    """The section an object description opens, headed by its signature."""


class _Described(_Generic):
    """`function:: open(file, mode='r')` and its kind (Sphinx's object descriptions, CMake's
    `signature`): a section headed by the first signature, so each function, option or
    setting of a reference page is found under its own name rather than as one paragraph
    of a page-long section. Signatures are kept as written (`*args` is not emphasis);
    further signatures of the same entry are text. An entry with no content of its own
    (autodoc's, whose text Sphinx would take from the code) is its signature as text."""

    def run(self) -> list[nodes.Node]:
        # `\*args` is how older Sphinx pages keep a star from opening emphasis: shown `*args`.
        lines = _ESCAPED.sub(r"\1", "\n".join(self.arguments)).split("\n")
        signatures = [line.strip() for line in lines]
        signatures = [line for line in signatures if line]
        if not signatures or not self.content:  # a bare name (`autoclass:: a.B`) stays text
            return super().run()
        section = _Signature("", nodes.title(text=signatures[0]))
        section.extend(nodes.paragraph(line, line) for line in signatures[1:])
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, section)
        return [section]


# `~a.b.c` shows `c`, `!x` shows `x`, `title <target>` shows `title` (Sphinx's rendering).
_EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<(.*?)>$", re.S)


def _role_text(escaped: str) -> str:
    match = _EXPLICIT_TITLE.match(escaped)
    if match:
        return docutils.utils.unescape(match.group(1))
    text = docutils.utils.unescape(escaped)
    if text.startswith("!"):
        return text[1:]
    if text.startswith("~"):
        return text[1:].rpartition(".")[2]
    return text


def _generic_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: object,
    options: Mapping[str, object] | None = None,
    content: object = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    return [nodes.inline(rawtext, _role_text(text))], []


# Names seen in documents and registered here (docutils' public extension API), bounded
# since the names come from documents; past the bound an unknown name is left to docutils,
# whose error nodes are not read as text.
_UNKNOWN_NAMES = 4096
_registered_directives: set[str] = set()
_registered_roles: set[str] = set()
_DIRECTIVE_NAME = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w.:+-]*?)::(?=\s|$)", re.M)
_ROLE_NAME = re.compile(r"(?<![\w`]):([A-Za-z0-9][\w.:+-]*?):`")
_ENGLISH = docutils.languages.get_language("en")


def _install(rules: RstRules) -> None:
    """Register the caller's rules: Sphinx's `code-block` or `note` are theirs to decide."""
    table: dict[str, type[rst.Directive]] = {name: _Code for name in rules.code}
    table |= {name: _Dropped for name in rules.dropped}
    table |= {name: _Described for name in rules.described}
    for name, label in rules.labels.items():
        table[name] = type(f"_Labelled_{len(table)}", (_Labelled,), {"label": label})
    for name, label in rules.versioned.items():
        table[name] = type(f"_Versioned_{len(table)}", (_Versioned,), {"label": label})
    for name, directive in table.items():
        directives.register_directive(name, directive)
        _registered_directives.add(name)


def _register_unknown(source: str, document: nodes.document) -> None:
    """Give every directive and role `source` names that docutils does not know the
    generic one, so a Sphinx project's own never fails a document nor shows its markup."""
    for name in set(_DIRECTIVE_NAME.findall(source)) - _registered_directives:
        if len(_registered_directives) >= _UNKNOWN_NAMES:
            break
        found, _ = directives.directive(name, _ENGLISH, document)
        if found is None:
            directives.register_directive(name, _Generic)
        _registered_directives.add(name)
    for name in set(_ROLE_NAME.findall(source)) - _registered_roles:
        if len(_registered_roles) >= _UNKNOWN_NAMES:
            break
        role, _ = roles.role(name, _ENGLISH, 0, document.reporter)
        if role is None:  # the stubs type a role's answer narrower than docutils takes it
            roles.register_local_role(name, cast(Any, _generic_role))
        _registered_roles.add(name)


_SETTINGS = docutils.frontend.get_default_settings(rst.Parser)
_SETTINGS.report_level = 5  # nothing is reported ...
_SETTINGS.halt_level = 5  # ... and nothing stops the parse
_SETTINGS.warning_stream = io.StringIO()  # replaced per parse: nothing reaches stderr
_SETTINGS.file_insertion_enabled = False
_SETTINGS.raw_enabled = False
_SETTINGS.syntax_highlight = "none"
_SETTINGS.character_level_inline_markup = False
_SETTINGS.input_encoding = "unicode"
# docutils' own bound against quadratic inline parsing: a longer line ends the parse with
# an empty document, so it is checked first and told as the reason the document failed.
MAX_LINE_CHARS = 10_000
_SETTINGS.line_length_limit = MAX_LINE_CHARS


# docutils parses each list, field list, directive series and section from a copy of the
# rest of its input (a StringList slice), so its time grows with blocks times lines: a
# quarter megabyte alternating paragraphs and directives takes half a minute, a megabyte
# ten. A document whose count of block-opening lines times its count of lines is over
# this (about 5 s of CPU at worst) is refused before docutils sees it; the largest pages
# of CMake's manual stay a hundred times below.
MAX_BLOCKS_TIMES_LINES = 200_000_000
_BLOCK_OPENING = re.compile(
    r"[ \t]*(?:\.\.[ \t]|[-*+|][ \t]|(?:\d+|#|\w)[.)][ \t]|:[^:\s]|([^\w\s])\1{3,}[ \t]*$)"
)


def blocks_times_lines(lines: list[str]) -> int:
    """Lines that open a block (a marker, or the next line indented deeper), times lines."""
    blocks = 0
    previous_indent = -1
    for line in reversed(lines):  # a line opens a block when the one after is indented more
        stripped = line.lstrip()
        indent = len(line) - len(stripped) if stripped else -1
        if stripped and (0 <= indent < previous_indent or _BLOCK_OPENING.match(line)):
            blocks += 1
        if stripped:
            previous_indent = indent
    return blocks * len(lines)


class _NullSink(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


_installed: RstRules | None = None


def parse_rst(source: str, rules: RstRules) -> list[RstPart]:
    """The headings and blocks of `source` in reading order; raises ValueError saying why."""
    global _installed  # the rules table is rebuilt only when they change
    if _installed is not rules:
        _install(rules)
        _installed = rules
    lines = source.expandtabs(_SETTINGS.tab_width).split("\n")
    longest = max(map(len, lines), default=0)
    if longest > MAX_LINE_CHARS:
        raise ValueError(
            f"a line has {longest} characters; reStructuredText lines are read up to"
            f" {MAX_LINE_CHARS}"
        )
    cost = blocks_times_lines(lines)
    if cost > MAX_BLOCKS_TIMES_LINES:
        raise ValueError(
            f"too large for the reStructuredText parser: {len(lines)} lines with"
            f" {cost // len(lines)} blocks (its time grows with their product, the most is"
            f" {MAX_BLOCKS_TIMES_LINES:,}); split the file"
        )
    settings = copy.copy(_SETTINGS)
    settings.warning_stream = _NullSink()
    document = docutils.utils.new_document("<rst>", settings)
    _register_unknown(source, document)
    try:
        rst.Parser().parse(source, document)
        _drop_file_metadata(document)
        return list(_walk(document, 0))
    except RecursionError:
        raise ValueError("the reStructuredText nests too deep to parse") from None


def _drop_file_metadata(document: nodes.document) -> None:
    """A field list opening the file (`:orphan:`, `:tocdepth: 2`) is Sphinx's metadata for
    the page, which no reader sees."""
    for child in document.children:
        if isinstance(child, nodes.field_list):
            document.remove(child)
        if not isinstance(child, (nodes.comment, nodes.target, nodes.substitution_definition)):
            return


# Elements that are not text a reader sees.
_SKIPPED = (
    nodes.comment,
    nodes.substitution_definition,
    nodes.target,
    nodes.system_message,
    nodes.pending,
    nodes.raw,
    nodes.meta,
    nodes.title,
)
_CODE = (nodes.literal_block, nodes.doctest_block, nodes.math_block)
# Elements whose children are walked rather than read as one block of text.
_STRUCTURE = (nodes.section, nodes.Admonition, *_CODE)


def _walk(
    node: nodes.Element, level: int, enclosing: RstHeading | None = None
) -> Iterator[RstPart]:
    """`enclosing` is the heading of the section `node` is in: text that follows an object
    description belongs to that section again, so its heading is given anew."""
    label = ""
    if isinstance(node, nodes.section):
        level += 1
        enclosing = RstHeading(level, _title(node))
        yield enclosing
    elif isinstance(node, nodes.Admonition):
        title = _title(node)
        label = f"{title}:" if title else node.tagname.capitalize() + ":"
    reopen = False  # an object description ended: the next text is the enclosing section's
    for child in node.children:
        if isinstance(child, (nodes.Text, *_SKIPPED)):
            continue
        if not isinstance(child, nodes.Element):
            continue
        parts: Iterator[RstPart]
        if isinstance(child, _CODE):
            parts = iter([RstBlock(child.astext(), is_code=True)])
        elif not isinstance(child, _STRUCTURE) and not _has_structure(child):
            parts = iter([RstBlock(_text(child), is_code=False)])
        else:
            parts = _walk(child, level, enclosing)
        for part in parts:
            if isinstance(part, RstHeading):
                reopen = False
            elif reopen and enclosing is not None and part.text.strip():
                yield enclosing
                reopen = False
            if label and isinstance(part, RstBlock) and not part.is_code and part.text.strip():
                part = RstBlock(f"{label} {part.text}", is_code=False)
                label = ""
            yield part
        if isinstance(child, _Signature) or (
            not isinstance(child, nodes.section) and _has_signature(child)
        ):
            reopen = True
    if label:  # an admonition with no text of its own: `versionadded:: 3.1`
        yield RstBlock(label.rstrip(":"), is_code=False)


def _has_signature(node: nodes.Element) -> bool:
    return any(True for _ in node.findall(_Signature, include_self=False))


def _title(node: nodes.Element) -> str:
    for child in node.children:
        if isinstance(child, nodes.title):
            return _text(child)
    return ""


def _has_structure(node: nodes.Element) -> bool:
    return any(True for _ in node.findall(lambda n: isinstance(n, _STRUCTURE), include_self=False))


_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")


def _substitution(reference: nodes.Element) -> nodes.Element | None:
    """The definition a substitution reference names, matched as docutils does: exactly,
    then case-insensitively (docutils' transforms, which would do this, are not run)."""
    document = reference.document
    if document is None:
        return None
    name = str(reference.get("refname", ""))
    definition = document.substitution_defs.get(name)
    if definition is None:
        exact = document.substitution_names.get(docutils.nodes.fully_normalize_name(name))
        definition = document.substitution_defs.get(exact) if exact else None
    return definition


def _text(node: nodes.Node) -> str:
    """Visible text: a paragraph on one line as a reader sees it flow (a phrase is found
    whatever the source's wrapping), blocks one per line, rows as cells."""
    if isinstance(node, nodes.Text):  # docutils marks an escaped character with a NUL
        return docutils.utils.unescape(str(node)) if "\x00" in node else str(node)
    if isinstance(node, _SKIPPED) and not isinstance(node, nodes.title):
        return ""
    if isinstance(node, nodes.problematic):  # markup docutils could not resolve
        return docutils.utils.unescape(node.astext()).strip("|_`")
    if isinstance(node, nodes.substitution_reference):
        definition = _substitution(node)
        if definition is not None:  # `|CPS|` shows what `.. |CPS| replace::` says
            return _LINE_BREAK.sub(" ", definition.astext())
    assert isinstance(node, nodes.Element)
    pieces = (_text(child) for child in node.children)
    if isinstance(node, _CODE):
        return "".join(pieces)
    if isinstance(node, nodes.TextElement):  # a paragraph flows: its source line breaks are spaces
        return _LINE_BREAK.sub(" ", "".join(pieces))
    separator = " | " if isinstance(node, nodes.row) else "\n"
    return separator.join(piece for piece in pieces if piece.strip())
