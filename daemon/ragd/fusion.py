"""Reciprocal rank fusion: merging ranked lists from different retrievers.

A pure function over ranked id lists. RRF ignores raw scores, which live on scales
that cannot be compared (BM25 is unbounded, cosine is not), and rewards agreement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60


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
