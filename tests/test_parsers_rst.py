"""reStructuredText parsing: Sphinx pages as a reader sees them, sections, code, labels."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.adapters.docutils import MAX_BLOCKS_TIMES_LINES, blocks_times_lines
from ragd.indexing.chunking import ChunkSettings, chunk_document
from ragd.indexing.parsers import Block, ParsedDocument, UnsupportedDocument, parse_document

FIXTURES = Path(__file__).parent / "fixtures" / "rst"
RST_FIXTURES = sorted(FIXTURES.glob("*.rst"))


def parse(source: str, filename: str = "page.rst") -> ParsedDocument:
    return parse_document(source.encode(), filename)


def paths(doc: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in doc.sections]


def texts(doc: ParsedDocument) -> list[str]:
    return [block.text for section in doc.sections for block in section.blocks]


def test_sections_of_every_underline_and_overline_style_nest_as_the_heading_path() -> None:
    doc = parse(
        "#####\nTitle\n#####\n\na\n\nOne\n***\n\nb\n\nTwo\n===\n\nc\n\nThree\n-----\n\nd\n\n"
        'Four\n^^^^\n\ne\n\nFive\n""""\n\nf\n\nBack\n****\n\ng\n'
    )
    assert paths(doc) == [
        ("Title",),
        ("Title", "One"),
        ("Title", "One", "Two"),
        ("Title", "One", "Two", "Three"),
        ("Title", "One", "Two", "Three", "Four"),
        ("Title", "One", "Two", "Three", "Four", "Five"),
        ("Title", "Back"),
    ]


def test_the_title_is_the_first_top_level_section() -> None:
    assert parse("Guide\n=====\n\ntext\n\nPart\n----\n\nmore\n").title == "Guide"


def test_a_page_without_sections_is_titled_by_its_stem() -> None:
    doc = parse("Just a paragraph.\n", "docs/release-notes.rst")
    assert doc.title == "release-notes"
    assert paths(doc) == [()]


def test_the_headings_of_a_real_page_are_its_sections() -> None:
    doc = parse_document((FIXTURES / "command_if.rst").read_bytes(), "if.rst")
    assert doc.title == "if"
    # Its `signature::` entries are headings too, nested in these (tested below).
    sections = [tuple(h for h in path if not h.startswith("if(")) for path in paths(doc)]
    assert sorted(set(sections), key=sections.index) == [
        ("if",),
        ("if", "Synopsis"),
        ("if", "Condition Syntax"),
        ("if", "Condition Syntax", "Basic Expressions"),
        ("if", "Condition Syntax", "Logic Operators"),
        ("if", "Condition Syntax", "Existence Checks"),
        ("if", "Condition Syntax", "File Operations"),
        ("if", "Condition Syntax", "Comparisons"),
        ("if", "Condition Syntax", "Version Comparisons"),
        ("if", "Condition Syntax", "Path Comparisons"),
        ("if", "Variable Expansion"),
        ("if", "See also"),
    ]


@pytest.mark.parametrize(
    ("markup", "shown"),
    [
        (":command:`add_library`", "add_library"),
        (":ref:`label <x>`", "label"),
        (
            ":ref:`cmake-language(7) variables <CMake Language Variables>`",
            "cmake-language(7) variables",
        ),
        (":py:func:`os.path.join`", "os.path.join"),
        (":func:`~os.path.join`", "join"),
        (":class:`!Marker`", "Marker"),
        (":prop_tgt:`FRAMEWORK`", "FRAMEWORK"),
        ("`title reference`", "title reference"),
        ("``literal``", "literal"),
        ("|release|", "release"),
    ],
)
def test_roles_and_inline_markup_read_as_their_text(markup: str, shown: str) -> None:
    assert texts(parse(f"Use {markup} here.\n")) == [f"Use {shown} here."]


def test_escaped_characters_read_as_shown_with_no_nul_left() -> None:
    doc = parse(
        "A call uses `\\<artifact-kind\\>`_ arguments.\n\n"
        ".. automethod:: call(callable, \\*args)\n\n:class:`Babel\\'s <x>` and a\\ b.\n"
    )
    assert texts(doc) == [
        "A call uses <artifact-kind> arguments.",
        "call(callable, *args)",
        "Babel's and ab.",
    ]


def test_an_unknown_directive_keeps_its_argument_and_content_as_text() -> None:
    doc = parse(
        ".. project:feature:: add_library(<name> ALIAS <target>)\n"
        "   :target: ALIAS\n   :anything-else: 3\n\n   Creates an *Alias* target.\n"
    )
    assert texts(doc) == ["add_library(<name> ALIAS <target>)", "Creates an Alias target."]


def test_an_object_description_is_a_section_headed_by_its_signature() -> None:
    doc = parse(
        "Settings\n========\n\nIntro.\n\n.. py:data:: SECRET_KEY\n\n"
        "    A key for *signing* cookies.\n\n"
        ".. function:: open(file, mode='r', *args, **kwargs)\n              open(path)\n\n"
        "   Opens a file.\n\n.. option:: -m <module>\n\n   Runs a module.\n"
    )
    assert [(s.heading_path, [b.text for b in s.blocks]) for s in doc.sections] == [
        (("Settings",), ["Intro."]),
        (("Settings", "SECRET_KEY"), ["A key for signing cookies."]),
        (("Settings", "open(file, mode='r', *args, **kwargs)"), ["open(path)", "Opens a file."]),
        (("Settings", "-m <module>"), ["Runs a module."]),
    ]


def test_text_after_an_object_description_is_its_sections_again() -> None:
    doc = parse(
        "Files\n=====\n\n.. class:: File(path)\n\n   A file.\n\n   .. method:: read(n)\n\n"
        "      Reads n bytes.\n\n   Files close on exit.\n\nSee the tutorial.\n"
    )
    assert [(s.heading_path, [b.text for b in s.blocks]) for s in doc.sections] == [
        (("Files", "File(path)"), ["A file."]),
        (("Files", "File(path)", "read(n)"), ["Reads n bytes."]),
        (("Files", "File(path)"), ["Files close on exit."]),
        (("Files",), ["See the tutorial."]),
    ]


def test_autodoc_entries_nest_what_is_written_under_them_and_bare_ones_stay_text() -> None:
    doc = parse(
        "API\n===\n\n.. autoclass:: Environment([options])\n\n   .. attribute:: shared\n\n"
        "      Whether it is shared.\n\n.. autofunction:: jinja2.select_autoescape\n\n"
        ".. method:: Template.render(\\*args, \\**kwargs)\n\n   Renders it.\n"
    )
    assert [(s.heading_path, [b.text for b in s.blocks]) for s in doc.sections] == [
        (("API", "Environment([options])", "shared"), ["Whether it is shared."]),
        (("API",), ["jinja2.select_autoescape"]),
        (("API", "Template.render(*args, **kwargs)"), ["Renders it."]),
    ]


def test_the_signatures_of_a_real_page_head_their_entries() -> None:
    doc = parse_document((FIXTURES / "command_if.rst").read_bytes(), "if.rst")
    entry = (
        "if",
        "Condition Syntax",
        "Existence Checks",
        "if(DEFINED <name>|CACHE{<name>}|ENV{<name>})",
    )
    section = next(s for s in doc.sections if s.heading_path == entry)
    assert "if(DEFINED someName)" in section.blocks[0].text


def test_unknown_directives_and_roles_never_fail_a_document() -> None:
    doc = parse(
        "Title\n=====\n\n.. frobnicate::\n\n.. frobnicate:: a b c\n   :x:\n\n"
        "   .. nested-unknown::\n\n      :weird:role:`deep` and :another:`one`\n\n"
        ":unknown:`x` and :also-unknown:`y <z>`\n"
    )
    assert texts(doc) == ["a b c", "deep and one", "x and y"]


def test_code_directives_and_literal_blocks_are_code() -> None:
    doc = parse(
        "Example::\n\n   make all\n\n.. code-block:: python\n   :linenos:\n   :caption: x\n\n"
        "   print(1)\n\n.. sourcecode:: c\n\n   int x;\n\n.. code:: sh\n\n   ls\n\n"
        ">>> 1 + 1\n2\n"
    )
    assert doc.sections[0].blocks == (
        Block("Example:"),
        Block("make all", is_code=True),
        Block("print(1)", is_code=True),
        Block("int x;", is_code=True),
        Block("ls", is_code=True),
        Block(">>> 1 + 1\n2", is_code=True),
    )


@pytest.mark.parametrize(
    ("markup", "shown"),
    [
        (".. note:: Mind the gap.", "Note: Mind the gap."),
        (".. warning::\n\n   Mind the gap.", "Warning: Mind the gap."),
        (".. tip:: Mind the gap.", "Tip: Mind the gap."),
        (".. seealso:: Mind the gap.", "See also: Mind the gap."),
        (".. versionadded:: 3.1\n   Mind the gap.", "Added in version 3.1: Mind the gap."),
        (".. versionchanged:: 3.2\n\n   Mind the gap.", "Changed in version 3.2: Mind the gap."),
        (".. deprecated:: 4.0 Mind the gap.", "Deprecated since version 4.0: Mind the gap."),
        (".. versionadded:: 3.1", "Added in version 3.1"),
        (".. admonition:: Careful\n\n   Mind the gap.", "Careful: Mind the gap."),
    ],
)
def test_admonitions_keep_their_text_behind_their_label(markup: str, shown: str) -> None:
    assert texts(parse(markup + "\n")) == [shown]


@pytest.mark.parametrize(
    "markup",
    [
        ".. toctree::\n   :maxdepth: 2\n\n   intro\n   usage",
        ".. contents:: On this page\n   :local:",
        ".. only:: html\n\n   Only in HTML.",
        ".. raw:: html\n\n   <b>raw</b>",
        ".. index:: single: marker; pair",
        ".. meta::\n   :keywords: a, b",
        ".. a comment\n   on two lines",
        ".. |name| replace:: substituted",
        ".. _label:",
        ".. _Link: https://example.org/",
        ".. include:: other.rst",
        ".. literalinclude:: example.py\n   :lines: 1-3",
        ".. highlight:: c",
    ],
)
def test_directives_that_render_no_text_of_their_own_are_dropped(markup: str) -> None:
    assert texts(parse(f"Before.\n\n{markup}\n\nAfter.\n")) == ["Before.", "After."]


def test_the_field_list_opening_a_file_is_page_metadata_and_dropped() -> None:
    doc = parse(":orphan:\n:tocdepth: 2\n\nTitle\n=====\n\n:param x: kept.\n")
    assert texts(doc) == ["param x\nkept."]


@pytest.mark.parametrize(
    "markup", [".. module:: jinja2.sandbox\n   :synopsis: x", ".. py:currentmodule:: jinja2"]
)
def test_module_and_program_markers_render_no_text(markup: str) -> None:
    assert texts(parse(f"Before.\n\n{markup}\n\nAfter.\n")) == ["Before.", "After."]


def test_a_substitution_reads_as_what_its_definition_says() -> None:
    doc = parse(
        ".. |CPS| replace:: Common Package Specification\n"
        ".. |v| replace:: ``compat_version``\n\nThe |CPS| reads |v|; |cps| too; |undefined|.\n"
    )
    assert texts(doc) == [
        "The Common Package Specification reads compat_version;"
        " Common Package Specification too; undefined."
    ]


def test_no_file_is_read_by_include_raw_or_csv_table(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET,1\n")
    doc = parse(
        f".. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n"
        f".. csv-table:: t\n   :file: {secret}\n\nvisible\n"
    )
    assert not any("TOPSECRET" in text for text in texts(doc))
    assert "visible" in texts(doc)


def test_a_paragraph_wrapped_in_the_source_flows_on_one_line_and_code_keeps_its_lines() -> None:
    doc = parse(
        "Requests verifies SSL certificates for HTTPS requests,\n"
        "just like a web   \nbrowser.\n\n"
        "* a list item that is\n  wrapped\n\n| a line block\n| keeps its lines\n\n"
        "::\n\n   code stays\n   on two lines\n"
    )
    assert texts(doc) == [
        "Requests verifies SSL certificates for HTTPS requests, just like a web browser.",
        "a list item that is wrapped",
        "a line block\nkeeps its lines",
        "code stays\non two lines",
    ]


def test_tables_and_lists_become_text() -> None:
    doc = parse(
        "* one\n* two\n\n1. first\n2. second\n\nterm\n   definition\n\n"
        "+-----+-----+\n| a   | b   |\n+=====+=====+\n| 1   | 2   |\n+-----+-----+\n\n"
        "=== ===\nx   y\n=== ===\n3   4\n=== ===\n"
    )
    assert texts(doc) == [
        "one\ntwo",
        "first\nsecond",
        "term\ndefinition",
        "a | b\n1 | 2",
        "x | y\n3 | 4",
    ]


def test_rst_and_rest_are_restructured_text_and_txt_stays_plain() -> None:
    source = b"Title\n=====\n\nBody.\n"
    assert paths(parse_document(source, "a.rst")) == [("Title",)]
    assert paths(parse_document(source, "a.REST")) == [("Title",)]
    assert texts(parse_document(source, "a.txt")) == ["Title\n=====", "Body."]


def test_docutils_writes_no_report_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    parse("Title\n===\n\n.. image::\n\n:unknown:`x`\n\n`unclosed\n\n.. code-block::\n")
    assert capfd.readouterr() == ("", "")


# Raw markup a reader never sees: directive and comment markers, role syntax, section
# adornment lines, substitution references. `|A|B|` in signatures is text, not one.
_MARKUP = {
    "directive": re.compile(r"^\s*\.\. ", re.M),
    "role": re.compile(r":[\w:+.-]+:`"),
    "underline": re.compile(r"^\s*([=\-~^\"'`#*+<>_:.])\1{3,}\s*$", re.M),
    "substitution": re.compile(r"(?<![\w|])\|[A-Za-z][\w-]*\|(?![\w|])"),
}


@pytest.mark.parametrize("path", RST_FIXTURES, ids=lambda p: p.name)
def test_no_chunk_of_a_real_page_holds_rst_markup(path: Path) -> None:
    doc = parse_document(path.read_bytes(), path.name)
    chunks = chunk_document(doc, ChunkSettings(900, 120))

    assert chunks
    found = {
        (name, chunk.ordinal)
        for chunk in chunks
        for name, pattern in _MARKUP.items()
        if pattern.search(chunk.text)
    }
    assert found == set()


# Any mix of real pages' constructs and words: whatever the order, no chunk holds markup.
_PIECES = [
    "Title\n=====\n\n",
    "=======\nOverline\n=======\n\n",
    "Section\n-------\n\n",
    "Sub\n~~~\n\n",
    ".. code-block:: cmake\n   :caption: x\n\n   add_library(foo STATIC a.c)\n\n",
    "Example::\n\n   make all\n\n",
    ".. note:: Mind the gap.\n\n",
    ".. versionadded:: 3.11\n\n   Added words.\n\n",
    ".. deprecated:: 4.0\n\n",
    ".. admonition:: Careful\n\n   Admonished words.\n\n",
    ".. toctree::\n   :maxdepth: 1\n\n   toctreeword\n   usage\n\n",
    ".. contents:: On this page\n   :local:\n\n",
    ".. only:: html\n\n   Only in HTML, onlyword.\n\n",
    ".. raw:: html\n\n   <b>rawword</b>\n\n",
    ".. index:: single: indexword; pair\n\n",
    ".. _label:\n\n",
    ".. a commentword\n   on two lines\n\n",
    "..\n   a commentword below an empty line\n\n",
    ".. |sub| replace:: substituted\n\n",
    ".. include:: includeword.rst\n\n",
    ".. cmake:signature:: add_library(<name> ALIAS <target>)\n   :target: ALIAS\n\n"
    "   Creates an *Alias* target.\n\n",
    ".. frobnicate::\n\n   .. nested-unknown::\n\n      :weird:role:`deep` text\n\n",
    "Use :command:`add_library` and :ref:`label <x>` and :unknown:`y <z>` here.\n\n",
    "With |sub| and ``literal`` and *emphasis* and `title` and :func:`~os.path.join`.\n\n",
    "* one\n* two\n\n",
    "term\n   definition\n\n",
    "+-----+-----+\n| a   | b   |\n+=====+=====+\n| 1   | 2   |\n+-----+-----+\n\n",
    "=== ===\nx   y\n=== ===\n3   4\n=== ===\n\n",
    "`unclosed and :bad:`role\n\n",
    "\n",
]
# Words inside what is dropped whole: comments, toctree, only, raw, index, include.
_DROPPED = re.compile(r"commentword|toctreeword|onlyword|rawword|indexword|includeword")
_WORDS = st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), _WORDS.map(lambda w: f"{w}\n\n"))))
def test_no_mix_of_rst_constructs_leaves_markup_in_a_chunk(pieces: list[str]) -> None:
    chunks = chunk_document(parse("".join(pieces)), ChunkSettings(900, 120))

    found = [(name, c.text) for c in chunks for name, p in _MARKUP.items() if p.search(c.text)]
    assert found == []
    assert [c.text for c in chunks if _DROPPED.search(c.text)] == []


def test_the_fixtures_are_six_or_more_real_pages() -> None:
    assert len(RST_FIXTURES) >= 6


# Hostile input: each would take minutes if a step were quadratic; the timeouts are far
# above the seconds a linear parse takes on a loaded machine, and nothing asserts a time.


@pytest.mark.timeout(120)
def test_a_hundred_thousand_underline_lines_fail_the_document_before_docutils_runs() -> None:
    with pytest.raises(UnsupportedDocument, match="too large for the reStructuredText parser"):
        parse("Title\n" + "=====\n" * 100_000)


@pytest.mark.timeout(120)
def test_dense_markup_past_the_parsers_budget_fails_the_document_with_its_size() -> None:
    # docutils copies the rest of its input for every such block: half a minute as written.
    source = "paragraph\n\n.. directive::\n\n" * 12_000
    with pytest.raises(UnsupportedDocument, match="48001 lines with 12000 blocks"):
        parse(source)


@pytest.mark.timeout(120)
def test_the_largest_real_page_is_far_inside_the_parsers_budget() -> None:
    # CMake's largest manual page (121 KB) counts 3.1 million; the fixtures far less.
    for path in RST_FIXTURES:
        lines = path.read_text().split("\n")
        assert blocks_times_lines(lines) * 10 < MAX_BLOCKS_TIMES_LINES


@pytest.mark.timeout(60)
def test_an_over_long_line_fails_the_document_with_its_length() -> None:
    with pytest.raises(UnsupportedDocument, match="a line has 100006 characters"):
        parse("Title\n" + "=" * 100_000 + "=" * 6 + "\n")


@pytest.mark.timeout(120)
def test_nesting_deeper_than_the_parser_recurses_fails_the_document_with_a_reason() -> None:
    source = "".join(" " * depth + f"level {depth}\n\n" for depth in range(2000))
    with pytest.raises(UnsupportedDocument, match="nests too deep"):
        parse(source)


@pytest.mark.timeout(120)
def test_a_page_after_a_failed_one_parses_as_before() -> None:
    expected = parse("Title\n=====\n\n:ref:`a <b>` and .. x\n")
    with pytest.raises(UnsupportedDocument):
        parse("".join("  " * depth + "* item\n\n" for depth in range(1000)))
    assert parse("Title\n=====\n\n:ref:`a <b>` and .. x\n") == expected
