"""Retrieval evaluation against a gold set: recall@k, MRR, nDCG and abstention.

Owns the gold format (../shared/eval/README.md), the rule for "this hit answers that
question", and the metrics. Indexes nothing: it queries what is there, and refuses to
run when a gold path is not in the index, because a mis-pointed evaluation would
otherwise report zeros that look like bad retrieval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ragd.errors import UsageError
from ragd.search.filters import NO_FILTER, QueryFilter
from ragd.search.results import Hit, Mode
from ragd.search.searcher import Searcher

CUTOFFS = (1, 5, 10)
RETRIEVERS: tuple[Mode, ...] = ("bm25", "vector")  # each on its own, for misses


@dataclass(frozen=True)
class GoldAnswer:
    """Where an answer lives: a document path, the deepest heading, a verbatim phrase."""

    path: str
    heading: str
    evidence: str


@dataclass(frozen=True)
class Question:
    """One gold question; `gold` is empty for negatives (nothing in the corpus answers)."""

    id: str
    query: str
    kind: str
    gold: tuple[GoldAnswer, ...]


def load_gold(path: Path) -> list[Question]:
    """Read a gold JSONL file; UsageError naming the line when one is malformed."""
    questions = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read gold file {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw: dict[str, Any] = json.loads(line)
            questions.append(
                Question(
                    id=str(raw["id"]),
                    query=str(raw["query"]),
                    kind=str(raw.get("kind", "unknown")),
                    gold=tuple(
                        GoldAnswer(g["path"], g.get("heading", ""), g.get("evidence", ""))
                        for g in raw.get("gold", [])
                    ),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a gold question ({exc})") from exc
    return questions


def answers(hit: Hit, question: Question) -> bool:
    """A hit answers when it is from a gold path and has the gold heading or evidence."""
    return any(
        hit.document.key == gold.path
        and (
            gold.heading in hit.chunk.heading_path
            or (gold.evidence and gold.evidence in hit.chunk.text)
        )
        for gold in question.gold
    )


@dataclass
class Outcome:
    """One question answered in one mode."""

    question: Question
    first_rank: int | None  # 1-based rank of the first answering hit within k
    abstained: bool
    top: list[str] = field(default_factory=list)  # "path › heading" of the first hits
    # For a miss: the gold's rank in each retriever's own candidate list (None: not in it).
    retriever_ranks: dict[str, int | None] = field(default_factory=dict)


class Miss(TypedDict):
    """An answerable question whose gold was not ranked first, and where each list had it."""

    id: str
    kind: str
    query: str
    gold: list[str]
    rank: int | None
    retriever_ranks: dict[str, int | None]
    top: list[str]


@dataclass
class ModeReport:
    """Metrics for one mode, overall and per question kind."""

    mode: str
    outcomes: list[Outcome]

    def metrics(self, kind: str | None = None) -> dict[str, float | int]:
        """recall@1/5/10, MRR@10, nDCG@10 over answerable questions (of one kind, if given)."""
        chosen = [
            o
            for o in self.outcomes
            if o.question.gold and (kind is None or o.question.kind == kind)
        ]
        n = len(chosen) or 1
        result: dict[str, float | int] = {"questions": len(chosen)}
        for cutoff in CUTOFFS:
            hits = sum(1 for o in chosen if o.first_rank is not None and o.first_rank <= cutoff)
            result[f"recall@{cutoff}"] = round(hits / n, 4)
        result["mrr@10"] = round(sum(1 / o.first_rank for o in chosen if o.first_rank) / n, 4)
        # One relevant item per question (the first answering hit): DCG = 1/log2(rank + 1).
        result["ndcg@10"] = round(
            sum(1 / math.log2(o.first_rank + 1) for o in chosen if o.first_rank) / n, 4
        )
        result["wrongly_abstained"] = round(sum(o.abstained for o in chosen) / n, 4)
        return result

    def abstention(self) -> dict[str, float | int]:
        """Share of negatives abstained on."""
        negatives = [o for o in self.outcomes if not o.question.gold]
        return {
            "negatives": len(negatives),
            "abstained": round(sum(o.abstained for o in negatives) / (len(negatives) or 1), 4),
        }

    def misses(self) -> list[Miss]:
        """Answerable questions whose gold was not ranked first."""
        return [
            {
                "id": o.question.id,
                "kind": o.question.kind,
                "query": o.question.query,
                "gold": [f"{g.path} › {g.heading}" for g in o.question.gold],
                "rank": o.first_rank,
                "retriever_ranks": o.retriever_ranks,
                "top": o.top[:3],
            }
            for o in self.outcomes
            if o.question.gold and o.first_rank != 1
        ]

    def to_json(self, kinds: Sequence[str]) -> dict[str, object]:
        """The per-mode object of `ragd eval --json`."""
        return {
            "overall": self.metrics(),
            "by_kind": {kind: self.metrics(kind) for kind in kinds},
            "abstention": self.abstention(),
            "misses": self.misses(),
        }


def check_gold_paths(questions: Iterable[Question], indexed_keys: set[str]) -> None:
    """Refuse to evaluate when the gold set names documents the index does not have."""
    missing = sorted({g.path for q in questions for g in q.gold} - indexed_keys)
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise UsageError(
            f"{len(missing)} gold paths are not in the index: {shown}",
            hint="index the corpus the gold set was written for, with its root as the source path",
        )


# An evaluation mode: a query mode, or "hybrid+rerank" (hybrid re-scored by the second
# stage; plain "hybrid" is measured without it).
RERANK_MODE = "hybrid+rerank"


def query_mode(mode: str) -> tuple[Mode, bool]:
    """The query mode and whether the second stage re-scores, of an evaluation mode."""
    if mode == RERANK_MODE:
        return "hybrid", True
    if mode in RETRIEVERS or mode == "hybrid":
        return mode, False  # type: ignore[return-value]  # one of Mode's values
    raise UsageError(f"unknown evaluation mode '{mode}'")


def evaluate(
    searcher: Searcher,
    questions: Sequence[Question],
    mode: str,
    k: int = 10,
    *,
    filters: QueryFilter = NO_FILTER,
) -> ModeReport:
    """Run every question in one evaluation mode (a query mode, or hybrid+rerank)."""
    outcomes = []
    searched, rerank = query_mode(mode)
    for question in questions:
        response = searcher.search(
            question.query, k=k, mode=searched, rerank=rerank, filters=filters
        )
        first = next((hit.rank for hit in response.hits if answers(hit, question)), None)
        top = [f"{h.document.key} › {' / '.join(h.chunk.heading_path)}" for h in response.hits]
        ranks: dict[str, int | None] = (
            {
                r: gold_rank(searcher, question, r, searcher.settings.candidates, filters)
                for r in RETRIEVERS
            }
            if question.gold and first != 1
            else {}
        )
        outcomes.append(Outcome(question, first, response.abstained, top, ranks))
    return ModeReport(mode, outcomes)


def gold_rank(
    searcher: Searcher,
    question: Question,
    mode: Mode,
    depth: int,
    filters: QueryFilter = NO_FILTER,
) -> int | None:
    """Rank of the first answering hit in one mode's list, looking `depth` deep."""
    response = searcher.search(question.query, k=depth, mode=mode, filters=filters)
    return next((hit.rank for hit in response.hits if answers(hit, question)), None)
