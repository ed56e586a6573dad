"""MDX parsing: the Markdown a reader of a Docusaurus page sees, with its headings and title."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.config.sources import DEFAULT_INCLUDE
from ragd.indexing.parsers import SUPPORTED_SUFFIXES, ParsedDocument, parse_document

FIXTURES = Path(__file__).parent / "fixtures" / "mdx"
# Raw MDX a chunk's prose must never carry (code, fenced or inline, may show anything).
RAW_MARKUP = {
    "an import or export line": re.compile(r"^\s*(?:import|export) ", re.M),
    "a JSX tag": re.compile(r"</?[A-Za-z][\w.:-]*[\s/>]|</?>"),
    "an MDX comment": re.compile(r"\{/\*"),
    "an admonition marker": re.compile(r":::"),
    "a heading id": re.compile(r"\{#"),
}
_FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).+?\1")


def parse(source: str, filename: str = "page.mdx") -> ParsedDocument:
    return parse_document(source.encode(), filename)


def texts(doc: ParsedDocument) -> list[str]:
    return [block.text for section in doc.sections for block in section.blocks]


def prose(doc: ParsedDocument) -> str:
    """Every non-code block's text, inline code spans and fences cut out."""
    kept = [block.text for s in doc.sections for block in s.blocks if not block.is_code]
    return _CODE_SPAN.sub("", _FENCED.sub("", "\n\n".join(kept)))


def raw_markup_in(text: str) -> list[str]:
    return [name for name, pattern in RAW_MARKUP.items() if pattern.search(text)]


# Real pages ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", sorted(FIXTURES.glob("*.mdx")), ids=lambda p: p.name)
def test_no_real_page_leaves_mdx_markup_in_its_prose(page: Path) -> None:
    doc = parse_document(page.read_bytes(), page.name)

    assert doc.sections
    assert raw_markup_in(prose(doc)) == []


def test_a_real_page_keeps_its_headings_without_their_ids() -> None:
    page = FIXTURES / "markdown-features-tabs.mdx"
    doc = parse_document(page.read_bytes(), page.name)

    assert doc.title == "Tabs"
    assert [s.heading_path for s in doc.sections] == [
        ("Tabs",),
        ("Tabs", "Displaying a default tab"),
        ("Tabs", "Syncing tab choices"),
        ("Tabs", "Customizing tabs"),
        ("Tabs", "Customizing tabs", "Customizing tab headings"),
        ("Tabs", "Query string"),
    ]


def test_a_real_pages_front_matter_title_names_it() -> None:
    page = FIXTURES / "markdown-features-headings.mdx"
    doc = parse_document(page.read_bytes(), page.name)

    assert doc.title == "Headings"
    assert doc.sections[0].heading_path == ("Markdown headings",)
    assert ("Heading ids", "Explicit ids") in [s.heading_path for s in doc.sections]


def test_a_real_pages_components_leave_their_text() -> None:
    page = FIXTURES / "markdown-features-tabs.mdx"
    text = prose(parse_document(page.read_bytes(), page.name))

    assert "This is an apple 🍎" in text
    assert "Tabs props take precedence over the TabItem props:" in text
    assert "BrowserWindow" not in text


def test_a_real_pages_multi_line_export_is_dropped_and_its_code_example_kept() -> None:
    page = FIXTURES / "markdown-features-react.mdx"
    doc = parse_document(page.read_bytes(), page.name)
    code = [b.text for s in doc.sections for b in s.blocks if b.is_code]

    assert "backgroundColor" not in prose(doc)
    assert "Docusaurus green" in prose(doc)
    assert len(code) == 1 and code[0].startswith("```jsx\nexport const Highlight")


def test_a_real_pages_admonitions_keep_their_labels_and_titles() -> None:
    page = FIXTURES / "markdown-features-admonitions.mdx"
    doc = parse_document(page.read_bytes(), page.name)
    blocks = [b.text for s in doc.sections for b in s.blocks if not b.is_code]

    assert doc.title == "Admonitions"
    assert "Info: Parent\nParent content" in blocks
    assert "Tip: Deep Child\nDeep child content" in blocks
    assert "Note: With css classes\nNote the padding and the italicized text." in blocks
    assert "My custom admonition: My Title\nIt works!" in blocks


# Any mix of MDX's constructs: whatever the order, no marker reaches a chunk's prose.
_PIECES = [
    "---\ntitle: T\n---\n",
    "import A from 'a';\n",
    "export const meta = {\n  a: [1, 2],\n};\n",
    "# Heading {#heading}\n",
    "## Sub `code` {#sub}\n",
    "Plain words here.\n",
    '<Tabs groupId="os">\n',
    '  <TabItem value="a" label="A" attributes={{className: "x"}}>\n',
    "  </TabItem>\n",
    "</Tabs>\n",
    "<Highlight color={`#fff`}>green</Highlight> words\n",
    "<TOCInline toc={toc} />\n",
    "{/* a comment */}\n",
    ":::tip[Title]{#id}\n",
    ":::note\n",
    ":::\n",
    "::::danger Outer\n",
    "::::\n",
    "<details>\n<summary>More</summary>\n",
    "</details>\n",
    "{'literal'} and {props.value}\n",
    "<!-- an html comment -->\n",
    "- a list item <b>bold</b>\n",
    "```jsx\nimport X from 'x';\n<Tabs>{/* c */}</Tabs>\n```\n",
    "\n",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_no_mix_of_mdx_constructs_leaves_markup_in_prose(pieces: list[str]) -> None:
    doc = parse("".join(pieces))

    assert raw_markup_in(prose(doc)) == []


# One rule each -----------------------------------------------------------------------


def test_mdx_is_supported_and_included_by_default() -> None:
    assert ".mdx" in SUPPORTED_SUFFIXES
    assert "**/*.mdx" in DEFAULT_INCLUDE


def test_front_matter_title_wins_over_the_first_h1() -> None:
    doc = parse("---\nid: x\ntitle: 'From front matter'\n---\n\n# The h1\n\nText.\n")

    assert doc.title == "From front matter"
    assert texts(doc) == ["Text."]


def test_without_a_front_matter_title_the_first_h1_then_the_stem_names_the_page() -> None:
    assert parse("---\nid: x\n---\n\n# The h1\n\nText.\n").title == "The h1"
    assert parse("Text only.\n", "docs/getting-started.mdx").title == "getting-started"


def test_import_and_export_lines_are_dropped() -> None:
    doc = parse(
        "import Tabs from '@theme/Tabs';\nimport {A, B} from './x';\n"
        "export const meta = {a: 1};\n\n# Page\n\nText.\n"
    )

    assert texts(doc) == ["Text."]


def test_a_multi_line_export_block_is_dropped_whole() -> None:
    doc = parse(
        "# Page\n\nexport const toc = [\n  {value: 'A', id: 'a'},\n\n  {value: 'B', id: 'b'},\n];\n"
        "\nAfter.\n"
    )

    assert texts(doc) == ["After."]


def test_import_lines_inside_a_fence_stay_code() -> None:
    doc = parse("# Page\n\n```js\nimport x from 'y';\nexport default x;\n```\n")

    assert texts(doc) == ["```js\nimport x from 'y';\nexport default x;\n```"]
    assert doc.sections[0].blocks[0].is_code


def test_a_component_reduces_to_its_text_children() -> None:
    doc = parse('<Tabs><TabItem value="a" label="Py">Install it with pip.</TabItem></Tabs>\n')

    assert texts(doc) == ["Install it with pip."]


def test_self_closing_components_are_dropped() -> None:
    doc = parse("Before <TOCInline toc={toc} minHeadingLevel={2} /> after.\n\n<br />\n")

    assert texts(doc) == ["Before  after."]


def test_attributes_never_appear_in_text() -> None:
    doc = parse(
        '<Admonition type="tip" icon="💡" title={"Did you know"} style={{color: "red"}}\n'
        "  {...props}>\n  Use plugins.\n</Admonition>\n"
    )

    assert texts(doc) == ["Use plugins."]


def test_indented_component_children_are_text_and_their_fences_code() -> None:
    doc = parse(
        '<Tabs>\n  <TabItem value="py">\n    Run this:\n\n    ```py\n    x = 1\n      y = 2\n'
        "    ```\n  </TabItem>\n</Tabs>\n"
    )
    blocks = [b for s in doc.sections for b in s.blocks]

    assert [(b.text, b.is_code) for b in blocks] == [
        ("Run this:", False),
        ("```py\nx = 1\n  y = 2\n```", True),
    ]


def test_mdx_comments_are_removed() -> None:
    doc = parse("{/* prettier-ignore */}\nKept {/* a\nmulti-line note */} text.\n")

    assert texts(doc) == ["Kept  text."]


def test_heading_ids_are_removed_from_heading_text() -> None:
    doc = parse("# Top {#top}\n\na\n\n## Install the `cli` {#install-cli}\n\nb\n")

    assert [s.heading_path for s in doc.sections] == [("Top",), ("Top", "Install the `cli`")]
    assert doc.title == "Top"


@pytest.mark.parametrize(
    ("opening", "label"),
    [
        (":::tip", "Tip:"),
        (":::tip Pro tip", "Tip: Pro tip"),
        (":::note[Your title]", "Note: Your title"),
        (":::note[With classes]{.padding--lg #x}", "Note: With classes"),
        (":::my-custom-admonition", "My custom admonition:"),
    ],
)
def test_an_admonition_keeps_its_text_with_its_label_first(opening: str, label: str) -> None:
    doc = parse(f"{opening}\n\nThe body.\n\n:::\n\nAfter.\n")

    assert texts(doc) == [f"{label}\nThe body.", "After."]


def test_nested_admonitions_keep_every_label_and_no_marker() -> None:
    doc = parse(":::::info Parent\n\nOuter.\n\n::::danger Child\n\nInner.\n\n::::\n\n:::::\n")

    assert texts(doc) == ["Info: Parent\nOuter.", "Danger: Child\nInner."]


def test_a_string_expression_keeps_its_text_and_other_expressions_render_nothing() -> None:
    doc = parse("Press {'<'}Enter{'>'} or {props.key}{` `}now.\n")

    assert texts(doc) == ["Press <Enter> or  now."]


def test_code_spans_and_autolinks_keep_what_they_show() -> None:
    doc = parse("Use `<Tabs lazy />` or see <https://mdxjs.com/docs>.\n")

    assert texts(doc) == ["Use `<Tabs lazy />` or see https://mdxjs.com/docs."]


def test_a_less_than_sign_in_prose_is_text() -> None:
    assert texts(parse("If a < b and 2<3, stop.\n")) == ["If a < b and 2<3, stop."]


def test_an_mdx_code_block_fence_is_read_as_mdx() -> None:
    doc = parse(
        "# Page\n\n```mdx-code-block\nimport Tabs from '@theme/Tabs';\n```\n\n"
        '````mdx-code-block\n<Tabs>\n  <TabItem value="a">\n\n  ```sh\n  npm i\n  ```\n\n'
        "  </TabItem>\n</Tabs>\n````\n\nAfter.\n"
    )

    assert [(b.text, b.is_code) for b in doc.sections[0].blocks] == [
        ("```sh\nnpm i\n```", True),
        ("After.", False),
    ]


def test_malformed_mdx_falls_back_to_markdown_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragd.parsers"):
        doc = parse("# Page\n\nAn {unclosed expression.\n", "docs/broken.mdx")

    assert texts(doc) == ["An {unclosed expression."]
    assert "docs/broken.mdx" in caplog.text and "never closes" in caplog.text


# Hostile input: every scan is linear, so these take milliseconds; quadratic would not end.


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "hostile",
    [
        "<" * 100_000,
        "{" * 100_000,
        "}" * 100_000,
        "<a " * 50_000,
        "<a b={" * 20_000 + "}" * 20_000 + "!",
        "<a b='x' " * 30_000,
        "`" + "``" * 50_000,
        "`a` " * 50_000,
        "x\n" + "<Tabs>\n" * 50_000,
        "{'" * 50_000,
        ":::tip\n" * 50_000,
        "import {\n" * 50_000,
    ],
    ids=lambda s: repr(s[:12]),
)
def test_hostile_input_is_parsed_in_linear_time(hostile: str) -> None:
    doc = parse(hostile)

    assert isinstance(doc, ParsedDocument)
