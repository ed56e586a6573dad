"""reStructuredText (Sphinx projects as written) to titled sections of text and code blocks.

docutils (through ragd.adapters.docutils) finds the structure; no Sphinx build is run.
Sections, whatever their underline and overline styles, nest as docutils nests them and
give the heading path; the title is the first top-level section's. Sphinx's roles read as
their text, code directives and literal blocks (`::`) become code, admonitions keep their
text behind their label ("Note:", "Deprecated since version 3.2:"), an object description
(`function::`, `class::`, `option::`, `envvar::`, autodoc's `autoclass::`, CMake's
`signature::`) is a section
headed by its signature, nested in the section it is in, and the directives
that render no text of their own (tables of contents, index entries, `only`, `raw`) are
dropped with their content. Every other directive a project defines keeps its argument
and content as text.

`include` and `literalinclude` are expanded first when the caller can read them inside
the source root (ragd.indexing.parsers.includes); any other is dropped.
"""

from __future__ import annotations

from ragd.adapters.docutils import RstHeading, RstRules, parse_rst
from ragd.indexing.parsers import (
    Block,
    ParsedDocument,
    ReadInclude,
    SectionBuilder,
    UnsupportedDocument,
    normalize_heading,
)
from ragd.indexing.parsers.includes import expand_rst_includes

# Sphinx's object descriptions, bare (the Python domain is the default) and with their
# domain, and CMake's `signature`: each becomes a section headed by its signature.
_PYTHON_OBJECTS = (
    "function", "class", "method", "attribute", "data", "exception", "decorator",
    "decoratormethod", "classmethod", "staticmethod", "property", "type",
)  # fmt: skip
_DOMAIN_OBJECTS = {
    "py": _PYTHON_OBJECTS,
    "c": ("function", "macro", "struct", "union", "member", "var", "type", "enum", "enumerator"),
    "cpp": ("function", "class", "struct", "union", "member", "var", "type", "enum", "enumerator"),
    "js": ("function", "method", "class", "data", "attribute"),
    "std": ("option", "envvar", "describe", "object", "cmdoption"),
    "rst": ("directive", "directive:option", "role"),
    "cmake": ("signature",),
}
# autodoc's (`autoclass:: Environment`) name what Sphinx would describe from the code; the
# content written under them, often their attributes and methods, nests in that section.
_AUTODOC = (
    "autofunction", "autoclass", "automethod", "autoattribute", "autodata", "autoexception",
    "autodecorator", "autoproperty",
)  # fmt: skip
_DESCRIBED = frozenset(
    {*_PYTHON_OBJECTS, *_AUTODOC, "option", "envvar", "describe", "object", "cmdoption"}
    | {"confval", "signature"}
    | {f"{domain}:{name}" for domain, names in _DOMAIN_OBJECTS.items() for name in names}
)

_RULES = RstRules(
    code=frozenset(
        {"code", "code-block", "sourcecode", "doctest", "testcode", "testoutput", "testsetup"}
    ),
    labels={
        "note": "Note",
        "warning": "Warning",
        "tip": "Tip",
        "hint": "Hint",
        "important": "Important",
        "caution": "Caution",
        "attention": "Attention",
        "danger": "Danger",
        "error": "Error",
        "todo": "Todo",
        "seealso": "See also",
    },
    versioned={
        "versionadded": "Added in version",
        "versionchanged": "Changed in version",
        "deprecated": "Deprecated since version",
        "versionremoved": "Removed in version",
    },
    dropped=frozenset(
        {
            "toctree",
            "contents",
            "only",
            "raw",
            "index",
            "meta",
            "include",
            "literalinclude",
            "highlight",
            "default-role",
            "role",
            "currentmodule",
            "module",
            "program",
            "py:module",
            "py:currentmodule",
            "c:namespace",
            "cpp:namespace",
            "js:module",
            "sectionauthor",
            "moduleauthor",
            "codeauthor",
            "tabularcolumns",
        }
    ),
    described=_DESCRIBED,
)


def parse_rst_document(
    source: str, stem: str, read_include: ReadInclude | None = None
) -> ParsedDocument:
    """Parse reStructuredText into sections; the title is the first top-level section's.
    Includes are read through `read_include`."""
    if read_include is not None:
        source = "\n".join(expand_rst_includes(source.split("\n"), read_include))
    try:
        parts = parse_rst(source, _RULES)
    except ValueError as exc:
        raise UnsupportedDocument(str(exc)) from exc
    builder = SectionBuilder()
    title: str | None = None
    for part in parts:
        if isinstance(part, RstHeading):
            heading = builder.heading(part.level, part.text)
            if part.level == 1 and title is None and heading:
                title = heading
        else:
            builder.add(Block(part.text, is_code=part.is_code))
    return ParsedDocument(title=title or normalize_heading(stem), sections=builder.sections())
