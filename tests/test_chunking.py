"""Chunking: sections kept whole when they fit, windows on block boundaries, code never cut."""

from __future__ import annotations

import itertools
import re

import pytest

from ragd.indexing.chunking import Chunk, ChunkSettings, chunk_document, embed_prefix
from ragd.indexing.parsers import Block, ParsedDocument, Section, parse_document
from tests.conftest import FASTAPI_DOCS

SETTINGS = ChunkSettings()
SENTENCES = [
    f"Sentence number {i} explains one more detail of the configuration file format."
    for i in range(60)
]


def document(*sections: Section, title: str = "Guide") -> ParsedDocument:
    return ParsedDocument(title=title, sections=sections)


def section(*blocks: Block, path: tuple[str, ...] = ("Guide", "Part")) -> Section:
    return Section(path, blocks)


def paragraphs(count: int, start: int = 0) -> list[Block]:
    """Prose blocks of two or three sentences each (about 160–240 characters)."""
    return [
        Block(" ".join(SENTENCES[(start + i) % 60 : (start + i) % 60 + 2 + i % 2]))
        for i in range(count)
    ]


def chunks_of(*blocks: Block, settings: ChunkSettings = SETTINGS) -> list[Chunk]:
    return chunk_document(document(section(*blocks)), settings)


@pytest.mark.parametrize(
    ("max_chars", "overlap"), [(99, 0), (100, 50), (900, -1), (900, 450), (200, 100)]
)
def test_settings_reject_invalid_values(max_chars: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        ChunkSettings(max_chars, overlap)


def test_settings_accept_the_boundaries() -> None:
    assert ChunkSettings(100, 49) == ChunkSettings(max_chars=100, overlap=49)
    assert ChunkSettings(100, 0).overlap == 0


@pytest.mark.parametrize(
    ("title", "path", "expected"),
    [
        ("Request Body", (), "Request Body"),
        ("Request Body", ("Request Body",), "Request Body"),
        (
            "Request Body",
            ("Request Body", "Import Pydantic's `BaseModel`"),
            "Request Body — Import Pydantic's `BaseModel`",
        ),
        ("Guide", ("Guide", "Setup", "Linux"), "Guide — Setup / Linux"),
        ("Front title", ("Part", "Sub"), "Front title — Part / Sub"),
    ],
)
def test_embed_prefix_names_the_path_below_the_title(
    title: str, path: tuple[str, ...], expected: str
) -> None:
    assert embed_prefix(title, path) == expected


def test_section_that_fits_is_one_chunk_of_its_blocks() -> None:
    blocks = (Block("Intro."), Block("```\ncode\n```", is_code=True), Block("Outro."))
    [chunk] = chunks_of(*blocks)
    assert chunk.text == "Intro.\n\n```\ncode\n```\n\nOutro."
    assert chunk.heading_path == ("Guide", "Part")


def test_embed_text_is_the_prefix_then_the_body() -> None:
    [chunk] = chunks_of(Block("Body text."))
    assert chunk.embed_text == "Guide — Part\n\nBody text."


def test_ordinals_run_across_the_document() -> None:
    doc = document(
        section(*paragraphs(12), path=("Guide", "A")), section(Block("b"), path=("Guide", "B"))
    )
    chunks = chunk_document(doc, SETTINGS)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert len(chunks) > 2
    assert chunks[-1].heading_path == ("Guide", "B")


def test_windows_respect_max_chars_and_overlap_starts_on_a_word() -> None:
    chunks = chunks_of(*paragraphs(20))
    assert len(chunks) > 3
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    for previous, chunk in itertools.pairwise(chunks):
        lead = chunk.text.split("\n\n")[0]
        assert 0 < len(lead) <= SETTINGS.overlap
        assert previous.text.endswith(" " + lead)  # taken from the end, starting on a word


def test_overlap_prefers_a_sentence_start() -> None:
    chunks = chunks_of(*paragraphs(20))
    assert all(c.text.startswith("Sentence number") for c in chunks)


def test_fitting_code_block_is_never_cut() -> None:
    fence = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(30)) + "\n```"
    assert 600 < len(fence) <= SETTINGS.max_chars
    chunks = chunks_of(*paragraphs(3), Block(fence, is_code=True), *paragraphs(3, start=9))
    assert sum(fence in c.text for c in chunks) == 1
    assert all(c.text.count("```") in (0, 2) for c in chunks)


def test_no_overlap_after_a_code_block() -> None:
    before, after = paragraphs(2, start=30)
    fence = Block("```\n" + "x = 1\n" * 130 + "```", is_code=True)
    chunks = chunks_of(before, fence, after)
    assert [c.text for c in chunks][-1] == after.text


def test_overlong_code_block_is_split_on_lines() -> None:
    lines = [f"    step_{i:03d}(argument={i})" for i in range(100)]
    fence = "```python\n" + "\n".join(lines) + "\n```"
    chunks = chunks_of(Block(fence, is_code=True))
    assert len(chunks) > 1
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    pieces = [line for c in chunks for line in c.text.split("\n")]
    assert pieces == ["```python", *lines, "```"]  # whole lines, no fence re-added


def test_overlong_code_line_is_hard_cut() -> None:
    line = "x" * 2000
    chunks = chunks_of(Block("```\n" + line + "\n```", is_code=True))
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    assert "".join(c.text.replace("```", "").replace("\n", "") for c in chunks) == line


def test_long_paragraph_is_split_on_sentences() -> None:
    chunks = chunks_of(Block(" ".join(SENTENCES[:30])))
    assert len(chunks) > 2
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    assert all(c.text.endswith("format.") for c in chunks)


def test_text_without_sentences_is_split_on_words() -> None:
    words = " ".join(f"word{i}" for i in range(600))
    chunks = chunks_of(Block(words))
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    tokens = [token for c in chunks for token in c.text.split()]
    assert all(re.fullmatch(r"word\d+", token) for token in tokens)
    assert set(tokens) == set(words.split())


def test_long_list_is_split_between_items() -> None:
    items = "\n".join(
        f"* Item {i} with a short description. PR #{i} by someone." for i in range(60)
    )
    chunks = chunks_of(Block(items))
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.text.split("\n")[-1].startswith("* Item")


@pytest.mark.timeout(120)  # linear: seconds, loaded; quadratic: far past this
def test_giant_word_is_hard_cut_in_linear_time() -> None:
    chunks = chunks_of(Block("a" * 10_000_000))
    assert all(len(c.text) <= SETTINGS.max_chars for c in chunks)
    assert sum(len(c.text) for c in chunks) == 10_000_000


def test_whitespace_blocks_make_no_chunks() -> None:
    assert chunks_of(Block("   "), Block("\n\n", is_code=True)) == []
    assert chunk_document(document(), SETTINGS) == []


def test_empty_file_has_no_chunks() -> None:
    assert chunk_document(parse_document(b"", "empty.md"), SETTINGS) == []


def test_editing_one_section_changes_only_its_chunks() -> None:
    def doc(edited: str) -> ParsedDocument:
        middle = paragraphs(8, start=20)
        middle[3] = Block(edited)
        return document(
            section(*paragraphs(9), path=("Guide", "A")),
            section(*middle, path=("Guide", "B")),
            section(*paragraphs(7, start=40), path=("Guide", "C")),
        )

    before = chunk_document(doc("A short paragraph."), SETTINGS)
    after = chunk_document(doc(" ".join(SENTENCES[:12])), SETTINGS)

    def others(chunks: list[Chunk]) -> list[tuple[str, str]]:
        return [(c.text, c.embed_text) for c in chunks if c.heading_path != ("Guide", "B")]

    assert others(before) == others(after)
    changed = [c.text for c in before if c.heading_path == ("Guide", "B")]
    assert changed != [c.text for c in after if c.heading_path == ("Guide", "B")]


def test_fastapi_docs_chunk_within_limits() -> None:
    files = sorted((FASTAPI_DOCS / "docs" / "en" / "docs").rglob("*.md"))
    assert len(files) == 155, "../shared/corpora/fastapi-docs is missing or changed"
    by_file: dict[str, list[Chunk]] = {}
    for path in files:
        doc = parse_document(path.read_bytes(), path.name)
        chunks = chunk_document(doc, SETTINGS)
        assert chunks, path
        assert all(c.text.strip() and len(c.text) <= SETTINGS.max_chars for c in chunks), path
        by_file[path.relative_to(FASTAPI_DOCS).as_posix()] = chunks
    body = by_file["docs/en/docs/tutorial/body.md"]
    wanted = ("Request Body", "Import Pydantic's `BaseModel`")
    chunk = next(c for c in body if c.heading_path == wanted)
    assert chunk.embed_text.startswith("Request Body — Import Pydantic's `BaseModel`\n\n")
