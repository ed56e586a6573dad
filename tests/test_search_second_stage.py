"""The read path with a second stage and filters: re-scoring, the third list, the ranks each
hit reports, and filters applied inside both retrievers (real stores, fake models)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from ragd.errors import QueryRefused
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.search.filters import QueryFilter
from ragd.search.rescoring import StoredVectors
from ragd.search.results import SearchResponse
from ragd.search.searcher import Searcher, SearchSettings
from ragd.search.staleness import SourcePolicy
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore, second_stage_table
from tests.conftest import FakeEmbedder

SYNONYMS = {"feline": "cat", "cats": "cat", "kitten": "cat", "hound": "dog", "puppy": "dog"}


class SynonymEmbedder(FakeEmbedder):
    """A fake "better" model: it knows a few synonyms, as a real one knows paraphrases."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        words = [" ".join(SYNONYMS.get(w, w) for w in t.lower().split()) for t in texts]
        return super().embed(words)


PAGES = {
    "docs": {
        "cat.md": "# Cat care\n\nFeed the cat twice a day and brush its fur.\n",
        "dog.md": "# Dog care\n\nWalk the dog every morning and evening.\n",
        "fish.md": "# Fish care\n\nChange the water of the tank every week.\n",
        "guide/feeding.md": "# Feeding\n\nAnimals need fresh water every day.\n",
    },
    "blog": {
        "cat.md": "# Our cat\n\nThe cat sleeps all day in the sun.\n",
        "news.md": "# News\n\nWe adopted a dog and a cat this week.\n",
    },
}


class Index:
    """Two folder sources indexed with a first stage and a (synonym-aware) second stage."""

    def __init__(self, tmp_path: Path) -> None:
        self.data = DataDir(tmp_path / "data")
        self.first = FakeEmbedder(dim=32, identity="first")
        self.second = SynonymEmbedder(dim=32, identity="second")
        self.sources = []
        for name, pages in PAGES.items():
            root = tmp_path / name
            for key, text in pages.items():
                (root / key).parent.mkdir(parents=True, exist_ok=True)
                (root / key).write_text(text)
            self.sources.append(FolderSource(name, root, ("**/*.md",)))
        self.pipeline = Pipeline(
            ChunkSettings(), self.first.identity, second_identity=self.second.identity
        )
        self.table = second_stage_table(self.second.identity)

    def build(self, *, fill: bool = True) -> Index:
        stores = WriterStores(
            self.data, keyword_rows=manifest_keyword_rows, second_table=self.table
        )
        try:
            indexer = Indexer(stores, self.sources, self.pipeline, self.first, second=self.second)
            indexer.run()
            if fill:
                indexer.fill_second_stage()
        finally:
            stores.close()
        return self

    def searcher(self, settings: SearchSettings | None = None) -> Searcher:
        manifest = ManifestReader.open(self.data.manifest)
        table = VectorStore.open_readonly(self.data.lancedb, name=self.table)
        return Searcher(
            manifest,
            VectorStore.open_readonly(self.data.lancedb),
            KeywordStore.open_readonly(self.data.tantivy),
            self.first,
            fingerprint=self.pipeline.fingerprint,
            policies={s.name: SourcePolicy(max_age=timedelta(days=1)) for s in self.sources},
            settings=settings or SearchSettings(k=5),
            second=StoredVectors(self.second, table, manifest),
        )


@pytest.fixture
def index(tmp_path: Path) -> Index:
    return Index(tmp_path).build()


def _keys(response: SearchResponse) -> list[str]:
    return [f"{h.document.source}:{h.document.key}" for h in response.hits]


def test_a_paraphrase_the_first_stage_misses_is_found_by_the_second_stage(index: Index) -> None:
    searcher = index.searcher()

    first = searcher.search("feline grooming", rerank=False)
    second = searcher.search("feline grooming")

    assert not {"docs:cat.md", "blog:cat.md"} & set(_keys(first)[:2])
    assert second.rerank is True
    assert _keys(second)[0] in {"docs:cat.md", "blog:cat.md"}
    assert second.hits[0].second_stage_rank == 1


def test_each_hit_reports_its_first_and_second_stage_ranks(index: Index) -> None:
    response = index.searcher().search("cat fur")

    assert all(h.first_stage_rank is not None for h in response.hits)
    assert all(h.second_stage_rank is not None for h in response.hits)
    json = response.to_json()
    assert json["rerank"] is True
    assert {"first_stage_rank", "second_stage_rank"} <= set(json["results"][0])  # type: ignore[index]


def test_without_rerank_the_ranking_is_the_first_stages(index: Index) -> None:
    response = index.searcher().search("cat fur", rerank=False)

    assert response.rerank is False
    assert [h.second_stage_rank for h in response.hits] == [None] * len(response.hits)
    assert [h.first_stage_rank for h in response.hits] == sorted(
        h.first_stage_rank for h in response.hits if h.first_stage_rank is not None
    )


def test_single_retriever_modes_are_never_re_scored(index: Index) -> None:
    response = index.searcher().search("feline", mode="bm25")

    assert response.rerank is False


def test_hits_without_a_stored_second_stage_vector_are_ranked_by_the_first_stage(
    tmp_path: Path,
) -> None:
    unfilled = Index(tmp_path).build(fill=False)

    response = unfilled.searcher().search("cat fur")

    assert response.hits and response.rerank is False  # nothing to re-score with yet
    assert [h.second_stage_rank for h in response.hits] == [None] * len(response.hits)
    assert _keys(response) == _keys(unfilled.searcher().search("cat fur", rerank=False))


def test_a_source_filter_applies_inside_every_retriever(index: Index) -> None:
    searcher = index.searcher()
    blog = QueryFilter(sources=("blog",))

    for mode in ("bm25", "vector", "hybrid"):
        response = searcher.search("cat", mode=mode, k=1, filters=blog)
        assert _keys(response) and all(k.startswith("blog:") for k in _keys(response)), mode


def test_a_path_filter_applies_inside_every_retriever(index: Index) -> None:
    searcher = index.searcher()
    guide = QueryFilter(path="guide/**")

    for mode in ("bm25", "vector", "hybrid"):
        response = searcher.search("water every day", mode=mode, filters=guide)
        assert _keys(response) == ["docs:guide/feeding.md"], mode


def test_filters_pick_before_top_k_not_after(index: Index) -> None:
    # Unfiltered, docs:cat.md wins "cat care"; with k=1 a filter applied after the top 1
    # would return nothing.
    searcher = index.searcher()
    assert _keys(searcher.search("cat care", k=1)) == ["docs:cat.md"]

    response = searcher.search("cat care", k=1, filters=QueryFilter(sources=("blog",)))

    assert _keys(response) == ["blog:cat.md"]


def test_sources_and_path_combine(index: Index) -> None:
    response = index.searcher().search(
        "cat", filters=QueryFilter(sources=("docs", "blog"), path="*.md")
    )

    assert set(_keys(response)) <= {
        "docs:cat.md",
        "docs:dog.md",
        "docs:fish.md",
        "blog:cat.md",
        "blog:news.md",
    }
    assert "docs:guide/feeding.md" not in _keys(response)


def test_an_unknown_source_is_refused_naming_the_known_ones(index: Index) -> None:
    with pytest.raises(QueryRefused, match="unknown source 'wiki'") as refused:
        index.searcher().search("cat", filters=QueryFilter(sources=("wiki",)))

    assert "blog, docs" in str(refused.value)


@pytest.mark.parametrize("glob", ["(((", "a|b", "[x", "\\", "'; DROP TABLE chunks; --", "🐈*"])
def test_hostile_path_globs_are_literal_text(index: Index, glob: str) -> None:
    response = index.searcher().search("cat", filters=QueryFilter(path=glob))

    assert response.hits == []


def test_a_query_encoded_ahead_is_answered_as_the_text_would_be(index: Index) -> None:
    searcher = index.searcher()

    encoded = searcher.encode("feline grooming")

    assert encoded.second is not None and encoded.text == "feline grooming"
    assert searcher.search(encoded).to_json() == searcher.search("feline grooming").to_json()


def test_scores_fall_from_the_re_scored_candidates_into_the_rest(index: Index) -> None:
    searcher = index.searcher(SearchSettings(k=10, rerank_candidates=2))

    response = searcher.search("cat dog water")

    scores = [h.score for h in response.hits]
    assert len(scores) > 2 and response.rerank
    assert scores == sorted(scores, reverse=True)
    assert [h.second_stage_rank is None for h in response.hits[2:]] == [True] * (len(scores) - 2)
