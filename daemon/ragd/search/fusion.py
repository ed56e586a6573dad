"""Fusion: merging ranked lists from different retrievers into one.

Two pure functions. Reciprocal rank fusion uses ranks only and rewards agreement, but
throws away how far ahead a retriever's best hit is. Convex fusion keeps that: each
retriever's scores are divided by its own best score (BM25 is unbounded, cosine is not,
so raw scores cannot be compared; ratios to the best can), and the fused score is a
weighted sum, an id a retriever did not return counting 0 there. On fastapi-docs it beat
RRF (docs/retrieval.md), as Bruch et al. found for hybrid retrieval generally ("An
Analysis of Fusion Functions for Hybrid Retrieval", 2023).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

RRF_K = 60
FUSIONS = ("convex", "rrf")
Fusion = Literal["convex", "rrf"]


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused hit: its id, fused score and 1-based rank in each list that had it."""

    item: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ranked lists: score(d) = sum over lists of weight / (k + rank of d).

    Ties break on the best single rank, then on the id, so output order is deterministic.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        seen: set[str] = set()
        for position, item in enumerate(ranking, start=1):
            if item in seen:
                continue  # a retriever listing an id twice must not count twice
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + position)
            ranks.setdefault(item, {})[name] = position
    return sorted(
        (Fused(item, score, ranks[item]) for item, score in scores.items()),
        key=lambda f: (-f.score, min(f.ranks.values()), f.item),
    )


def convex_fusion(
    scored: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse scored lists: score(d) = sum over lists of weight * score / best score.

    Each list is (id, score), best first, scores where higher is better. A list whose
    best score is not positive contributes nothing but its ranks. Ties break on the best
    single rank, then on the id, so output order is deterministic.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ranking in scored.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        best = max((score for _, score in ranking), default=0.0)
        seen: set[str] = set()
        for position, (item, score) in enumerate(ranking, start=1):
            if item in seen:
                continue  # a retriever listing an id twice must not count twice
            seen.add(item)
            share = weight * score / best if best > 0 else 0.0
            scores[item] = scores.get(item, 0.0) + share
            ranks.setdefault(item, {})[name] = position
    return sorted(
        (Fused(item, score, ranks[item]) for item, score in scores.items()),
        key=lambda f: (-f.score, min(f.ranks.values()), f.item),
    )


# The second stage's share of a query's score falls as the query's keywords cover more of
# it (ragd.search.abstention.coverage): all of it below coverage 0.07, none above 0.73.
# Keyword-dense questions (pasted names, jargon) keep what BM25 wins; paraphrases, whose
# words the documents do not use, are ranked by the model. Chosen on fastapi-docs and
# tldr-pages together (docs/retrieval.md).
SHARE_AT_ZERO = 1.1
SHARE_SLOPE = 1.5


def second_stage_share(coverage: float, weight: float = 1.0) -> float:
    """The second stage's share of a query's score, in [0, 1], scaled by `weight`."""
    return min(1.0, max(0.0, weight * (SHARE_AT_ZERO - SHARE_SLOPE * coverage)))


@dataclass(frozen=True, slots=True)
class Rescored:
    """A candidate re-scored: its final score, its 1-based rank in the first stage, and in
    the second (None when it had no second-stage score)."""

    item: str
    score: float
    first_rank: int
    second_rank: int | None


def rescore(first: Sequence[Fused], second: Mapping[str, float], share: float) -> list[Rescored]:
    """Re-score the first stage's candidates, best first: (1 - share) times the first-stage
    score over the best one, plus `share` times the second-stage score over the best one.

    `second` holds similarities (higher is better, 0 unrelated: a cosine, or a
    cross-encoder's probability). A candidate without one is ranked by the first stage:
    its first-stage ratio stands in for both parts. Ties keep first-stage order.
    """
    best_first = max((f.score for f in first), default=0.0)
    scored = [second[f.item] for f in first if f.item in second]
    best_second = max(scored, default=0.0)
    by_second = sorted((f.item for f in first if f.item in second), key=lambda i: -second[i])
    second_rank = {item: rank for rank, item in enumerate(by_second, start=1)}
    out = []
    for rank, f in enumerate(first, start=1):
        ratio = f.score / best_first if best_first > 0 else 0.0
        other = second[f.item] / best_second if f.item in second and best_second > 0 else ratio
        out.append(
            Rescored(f.item, (1 - share) * ratio + share * other, rank, second_rank.get(f.item))
        )
    return sorted(out, key=lambda r: (-r.score, r.first_rank))
