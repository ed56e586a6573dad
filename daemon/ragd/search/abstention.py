"""Abstention: saying "the evidence is weak" instead of returning confident noise.

Owns the rule, a pure function of two signals a hybrid query already has:

- agreement: how many chunks both retrievers put in their own top 10. Answers are
  usually found by both; off-topic queries pull each retriever to different chunks. It
  is read from the retrievers' own lists, so it does not change with the fusion method.
- BM25 strength: the top BM25 score divided by the number of query terms. A question
  whose words the corpus barely uses scores low per term, however long it is.

Calibrated on ../shared/eval/fastapi-docs.jsonl with the local static model (see
docs/retrieval.md): abstaining when the two top-10 lists share no chunk, or when BM25
scores under 1.3 per term, abstained on 6 of 7 negatives and 1 of 38 answerable
questions (whose top hit was wrong). Vector cosine alone does not separate on-topic
negatives, so it is not used. BM25 scores grow with corpus size (IDF), so re-check the
threshold with `ragd eval` on a corpus of your own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

AGREEMENT_RANK = 10
MIN_BM25_PER_TERM = 1.3


@dataclass(frozen=True, slots=True)
class Evidence:
    """The signals of one hybrid query."""

    agreement: int
    bm25_per_term: float


def agreement(bm25: Sequence[str], vector: Sequence[str]) -> int:
    """How many ids both ranked lists (best first) have in their top AGREEMENT_RANK."""
    return len(set(bm25[:AGREEMENT_RANK]) & set(vector[:AGREEMENT_RANK]))


def is_weak(evidence: Evidence) -> bool:
    """True when a hybrid answer should be flagged `abstained`."""
    return evidence.agreement == 0 or evidence.bm25_per_term < MIN_BM25_PER_TERM
