"""Prompt-ready context as a pure function of a response and a parent reader."""

from __future__ import annotations

from ragd.search.context import ABSTAINED, build_context
from ragd.search.parents import Parent
from ragd.search.results import Hit, SearchResponse
from ragd.stores.records import ChunkRecord, DocId, DocumentRecord


def _doc(doc_id: str, title: str) -> DocumentRecord:
    return DocumentRecord(
        DocId(doc_id), "docs", doc_id, f"file:///{doc_id}", title, 1, 1, "h", "f", "indexed", None,
        "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", None,
    )  # fmt: skip


def _hit(rank: int, doc: DocumentRecord, ordinal: int, text: str, *stale: str) -> Hit:
    chunk = ChunkRecord(
        f"{doc.doc_id}#{ordinal}", doc.doc_id, ordinal, (doc.title, "Part"), text, "k"
    )
    return Hit(rank, chunk, doc, 1.0 / rank, rank, rank, tuple(stale))


SECTIONS = {  # doc_id -> (first, last, section text) of the one section every chunk is in
    "a.md": (0, 2, "A0 A1 A2, the whole section of a"),
    "b.md": (0, 0, "B0, all of b"),
    "c.md": (0, 5, "C" * 5000),
}


def _parent(chunk: ChunkRecord, budget: int) -> Parent:
    first, last, text = SECTIONS[chunk.doc_id]
    cut = text[:budget]
    return Parent(
        chunk.doc_id, chunk.heading_path, first, last, cut, len(text), len(cut) < len(text)
    )


A, B, C = _doc("a.md", "Alpha"), _doc("b.md", "Beta"), _doc("c.md", "Gamma")


def test_passages_are_numbered_in_rank_order_under_their_citations() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, B, 0, "B0"), _hit(2, A, 1, "A1")])

    context = build_context(response, _parent, 1000)

    assert [p.number for p in context.passages] == [1, 2]
    assert context.text.startswith("[1] Beta › Part — file:///b.md\nB0, all of b\n\n[2] Alpha")
    assert context.to_json()["passages"][1]["citation"] == "[2] Alpha › Part — file:///a.md"  # type: ignore[index]


def test_hits_in_one_section_merge_into_one_passage_citing_both() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, A, 0, "A0"), _hit(2, A, 2, "A2")])

    context = build_context(response, _parent, 1000)

    assert len(context.passages) == 1
    assert context.passages[0].chunk_ids == ["a.md#0", "a.md#2"]


def test_a_section_too_big_for_the_budget_gives_way_to_the_hits_own_chunk() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, C, 3, "just the chunk of c")])

    context = build_context(response, _parent, 1000)

    assert context.passages[0].text == "just the chunk of c"
    assert (context.passages[0].first, context.passages[0].last) == (3, 3)


def test_neighbouring_chunks_of_a_section_too_big_merge_with_their_overlap_once() -> None:
    hits = [
        _hit(1, C, 2, "second window, then the shared end"),
        _hit(2, C, 1, "the first window ends on second window, then"),
    ]

    context = build_context(SearchResponse("q", "hybrid", hits), _parent, 1000)

    assert len(context.passages) == 1
    passage = context.passages[0]
    assert passage.text == "the first window ends on second window, then the shared end"
    assert (passage.first, passage.last) == (1, 2)
    assert passage.chunk_ids == ["c.md#2", "c.md#1"]


def test_chunks_of_a_section_too_big_that_are_not_neighbours_stay_apart() -> None:
    hits = [_hit(1, C, 1, "one chunk"), _hit(2, C, 4, "another chunk")]

    context = build_context(SearchResponse("q", "hybrid", hits), _parent, 1000)

    assert [(p.first, p.last) for p in context.passages] == [(1, 1), (4, 4)]


def test_the_passages_never_exceed_the_budget() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, A, 0, "A0"), _hit(2, C, 1, "C" * 50)])

    context = build_context(response, _parent, 40)

    assert [p.doc_id for p in context.passages] == ["a.md"]
    assert sum(len(p.text) for p in context.passages) <= 40


def test_a_hit_too_big_for_what_is_left_gives_way_to_a_smaller_one_below_it() -> None:
    hits = [_hit(1, C, 1, "C" * 50), _hit(2, B, 0, "B0")]

    context = build_context(SearchResponse("q", "hybrid", hits), _parent, 20)

    assert [p.doc_id for p in context.passages] == ["b.md"]


def test_a_stale_passage_carries_a_plain_note() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, B, 0, "B0", "source_changed")])

    text = build_context(response, _parent, 1000).text

    assert (
        "(Note: this passage may be out of date: its source has changed since it was indexed.)"
        in text
    )


def test_an_abstained_query_opens_with_the_sentence_that_says_so() -> None:
    response = SearchResponse("q", "hybrid", [_hit(1, B, 0, "B0")], abstained=True)

    context = build_context(response, _parent, 1000)

    assert context.text.startswith(ABSTAINED)
    assert context.to_json()["abstained"] is True
