"""Doc generators' Markdown: their markers never reach a chunk, the text inside them does."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.indexing.chunking import ChunkSettings, chunk_document
from ragd.indexing.parsers import Block, ParsedDocument, parse_document
from tests.conftest import FASTAPI_DOCS

# Markers as the generators write them. `{*` is matched with its space: `{**kwargs}` is code.
GENERATOR_MARKERS = re.compile(
    r"\{\* |///|!!!|\?\?\?|:::|--8<--|\{\{<|\{\{%|\{!|\{\s*:?\s*[#.][\w-]+(?:\s+[^}]*)?\}"
)


def parse(source: str) -> ParsedDocument:
    return parse_document(source.encode(), "guide.md")


def blocks(source: str) -> list[Block]:
    return [block for section in parse(source).sections for block in section.blocks]


def texts(source: str) -> list[str]:
    return [block.text for block in blocks(source)]


def test_no_chunk_of_any_fastapi_page_carries_a_generator_marker() -> None:
    files = sorted(FASTAPI_DOCS.rglob("*.md"))
    assert len(files) > 100, "../shared/corpora/fastapi-docs is missing"
    marked = 0
    for path in files:
        raw = path.read_text()
        marked += len(re.findall(r"(?m)^\s*(?:///|\{\* )", raw))
        doc = parse_document(path.read_bytes(), path.name)
        for chunk in chunk_document(doc, ChunkSettings()):
            found = GENERATOR_MARKERS.search(chunk.embed_text)
            assert found is None, (path, found.group(), chunk.embed_text)
    assert marked > 1_000  # the corpus does use them: 884 `///` lines, 440 code includes


# Any mix of the generators' constructs, closed or not, and words: no marker reaches a chunk.
_PIECES = [
    "# Title { #title }\n",
    "## Section {: .wide }\n",
    "/// tip\n\nTip text.\n\n///\n",
    "/// note | Technical Details\n\nStarlette does it.\n///\n",
    "/// details | Using `pip` instead\n    type: tip\n    open: true\n\npip install x\n///\n",
    "//// tab | Python 3.10+\n\n/// tip\n\nPrefer it.\n\n///\n\n////\n",
    "/// warning\n",
    "///\n",
    '!!! note "Read this"\n    The body is indented.\n\n    So is this.\n',
    "??? question\n    Body.\n",
    "???+ example inline end\n    Body.\n",
    '!!! warning\n    Outer text.\n\n    !!! tip "Inner"\n        Inner text.\n',
    ":::tip\n\nInside.\n\n:::\n",
    ":::danger[Take care]\nInside.\n:::\n",
    "::: warning Slow\nInside.\n:::\n",
    "::::note Outer\n\n:::tip\nInner.\n:::\n\nStill outer.\n\n::::\n",
    ":::info\n",
    ":::\n",
    "::: fastapi.APIRouter\n    options:\n        members:\n            - get\n",
    '--8<-- "docs/snippets/install.md"\n',
    "--8<--\nabbreviations.md\nlinks.md\n--8<--\n",
    "{* ../../docs_src/body/tutorial001_py310.py hl[16] *}\n",
    "{!> ../../docs_src/app.py !}\n",
    '{{< callout type="info" >}}\nSet the port first.\n{{< /callout >}}\n',
    'See {{% ref "install.md" %}} and {{< kbd "Ctrl" >}}+C.\n',
    "![diagram](d.png){ width=300 } shows it. [Go](x){: .md-button }\n",
    "```py\nx = 1\n```\n",
    '```{ .dockerfile .annotate hl_lines="2" }\nFROM python\n```\n',
    "- a list item\n",
    "> a quote\n",
    "\n",
]
_WORDS = st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), _WORDS.map(lambda w: f"{w}\n"))))
def test_no_mix_of_generator_constructs_leaves_a_marker_in_a_chunk(pieces: list[str]) -> None:
    chunks = chunk_document(parse("".join(pieces)), ChunkSettings())

    assert [c.embed_text for c in chunks if GENERATOR_MARKERS.search(c.embed_text)] == []


def test_fastapi_admonition_keeps_its_label_and_text() -> None:
    path = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial" / "body.md"
    doc = parse_document(path.read_bytes(), path.name)
    found = [b.text for s in doc.sections for b in s.blocks if b.text.startswith("Note\n")]
    assert found[0] == (
        "Note\nTo send data, you should use one of: `POST` (the most common), "
        "`PUT`, `DELETE` or `PATCH`."
    )


def test_fastapi_code_include_is_dropped_from_its_paragraph() -> None:
    path = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial" / "body.md"
    source = path.read_text()
    assert "{* ../../docs_src/body/tutorial001_py310.py hl[2] *}" in source
    doc = parse_document(path.read_bytes(), path.name)
    assert not any("docs_src" in b.text for s in doc.sections for b in s.blocks)


def test_pymdown_block_becomes_its_type_as_label_then_its_text() -> None:
    assert texts("Before.\n\n/// warning\n\nMind the gap.\n\n///\n\nAfter.\n") == [
        "Before.",
        "Warning\nMind the gap.",
        "After.",
    ]


def test_pymdown_block_title_is_its_label() -> None:
    assert texts("/// note | Technical Details\n\nStarlette does it.\n///\n") == [
        "Technical Details\nStarlette does it."
    ]


def test_pymdown_details_and_tabs_keep_their_titles() -> None:
    source = (
        "/// details | Using `pip` instead\n    type: tip\n    open: true\n\npip install x\n///\n\n"
        "//// tab | Python 3.10+\n\n/// tip\n\nPrefer it.\n\n///\n\n```py\nx = 1\n```\n\n////\n"
    )
    assert texts(source) == [
        "Using `pip` instead\npip install x",
        "Python 3.10+",
        "Tip\nPrefer it.",
        "```py\nx = 1\n```",
    ]


def test_material_admonition_body_is_text_not_indented_code() -> None:
    source = '!!! note "Read this"\n    The body is indented.\n\n    So is this.\n\nAfter.\n'
    assert [(b.text, b.is_code) for b in blocks(source)] == [
        ("Read this\nThe body is indented.", False),
        ("So is this.", False),
        ("After.", False),
    ]


@pytest.mark.parametrize(
    ("marker", "label"),
    [("!!! tip", "Tip"), ("??? question", "Question"), ("???+ example inline end", "Example")],
)
def test_material_admonition_without_title_is_labelled_by_its_type(marker: str, label: str) -> None:
    assert texts(f"{marker}\n    Body.\n") == [f"{label}\nBody."]


def test_material_admonition_with_empty_title_has_no_label() -> None:
    assert texts('!!! note ""\n    Just the body.\n') == ["Just the body."]


def test_nested_material_admonitions_keep_both_labels_and_code_inside() -> None:
    source = (
        "!!! warning\n"
        "    Outer text.\n\n"
        '    !!! tip "Inner"\n'
        "        Inner text.\n\n"
        "        ```py\n        print(1)\n        ```\n\n"
        "    Outer again.\n\n"
        "Outside.\n"
    )
    assert [(b.text, b.is_code) for b in blocks(source)] == [
        ("Warning\nOuter text.", False),
        ("Inner\nInner text.", False),
        ("```py\nprint(1)\n```", True),
        ("Outer again.", False),
        ("Outside.", False),
    ]


@pytest.mark.parametrize(
    ("opening", "label"),
    [
        (":::tip", "Tip"),
        (":::tip Use the cache", "Use the cache"),
        (":::danger[Take care]", "Take care"),
        ("::: warning Slow", "Slow"),
        ("::: details", "Details"),
    ],
)
def test_docusaurus_and_vitepress_containers_keep_label_and_text(opening: str, label: str) -> None:
    assert texts(f"{opening}\n\nInside.\n\n:::\n\nOutside.\n") == [f"{label}\nInside.", "Outside."]


def test_nested_containers_close_in_turn() -> None:
    source = "::::note Outer\n\n:::tip\nInner.\n:::\n\nStill outer.\n\n::::\n"
    assert texts(source) == ["Outer", "Tip\nInner.", "Still outer."]


def test_mkdocstrings_directive_keeps_the_name_and_drops_its_options() -> None:
    source = "::: fastapi.APIRouter\n    options:\n        members:\n            - get\n\nText.\n"
    assert texts(source) == ["fastapi.APIRouter\nText."]


@pytest.mark.parametrize(
    "include",
    [
        '--8<-- "docs/snippets/install.md"',
        "{* ../../docs_src/body/tutorial001_py310.py hl[16] *}",
        "{!> ../../docs_src/app.py !}",
    ],
)
def test_includes_are_dropped_not_read(include: str) -> None:
    assert texts(f"Declare it:\n\n{include}\n\nThen run it.\n") == ["Declare it:", "Then run it."]


def test_mdx_include_filling_a_code_block_is_dropped_from_it() -> None:
    source = "```js\n{!> ../../docs_src/client.js!}\n```\n"
    assert texts(source) == ["```js\n```"]


def test_snippet_file_list_is_dropped_whole() -> None:
    source = "Intro.\n\n--8<--\nabbreviations.md\nlinks.md\n--8<--\n\nOutro.\n"
    assert texts(source) == ["Intro.", "Outro."]


def test_hugo_shortcodes_lose_their_markers_and_keep_their_text() -> None:
    source = (
        '{{< callout type="info" >}}\nSet the port first.\n{{< /callout >}}\n\n'
        'See {{% ref "install.md" %}} and {{< kbd "Ctrl" >}}+C.\n'
    )
    assert texts(source) == ["Set the port first.", "See  and +C."]


def test_attribute_lists_leave_heading_and_text() -> None:
    source = (
        "# Request Body { #request-body }\n\n"
        "![diagram](d.png){ width=300 } shows it. [Go](x){: .md-button }\n\n"
        "Keep `{name}` and {x} and {}.\n"
    )
    doc = parse(source)
    assert doc.title == "Request Body"
    assert texts(source) == ["![diagram](d.png) shows it. [Go](x)", "Keep `{name}` and {x} and {}."]


@pytest.mark.parametrize(
    "line",
    [
        '`echo "{{./make_copy.sh}}" | batch`',
        "`find {{root}} -name '{{*pattern*}}'`",
        "Press ``{{<Space>|<b>}}`` or `{* x *}` or `{ #id }` or `--8<--`.",
    ],
)
def test_markers_inside_code_spans_are_code(line: str) -> None:
    assert texts(line) == [line]


def test_template_placeholders_are_not_attribute_lists() -> None:
    line = 'docker ps --format "table {{.ID}}" --build-arg {{HTTP_PROXY=http://proxy}}'
    assert texts(line) == [line]


def test_markers_inside_fenced_code_are_code() -> None:
    fence = (
        '```markdown\n/// note\n!!! tip\n    indented\n:::tip\n--8<-- "x.md"\n'
        "{* x.py *}\n{{< x >}}\n# Heading { #id }\n```"
    )
    assert [(b.text, b.is_code) for b in blocks(f"Text.\n\n{fence}\n\n/// tip\nAfter.\n///\n")] == [
        ("Text.", False),
        (fence, True),
        ("Tip\nAfter.", False),
    ]


def test_fence_inside_an_admonition_ends_with_it() -> None:
    # An unclosed fence in an admonition body closes where the body does.
    source = "!!! note\n    ```\n    code\n\n/// tip\nText.\n///\n"
    assert texts(source) == ["Note", "```\ncode\n\n```", "Tip\nText."]


def test_fence_attribute_list_becomes_its_language() -> None:
    source = '```{ .dockerfile .annotate hl_lines="2" }\nFROM python\n```\n'
    assert texts(source) == ["```dockerfile\nFROM python\n```"]


def test_a_label_never_turns_indented_code_into_text() -> None:
    source = "/// note\n\n    indented code\n\n///\n"
    assert [(b.text, b.is_code) for b in blocks(source)] == [
        ("Note", False),
        ("    indented code", True),
    ]


@pytest.mark.timeout(120)  # linear: seconds, loaded; quadratic: far past this
def test_a_hundred_thousand_marker_lines_parse_in_linear_time() -> None:
    source = "".join(
        f"/// note | T{n}\n!!! tip\n    body {n}\n:::info\n{{* f.py *}}\n:::\n///\n"
        for n in range(15_000)
    )
    assert source.count("\n") > 100_000

    found = texts(source)

    assert not any(GENERATOR_MARKERS.search(text) for text in found)
    assert sum(text.startswith("Tip\nbody ") for text in found) == 15_000


@pytest.mark.timeout(120)  # linear: seconds, loaded; quadratic: far past this
@pytest.mark.parametrize(
    "line",
    [
        "{* {{< {! {{% { #" * 50_000,
        ":::tip[" + "]{" * 500_000,
        "!!! note " + '" ' * 500_000 + "x",
        "!!! " + "word " * 200_000 + "!",
        "x {" + "#a " * 300_000 + "?",
        "-" * 1_000_000 + "8",
    ],
    ids=[
        "unclosed-spans",
        "container-title",
        "admonition-title",
        "admonition-types",
        "attrs",
        "snippet",
    ],
)
def test_a_megabyte_line_almost_a_marker_parses_in_linear_time(line: str) -> None:
    assert "".join(texts(line)).replace("\n", "") == line


def test_fastapi_reference_page_keeps_its_api_names() -> None:
    path = FASTAPI_DOCS / "docs" / "en" / "docs" / "reference" / "encoders.md"
    doc = parse_document(path.read_bytes(), path.name)
    assert [b.text for s in doc.sections for b in s.blocks] == ["fastapi.encoders.jsonable_encoder"]
