"""Markdown parsing: headings as a reader sees them, sections, source blocks, titles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragd.indexing.parsers import (
    Block,
    ParsedDocument,
    UnsupportedDocument,
    markdown,
    parse_document,
)
from ragd.indexing.parsers.markdown import heading_text
from tests.conftest import FASTAPI_DOCS, GOLD


def parse(source: str, filename: str = "guide.md") -> ParsedDocument:
    return parse_document(source.encode(), filename)


def paths(doc: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in doc.sections]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Request Body { #request-body }", "Request Body"),
        (
            "Import Pydantic's `BaseModel` { #import-pydantics-basemodel }",
            "Import Pydantic's `BaseModel`",
        ),
        ("Styled {#x .cls}", "Styled"),
        ("Python-Markdown {: #x }", "Python-Markdown"),
        ("Data attribute { data-level=2 }", "Data attribute"),
        ("No attributes", "No attributes"),
        ("Use `{name}` placeholders {x}", "Use `{name}` placeholders {x}"),
        ("Dict {}", "Dict {}"),
    ],
)
def test_heading_text_drops_only_attribute_lists(source: str, expected: str) -> None:
    assert heading_text(source) == expected


def test_heading_path_stacks_by_level() -> None:
    doc = parse("# Top\n\na\n\n## Mid\n\nb\n\n### Low\n\nc\n\n## Next\n\nd\n\n### Deep\n\ne\n")
    assert paths(doc) == [
        ("Top",),
        ("Top", "Mid"),
        ("Top", "Mid", "Low"),
        ("Top", "Next"),
        ("Top", "Next", "Deep"),
    ]


def test_skipped_level_nests_under_the_nearest_heading() -> None:
    assert paths(parse("# Top\n\n### Skipped two\n\ntext\n")) == [("Top", "Skipped two")]


def test_headings_inside_fences_are_not_headings() -> None:
    doc = parse("# Top\n\n```bash\n# a comment, not a heading\nls\n```\n\nAfter.\n")
    assert paths(doc) == [("Top",)]
    assert doc.sections[0].blocks[0] == Block("```bash\n# a comment, not a heading\nls\n```", True)


def test_setext_headings_count() -> None:
    doc = parse("Title\n=====\n\nIntro.\n\nPart two\n--------\n\nBody.\n")
    assert doc.title == "Title"
    assert paths(doc) == [("Title",), ("Title", "Part two")]


def test_text_before_the_first_heading_has_an_empty_path() -> None:
    doc = parse("Preamble.\n\n# Title\n\nBody.\n")
    assert paths(doc) == [(), ("Title",)]
    assert doc.sections[0].blocks == (Block("Preamble."),)


def test_heading_without_blocks_still_names_its_subsections() -> None:
    doc = parse("# Guide\n\n## Setup\n### Linux\n\nInstall it.\n")
    assert paths(doc) == [("Guide", "Setup", "Linux")]


def test_blocks_are_original_source_lines() -> None:
    source = (
        "# T\n\nSome *emphasis* and a [link](http://x).\n\n"
        "- one\n- two\n  continued\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "> quoted\n\n---\n\n"
        "    indented code\n"
    )
    blocks = parse(source).sections[0].blocks
    assert [b.text for b in blocks] == [
        "Some *emphasis* and a [link](http://x).",
        "- one\n- two\n  continued",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "> quoted",
        "---",
        "    indented code",
    ]
    assert [b.is_code for b in blocks] == [False, False, False, False, False, True]


def test_heading_line_is_not_part_of_the_body() -> None:
    doc = parse("# Title { #t }\n\nBody.\n")
    assert doc.sections[0].blocks == (Block("Body."),)


def test_title_is_the_first_h1() -> None:
    doc = parse("## Before\n\nx\n\n# Real title { #rt }\n\ny\n\n# Second\n\nz\n")
    assert doc.title == "Real title"


def test_front_matter_is_stripped_and_gives_the_title_without_h1() -> None:
    doc = parse('---\ntitle: "Front title"\ntags: [a]\n---\n\n## Part\n\nBody.\n')
    assert doc.title == "Front title"
    assert paths(doc) == [("Part",)]
    assert all("tags" not in b.text for s in doc.sections for b in s.blocks)


def test_h1_wins_over_front_matter_title() -> None:
    doc = parse("---\ntitle: Meta\n---\n# Heading\n\nBody.\n")
    assert doc.title == "Heading"


def test_front_matter_without_title_is_still_stripped() -> None:
    doc = parse("---\ninclude_yaml:\n  sponsors: data/sponsors.yml\n---\n\nText.\n", "index.md")
    assert doc.title == "index"
    assert [s.blocks for s in doc.sections] == [(Block("Text."),)]


def test_leading_thematic_break_is_not_front_matter() -> None:
    doc = parse("---\n\nJust a rule above.\n\n---\n\nMore.\n")
    texts = [b.text for b in doc.sections[0].blocks]
    assert "Just a rule above." in texts
    assert "More." in texts


def test_title_falls_back_to_the_file_stem() -> None:
    assert parse("Just text.\n", "docs/getting-started.md").title == "getting-started"


def test_gold_headings_are_found_as_a_reader_sees_them() -> None:
    assert GOLD.exists(), "../shared/eval/fastapi-docs.jsonl is missing"
    for line in GOLD.read_text().splitlines():
        for gold in json.loads(line)["gold"]:
            path = FASTAPI_DOCS / gold["path"]
            doc = parse_document(path.read_bytes(), path.name)
            headings = {h for section in doc.sections for h in section.heading_path}
            assert gold["heading"] in headings | {doc.title}, gold


@pytest.mark.timeout(120)  # linear: seconds, loaded; quadratic: far past this
def test_pathological_brackets_parse_in_linear_time() -> None:
    doc = parse("[" * 200_000)
    assert len(doc.sections[0].blocks[0].text) == 200_000


@pytest.mark.timeout(120)  # linear: seconds, loaded; quadratic: far past this
def test_ten_megabyte_line_parses_in_linear_time() -> None:
    doc = parse("word " * 2_000_000)
    assert sum(len(b.text) for b in doc.sections[0].blocks) == 10_000_000 - 1


def test_runaway_heading_is_cut_short() -> None:
    doc = parse("# " + "a" * 1_000_000 + "\n\nBody.\n")
    assert len(doc.title) <= 256
    assert doc.sections[0].heading_path == (doc.title,)


def fastapi_markdown() -> list[Path]:
    return sorted((FASTAPI_DOCS / "docs" / "en" / "docs").rglob("*.md"))


def test_fastapi_docs_have_titles_and_sections() -> None:
    files = fastapi_markdown()
    assert files, "../shared/corpora/fastapi-docs is missing"
    for path in files:
        doc = parse_document(path.read_bytes(), path.name)
        assert doc.title and doc.sections, path
        assert all(b.text.strip() for s in doc.sections for b in s.blocks), path


def test_blocks_after_multibyte_text_keep_their_own_lines() -> None:
    doc = parse("# Café ☕ {#cafe}\n\nÜber — naïve 日本語.\n\n## Zweite\n\n```\ncode ✓\n```\n")

    assert paths(doc) == [("Café ☕",), ("Café ☕", "Zweite")]
    assert [b.text for s in doc.sections for b in s.blocks] == [
        "Über — naïve 日本語.",
        "```\ncode ✓\n```",
    ]


def test_link_reference_definitions_are_not_text() -> None:
    doc = parse("# Links\n\nSee [the guide][g].\n\n[g]: https://example.com/guide\n")

    assert [b.text for b in doc.sections[0].blocks] == ["See [the guide][g]."]


def test_inline_markup_is_left_as_written_and_never_parsed() -> None:
    # Inline rules are off: a megabyte of emphasis is one paragraph, read in one pass.
    source = "a *b* _c_ " * 100_000

    doc = parse(source)

    assert [b.text for b in doc.sections[0].blocks] == [source.rstrip()]


@pytest.mark.parametrize(
    "source",
    [
        ">" * 50_000 + " x",
        "- " * 100_000 + "x",
        "1. " * 40_000 + "x",
        "> - " * 30_000 + "x",
        "".join(" " * (2 * level) + "- item\n" for level in range(2_000)),
        "".join("\t" * level + "- item\n" for level in range(1_500)),
    ],
    ids=["quotes", "bullets", "numbers", "mixed", "indented", "tabs"],
)
def test_nesting_deeper_than_any_page_is_refused_not_parsed(source: str) -> None:
    # The parser would overflow its stack on these (a SIGSEGV, uncatchable) at 10k+ levels.
    with pytest.raises(UnsupportedDocument, match="nesting"):
        parse(source)


def test_a_list_nested_a_few_hundred_deep_still_parses() -> None:
    source = "".join(" " * (2 * level) + "- item\n" for level in range(400))

    assert [b.text for b in parse(source).sections[0].blocks] == [source.rstrip("\n")]


def test_a_parser_failure_is_an_unsupported_document(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def tree(self, source: str) -> None:
            raise RuntimeError("boom")

    monkeypatch.setattr(markdown, "_PARSER", Broken())

    with pytest.raises(UnsupportedDocument, match="the Markdown parser failed: boom"):
        parse("# Title\n\ntext\n")


def test_a_paragraph_of_only_space_entities_is_no_block() -> None:
    doc = parse_document(b"# Page\n\n&nbsp;\n\nText &nbsp; here.\n\n&emsp; &#160;\n", "page.md")
    assert [b.text for s in doc.sections for b in s.blocks] == ["Text &nbsp; here."]
