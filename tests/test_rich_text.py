"""Structured rich text as Markdown: Strapi blocks, Sanity Portable Text, Contentful Rich Text.

The node shapes are the CMSes' own: Strapi's blocks validator and blocks-react-renderer
(strapi/strapi blocks-validator.ts, strapi/blocks-react-renderer), Sanity's Portable Text
(portabletext/types), Contentful's Rich Text (contentful/rich-text rich-text-types). The
contract under test: the text comes out as Markdown with its headings, lists, quotes, code
and links, never as JSON; a value of the wrong shape is skipped, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it_pyrs import MarkdownIt, Node

from ragd.sources.json_body import parse_json
from ragd.sources.rich_text import is_rich_text, to_markdown

Outline = list[tuple[str, "Outline"]]


def outline(markdown: str) -> Outline:
    """The lists of `markdown` as CommonMark (markdown-it.rs, the parser ragd indexes
    Markdown with) reads them: each item's text and the lists nested in it."""

    def items(node: Node) -> Outline:
        found: Outline = []
        for child in node.children:
            if child.name in ("bullet_list", "ordered_list"):
                for entry in child.children:
                    # A tight list's text sits in the item; a loose list's in paragraphs.
                    parts = [p for p in entry.children if p.name == "paragraph"] + [entry]
                    words = [
                        t.meta["content"] for p in parts for t in p.children if t.name == "text"
                    ]
                    found.append((" ".join(words), items(entry)))
        return found

    return items(MarkdownIt("commonmark").tree(markdown))


# --- Strapi blocks --------------------------------------------------------------------------


def s_text(text: str, **marks: bool) -> dict[str, Any]:
    return {"type": "text", "text": text, **marks}


def s_par(*children: dict[str, Any]) -> dict[str, Any]:
    return {"type": "paragraph", "children": list(children)}


def s_item(text: str) -> dict[str, Any]:
    return {"type": "list-item", "children": [s_text(text)]}


def s_list(fmt: str, *children: dict[str, Any]) -> dict[str, Any]:
    return {"type": "list", "format": fmt, "children": list(children)}


# A v5 entry.publish's blocks field, as the Strapi research notes record one.
DOCS_LINK = {
    "type": "link",
    "url": "https://example.com/docs",
    "children": [s_text("docs", bold=True)],
}
STRAPI_ARTICLE: list[dict[str, Any]] = [
    {"type": "heading", "level": 2, "children": [s_text("Install")]},
    s_par(
        s_text("Run "),
        s_text("pip install ragd", code=True),
        s_text(" then read the "),
        DOCS_LINK,
        s_text("."),
    ),
    s_list(
        "unordered",
        s_item("fast"),
        {"type": "list-item", "children": [s_text("local", italic=True)]},
    ),
    {"type": "quote", "children": [s_text("Index what is published.")]},
    {"type": "code", "language": "bash", "children": [s_text("ragd serve --port 8080")]},
]


def test_a_strapi_article_becomes_markdown() -> None:
    assert to_markdown(STRAPI_ARTICLE) == (
        "## Install\n\n"
        "Run `pip install ragd` then read the [docs](https://example.com/docs).\n\n"
        "- fast\n- local\n\n"
        "> Index what is published.\n\n"
        "```bash\nragd serve --port 8080\n```\n"
    )


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5, 6])
def test_a_strapi_heading_keeps_its_level(level: int) -> None:
    heading = {"type": "heading", "level": level, "children": [s_text("Title")]}

    assert to_markdown([heading]) == "#" * level + " Title\n"


@pytest.mark.parametrize("level", [0, 7, "3", None])
def test_a_strapi_heading_with_an_impossible_level_is_still_a_heading(level: object) -> None:
    heading = {"type": "heading", "level": level, "children": [s_text("Title")]}

    assert to_markdown([heading]) == "## Title\n"


def test_strapi_paragraphs_are_separated_by_a_blank_line() -> None:
    assert to_markdown([s_par(s_text("One.")), s_par(s_text("Two."))]) == "One.\n\nTwo.\n"


def test_an_ordered_strapi_list_is_numbered() -> None:
    blocks = [s_list("ordered", s_item("first"), s_item("second"), s_item("third"))]

    assert to_markdown(blocks) == "1. first\n2. second\n3. third\n"


def test_a_nested_strapi_list_is_indented_under_its_parent_and_numbering_continues() -> None:
    blocks = [
        s_list(
            "ordered",
            s_item("a"),
            s_list("unordered", s_item("b"), s_list("unordered", s_item("c"))),
            s_item("d"),
        )
    ]

    out = to_markdown(blocks)

    assert out.splitlines() == ["1. a", "   - b", "     - c", "2. d"]
    assert outline(out) == [("a", [("b", [("c", [])])]), ("d", [])]


def test_a_strapi_link_without_a_url_keeps_its_text() -> None:
    link = {"type": "link", "url": "", "children": [s_text("plain")]}

    assert to_markdown([s_par(s_text("a "), link)]) == "a plain\n"


def test_strapi_bold_italic_underline_and_strikethrough_text_is_kept_as_text() -> None:
    words = {"bold ": "bold", "italic ": "italic", "under ": "underline", "gone": "strikethrough"}
    marked = [s_text(word, **{mark: True}) for word, mark in words.items()]

    assert to_markdown([s_par(*marked)]) == "bold italic under gone\n"


def test_a_v4_strapi_code_block_names_its_language_in_syntax() -> None:
    code = {"type": "code", "syntax": "python", "children": [s_text("print(1)")]}

    assert to_markdown([code]) == "```python\nprint(1)\n```\n"


def test_code_that_contains_a_fence_gets_a_longer_fence() -> None:
    code = {"type": "code", "children": [s_text("```\nnot the end\n```")]}

    assert to_markdown([code]) == "````\n```\nnot the end\n```\n````\n"


def test_a_multi_line_strapi_quote_quotes_every_line() -> None:
    quote = {"type": "quote", "children": [s_text("one\n\ntwo")]}

    assert to_markdown([quote]) == "> one\n>\n> two\n"


def test_a_strapi_image_contributes_its_alternative_text_or_caption() -> None:
    def image(**meta: str) -> dict[str, Any]:
        picture = {"url": "/uploads/a.png", **meta}
        return {"type": "image", "image": picture, "children": [s_text("")]}

    assert to_markdown([image(alternativeText="A diagram")]) == "A diagram\n"
    assert to_markdown([image(caption="Figure 1")]) == "Figure 1\n"
    assert to_markdown([image(), s_par(s_text("after"))]) == "after\n"


def test_an_unknown_strapi_node_contributes_its_text() -> None:
    widget = {"type": "callout", "children": [{"type": "mention", "children": [s_text("Ada")]}]}

    assert to_markdown([widget]) == "Ada\n"


# --- Sanity Portable Text ---------------------------------------------------------------------


def block(
    *spans: dict[str, Any] | str,
    style: str = "normal",
    mark_defs: list[dict[str, Any]] | None = None,
    **extra: object,
) -> dict[str, Any]:
    children = [span(s) if isinstance(s, str) else s for s in spans]
    return {
        "_type": "block",
        "_key": "b",
        "style": style,
        "markDefs": mark_defs or [],
        "children": children,
        **extra,
    }


def span(text: str, *marks: str) -> dict[str, Any]:
    return {"_type": "span", "_key": "k", "text": text, "marks": list(marks)}


def item(text: str, kind: str = "bullet", level: int = 1) -> dict[str, Any]:
    return block(text, listItem=kind, level=level)


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5, 6])
def test_a_portable_text_heading_style_becomes_a_heading(level: int) -> None:
    assert to_markdown([block("Title", style=f"h{level}")]) == "#" * level + " Title\n"


@pytest.mark.parametrize("style", ["normal", "h7", "lead", "h", 3])
def test_any_other_portable_text_style_is_a_paragraph(style: object) -> None:
    assert to_markdown([{**block("Text"), "style": style}, block("More")]) == "Text\n\nMore\n"


def test_a_portable_text_blockquote_is_quoted() -> None:
    assert to_markdown([block("Said.", style="blockquote")]) == "> Said.\n"


def test_portable_text_spans_of_a_block_are_joined() -> None:
    assert to_markdown([block("Hello, ", "world", ".")]) == "Hello, world.\n"


def test_consecutive_portable_text_list_items_form_one_list() -> None:
    blocks = [block("Intro"), item("a"), item("b"), block("Outro")]

    assert to_markdown(blocks) == "Intro\n\n- a\n- b\n\nOutro\n"


def test_numbered_portable_text_items_are_numbered_per_level() -> None:
    blocks = [
        item("a", "number"),
        item("a.1", "number", 2),
        item("a.2", "number", 2),
        item("b", "number"),
        item("b.1", "number", 2),
    ]

    out = to_markdown(blocks)

    assert out.splitlines() == ["1. a", "   1. a.1", "   2. a.2", "2. b", "   1. b.1"]
    assert outline(out) == [("a", [("a.1", []), ("a.2", [])]), ("b", [("b.1", [])])]


def test_a_portable_text_item_that_skips_a_level_nests_under_the_item_before_it() -> None:
    out = to_markdown([item("a"), item("deep", level=3), item("b")])

    assert outline(out) == [("a", [("deep", [])]), ("b", [])]


def test_a_portable_text_list_that_starts_below_level_one_is_still_a_list() -> None:
    out = to_markdown([block("Intro"), item("x", level=3), item("y", level=3)])

    assert outline(out) == [("x", []), ("y", [])]


def test_portable_text_numbering_restarts_after_a_paragraph() -> None:
    blocks = [item("a", "number"), item("b", "number"), block("Between"), item("c", "number")]

    assert to_markdown(blocks) == "1. a\n2. b\n\nBetween\n\n1. c\n"


def test_a_portable_text_link_mark_becomes_a_markdown_link() -> None:
    link = {"_type": "link", "_key": "l1", "href": "https://www.sanity.io/docs"}
    sanity = block("Read ", span("the docs", "l1"), ".", mark_defs=[link])

    assert to_markdown([sanity]) == "Read [the docs](https://www.sanity.io/docs).\n"


def test_a_portable_text_mark_without_a_link_definition_is_plain_text() -> None:
    internal = {"_type": "internalLink", "_key": "x1", "reference": {"_ref": "doc-2"}}

    assert to_markdown([block(span("see", "x1", "missing"), mark_defs=[internal])]) == "see\n"


def test_portable_text_code_marks_are_backticked_and_strong_and_em_are_kept_as_text() -> None:
    sanity = block(span("Run ", "strong"), span("ragd serve", "code"), span(" now", "em"))

    assert to_markdown([sanity]) == "Run `ragd serve` now\n"


def test_a_portable_text_code_block_object_is_fenced() -> None:
    code = {"_type": "code", "_key": "c", "language": "sh", "code": "ragd index ."}

    assert to_markdown([code]) == "```sh\nragd index .\n```\n"


def test_a_portable_text_image_contributes_its_alt_text_and_other_objects_nothing() -> None:
    image = {"_type": "image", "_key": "i", "alt": "A chart", "asset": {"_ref": "image-abc"}}
    embed = {"_type": "youtube", "_key": "y", "url": "https://youtu.be/x"}

    assert to_markdown([block("Before"), image, embed, block("After")]) == (
        "Before\n\nA chart\n\nAfter\n"
    )


# --- Contentful Rich Text ---------------------------------------------------------------------


def c_text(value: str, *marks: str) -> dict[str, Any]:
    return {"nodeType": "text", "value": value, "marks": [{"type": m} for m in marks], "data": {}}


def node(kind: str, *content: dict[str, Any], **data: object) -> dict[str, Any]:
    return {"nodeType": kind, "data": data, "content": list(content)}


def document(*content: dict[str, Any]) -> dict[str, Any]:
    return node("document", *content)


def c_par(*content: dict[str, Any]) -> dict[str, Any]:
    return node("paragraph", *content)


def c_list(kind: str, *items: list[dict[str, Any]]) -> dict[str, Any]:
    return node(kind, *(node("list-item", *content) for content in items))


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5, 6])
def test_a_contentful_heading_keeps_its_level(level: int) -> None:
    heading = node(f"heading-{level}", c_text("Title"))

    assert to_markdown(document(heading)) == "#" * level + " Title\n"


def test_contentful_text_marks_keep_their_text_and_code_is_backticked() -> None:
    paragraph = c_par(
        c_text("Bold ", "bold"), c_text("italic ", "italic"), c_text("ragd", "code"),
        c_text(" under", "underline", "bold"),
    )  # fmt: skip

    assert to_markdown(document(paragraph)) == "Bold italic `ragd` under\n"


def test_a_contentful_hyperlink_becomes_a_markdown_link() -> None:
    link = node("hyperlink", c_text("docs"), uri="https://www.contentful.com/developers/")

    assert to_markdown(document(c_par(c_text("See the "), link, c_text(".")))) == (
        "See the [docs](https://www.contentful.com/developers/).\n"
    )


def test_contentful_entry_and_asset_links_keep_their_text() -> None:
    target = {"sys": {"id": "5KsDBWseXY6QegucYAoacS", "type": "Link", "linkType": "Entry"}}
    paragraph = c_par(
        node("entry-hyperlink", c_text("an entry"), target=target),
        c_text(" and "),
        node("asset-hyperlink", c_text("a file"), target=target),
    )

    assert to_markdown(document(paragraph)) == "an entry and a file\n"


def test_contentful_lists_are_markdown_lists() -> None:
    rich = document(
        c_list("unordered-list", [c_par(c_text("fast"))], [c_par(c_text("local"))]),
        c_list("ordered-list", [c_par(c_text("install"))], [c_par(c_text("serve"))]),
    )

    assert to_markdown(rich) == "- fast\n- local\n\n1. install\n2. serve\n"


def test_a_nested_contentful_list_is_a_nested_markdown_list() -> None:
    inner = c_list("unordered-list", [c_par(c_text("b"))])
    rich = document(c_list("unordered-list", [c_par(c_text("a")), inner], [c_par(c_text("c"))]))

    assert outline(to_markdown(rich)) == [("a", [("b", [])]), ("c", [])]


def test_a_three_level_contentful_list_stays_a_list_at_every_level() -> None:
    # CommonMark: a line indented 4+ columns past its item's text, after a paragraph, is
    # that paragraph's continuation, not a list: each level is indented by its parent's
    # marker width, once.
    level3 = c_list("ordered-list", [c_par(c_text("c"))])
    level2 = c_list("unordered-list", [c_par(c_text("b")), level3])
    rich = document(c_list("unordered-list", [c_par(c_text("a")), level2]))

    out = to_markdown(rich)

    assert out.splitlines() == ["- a", "  - b", "    1. c"]
    assert outline(out) == [("a", [("b", [("c", [])])])]


def test_a_list_nested_in_an_ordered_contentful_item_aligns_with_its_text() -> None:
    inner = c_list("unordered-list", [c_par(c_text("b"))])
    rich = document(c_list("ordered-list", [c_par(c_text("a")), inner], [c_par(c_text("c"))]))

    assert outline(to_markdown(rich)) == [("a", [("b", [])]), ("c", [])]


def test_a_contentful_list_item_with_two_paragraphs_keeps_both_in_the_item() -> None:
    rich = document(c_list("unordered-list", [c_par(c_text("one")), c_par(c_text("two"))]))

    out = to_markdown(rich)

    assert out == "- one\n  two\n"
    assert outline(out) == [("one two", [])]


def test_a_contentful_blockquote_and_rule() -> None:
    rich = document(node("blockquote", c_par(c_text("Quoted."))), node("hr"), c_par(c_text("End")))

    assert to_markdown(rich) == "> Quoted.\n\n---\n\nEnd\n"


def test_embedded_contentful_entries_and_assets_contribute_no_json() -> None:
    target = {"sys": {"id": "2x7u0ObF6y", "type": "Link", "linkType": "Entry"}}
    rich = document(
        c_par(c_text("Before")),
        node("embedded-entry-block", target=target),
        node("embedded-asset-block", target=target),
        c_par(c_text("inline "), node("embedded-entry-inline", target=target), c_text("here")),
    )

    assert to_markdown(rich) == "Before\n\ninline here\n"


def test_contentful_table_cells_contribute_their_text() -> None:
    row = node(
        "table-row",
        node("table-header-cell", c_par(c_text("Name"))),
        node("table-cell", c_par(c_text("ragd"))),
    )

    out = to_markdown(document(node("table", row)))

    assert "Name" in out and "ragd" in out


# --- What is rich text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        STRAPI_ARTICLE,
        [block("Portable")],
        [{"_type": "image", "alt": "only an image"}],
        document(c_par(c_text("x"))),
    ],
    ids=["strapi", "portable-text", "portable-object-first", "contentful"],
)
def test_each_format_is_recognised_as_rich_text(value: object) -> None:
    assert is_rich_text(value)


@pytest.mark.parametrize(
    "value",
    ["# Markdown", "", [], ["a", "b"], [1, 2], {"title": "x"}, c_par(c_text("x")), None, 3],
    ids=lambda value: type(value).__name__,
)
def test_plain_values_are_not_rich_text_and_make_no_markdown(value: object) -> None:
    assert not is_rich_text(value)
    assert to_markdown(value).strip() == ""


def test_a_mixed_document_never_comes_out_as_json() -> None:
    link = {"_type": "link", "_key": "l1", "href": "https://example.com"}
    for value in (
        STRAPI_ARTICLE,
        [block("Hi", span("there", "l1"), mark_defs=[link]), item("x"), {"_type": "image"}],
        document(c_par(c_text("Hi")), node("embedded-entry-block", target={"sys": {"id": "e"}})),
    ):
        out = to_markdown(value)

        assert out.strip()
        for token in ('{"', "':", '":', "nodeType", "_type", "children", "markDefs", "[{"):
            assert token not in out, (token, out)


# --- Hostile input ----------------------------------------------------------------------------

WRONG_SHAPES: list[object] = [
    [{"type": "paragraph", "children": "not a list"}],
    [{"type": "paragraph", "children": [None, 3, "x", [], {"text": 5}]}],
    [{"type": "heading", "level": [], "children": {"a": 1}}],
    [{"type": "list", "format": 3, "children": [None, {"type": "list"}, {"children": 7}]}],
    [{"type": "link", "url": 5, "children": [s_text("t")]}],
    [{"type": "image", "image": "nope"}, {"type": "image", "image": {"alternativeText": 4}}],
    [{"type": "code", "language": {"x": 1}, "children": [s_text("c", code=True)]}],
    [{"type": 1}, {"type": None, "children": [{"type": "text", "text": ["x"]}]}],
    [{"_type": "block", "children": "x", "markDefs": "y", "style": None}],
    [{"_type": "block", "children": [{"_type": "span", "text": 1, "marks": "strong"}]}],
    [{"_type": "block", "listItem": 5, "level": "2", "children": []}],
    [{"_type": "block", "listItem": "bullet", "level": -10**30, "children": []}],
    [{"_type": "block", "listItem": "number", "level": 10**30, "children": []}],
    [{"_type": "block", "markDefs": [{"_type": "link", "_key": {"k": 1}, "href": "h"}],
      "children": [span("x", "k")]}],
    [{"_type": "block", "children": [{"_type": "span", "text": "x", "marks": [["l"], {"a": 1}]}]}],
    [{"_type": "code", "code": None}, {"_type": ["list"]}, {"_type": "image", "alt": 3}],
    {"nodeType": "document", "content": "nope"},
    {"nodeType": "document", "content": [None, 1, {"nodeType": 5}, {"nodeType": "heading-"}]},
    {"nodeType": "document", "content": [{"nodeType": "heading-9", "content": [c_text("h")]}]},
    {"nodeType": "document", "content": [c_par({"nodeType": "text", "value": 3, "marks": 5})]},
    {"nodeType": "document", "content": [c_par({"nodeType": "text", "value": "v",
                                                "marks": [{"type": ["code"]}, {"type": {}}]})]},
    {"nodeType": "document", "content": [c_par({"nodeType": "hyperlink", "data": [],
                                                "content": [c_text("l")]})]},
    {"nodeType": "document", "content": [{"nodeType": "ordered-list", "content": [None, {}]}]},
]  # fmt: skip


@pytest.mark.parametrize("value", WRONG_SHAPES, ids=[str(i) for i in range(len(WRONG_SHAPES))])
def test_a_value_of_the_wrong_shape_is_skipped_not_an_error(value: object) -> None:
    out = to_markdown(value)

    assert isinstance(out, str)
    assert "{" not in out and "None" not in out


def test_an_unhashable_portable_text_mark_is_ignored() -> None:
    link = {"_type": "link", "_key": "l1", "href": "https://example.com"}
    marks = span("text", "l1")
    marks["marks"] = [{"a": 1}, ["l1"], "l1"]

    assert to_markdown([block(marks, mark_defs=[link])]) == "[text](https://example.com)\n"


def test_an_unhashable_contentful_mark_type_is_ignored() -> None:
    text = c_text("value")
    text["marks"] = [{"type": ["code"]}, {"type": "code"}]

    assert to_markdown(document(c_par(text))) == "`value`\n"


def strapi_links(depth: int) -> list[dict[str, Any]]:
    inline: dict[str, Any] = s_text("leaf")
    for _ in range(depth):
        inline = {"type": "link", "url": "https://example.com", "children": [inline]}
    return [s_par(inline)]


def strapi_lists(depth: int) -> list[dict[str, Any]]:
    inner: dict[str, Any] = s_list("unordered", s_item("leaf"))
    for _ in range(depth):
        inner = s_list("unordered", s_item("x"), inner)
    return [inner]


def portable_levels(depth: int) -> list[dict[str, Any]]:
    return [item(f"level {n}", "number", n) for n in range(1, depth + 1)] + [
        item("leaf", level=depth)
    ]


def contentful_nesting(depth: int, kind: str) -> dict[str, Any]:
    inner: dict[str, Any] = c_par(c_text("leaf"))
    for _ in range(depth):
        if kind == "list":
            inner = c_list("unordered-list", [inner])
        elif kind == "quote":
            inner = node("blockquote", inner)
        else:
            inner = c_par(node("hyperlink", *inner["content"], uri="https://example.com"))
    return document(inner)


NESTED: dict[str, Callable[[int], object]] = {
    "strapi-links": strapi_links,
    "strapi-lists": strapi_lists,
    "portable-levels": portable_levels,
    "contentful-lists": lambda n: contentful_nesting(n, "list"),
    "contentful-quotes": lambda n: contentful_nesting(n, "quote"),
    "contentful-links": lambda n: contentful_nesting(n, "link"),
}


def deepest_json(build: Callable[[int], object]) -> object:
    """The deepest such tree a webhook body can carry (ragd's JSON reader refuses deeper)."""
    low, high = 1, 2000
    while low < high:
        middle = (low + high + 1) // 2
        try:
            parse_json(json.dumps(build(middle)).encode())
            low = middle
        except Exception:
            high = middle - 1
    return parse_json(json.dumps(build(low)).encode())


@pytest.mark.parametrize("kind", NESTED)
def test_nesting_a_real_document_could_have_keeps_the_innermost_text(kind: str) -> None:
    assert "leaf" in to_markdown(NESTED[kind](20))


@pytest.mark.parametrize("kind", NESTED)
def test_the_deepest_tree_a_webhook_body_can_carry_is_not_an_error(kind: str) -> None:
    assert isinstance(to_markdown(deepest_json(NESTED[kind])), str)


@pytest.mark.parametrize("kind", NESTED)
def test_a_tree_deeper_than_json_allows_is_cut_not_a_crash(kind: str) -> None:
    out = to_markdown(NESTED[kind](5000))

    assert isinstance(out, str)
    assert len(out) < 50_000_000


def test_a_huge_list_is_rendered_item_by_item() -> None:
    count = 50_000
    strapi = [s_list("ordered", *(s_item(f"item {n}") for n in range(count)))]
    portable = [item(f"item {n}") for n in range(count)]
    contentful = document(c_list("unordered-list", *([c_par(c_text("x"))] for _ in range(count))))

    assert to_markdown(strapi).splitlines()[-1] == f"{count}. item {count - 1}"
    assert len(to_markdown(portable).splitlines()) == count
    assert len(to_markdown(contentful).splitlines()) == count


# The keys and names the three formats use, so that random trees reach every branch.
KEYS = st.sampled_from(
    ["type", "_type", "nodeType", "children", "content", "text", "value", "marks", "markDefs",
     "_key", "href", "url", "uri", "data", "level", "listItem", "style", "format", "code",
     "language", "image", "alt", "alternativeText"]
)  # fmt: skip
NAMES = st.sampled_from(
    ["paragraph", "heading", "list", "list-item", "link", "quote", "code", "image", "block",
     "span", "document", "text", "hyperlink", "heading-2", "ordered-list", "unordered-list",
     "blockquote", "hr", "bullet", "number", "h1", "strong", "l1"]
)  # fmt: skip
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | NAMES | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(KEYS, JSONISH, max_size=6), max_size=5) | JSONISH)
def test_no_json_value_makes_to_markdown_raise(value: object) -> None:
    assert isinstance(to_markdown(value), str)
    assert isinstance(is_rich_text(value), bool)


def test_a_code_block_of_a_million_backticks_gets_a_longer_fence() -> None:
    # A fence grown a backtick at a time until it no longer occurs took hours here.
    code = "`" * 1_000_000
    blocks = [{"type": "code", "children": [{"type": "text", "text": code}]}]

    assert to_markdown(blocks).startswith("`" * 1_000_001 + "\n")


def test_a_code_language_cannot_break_out_of_its_fence_line() -> None:
    blocks = [
        {"type": "code", "language": "py\n# injected", "children": [{"type": "text", "text": "x"}]}
    ]

    assert to_markdown(blocks).splitlines()[0] == "```py # injected"
