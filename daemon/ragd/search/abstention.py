"""Abstention: saying "the documents may not answer this" instead of returning confident noise.

Owns the rule, a pure function of three signals, each relative to the corpus and the
query rather than a raw score (raw BM25 grows with a corpus's size, and cosines sit
higher or lower per model and corpus):

- coverage: the top BM25 score divided by the most the query's terms could score, the sum
  of their IDFs in this corpus (a term that occurs once, in a chunk of average length,
  scores its IDF). A question whose words the documents use, together, covers much of
  itself; one they barely use covers little, however long it is.
- unknown names: query words the corpus never uses (nor any form of them: `hogging` of
  `hog`) that are not ordinary words either (not one token of the model's vocabulary):
  names of products and tools, `wevtutil`, `Mangum`. A question about something the
  documents never name is rarely answered by them.
- margin: how far the best hit's semantic similarity (the second stage's, else the first
  stage's cosine) stands above the median of the candidates re-scored with it. An answer
  stands out from its neighbours; for an off-topic question every candidate is as
  mediocre as the next.

The rule abstains when the query names something unknown and coverage is under
NAMED_COVERAGE, or when coverage is under LOW_COVERAGE and no hit stands out (margin under
MIN_MARGIN). Chosen on two gold sets together, fastapi-docs and tldr-pages, with one
setting for both (docs/retrieval.md gives the figures and what else was tried).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

NAMED_COVERAGE = 0.7
LOW_COVERAGE = 0.35
MIN_MARGIN = 0.15
# Suffixes stripped to find a word's other forms in the corpus or the vocabulary.
_SUFFIXES = ("ing", "ed", "es", "s", "er", "ly", "able", "ness", "ment")


@dataclass(frozen=True, slots=True)
class Evidence:
    """The signals of one hybrid query."""

    coverage: float
    unknown: tuple[str, ...]
    margin: float | None  # None: no hit had a similarity to compare


def idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency, as Tantivy computes it."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


def coverage(top_score: float, documents: int, frequencies: Sequence[int]) -> float:
    """The top BM25 score over the sum of the query terms' IDFs (0 with no terms)."""
    most = sum(idf(documents, f) for f in frequencies)
    return top_score / most if most > 0 else 0.0


def word_forms(word: str) -> set[str]:
    """The word and its likely stems: `hogging` -> hogg, hog, hogge; `flagged` -> flag."""
    forms = {word}
    for suffix in _SUFFIXES:
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3:
            forms |= {stem, stem + "e"}
            if stem[-1] == stem[-2]:
                forms.add(stem[:-1])
            if stem.endswith("i"):
                forms.add(stem[:-1] + "y")
    return forms


def unknown_names(
    terms: Iterable[str], in_corpus: Callable[[str], bool], is_word: Callable[[str], bool]
) -> tuple[str, ...]:
    """The query terms that are names the corpus never uses: no form of them occurs in
    the corpus or is a word of the vocabulary. Terms with digits (versions, ports, sizes)
    are values, not names, and never count."""
    unknown = []
    for term in terms:
        if any(c.isdigit() for c in term):
            continue
        forms = word_forms(term)
        if not any(in_corpus(f) or is_word(f) for f in forms):
            unknown.append(term)
    return tuple(unknown)


def margin(best: float, pool: Sequence[float]) -> float | None:
    """How far `best` stands above the median of `pool`; None for an empty pool."""
    if not pool:
        return None
    ordered = sorted(pool)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return best - median


def evidence(
    covered: float,
    unknown: tuple[str, ...],
    best: str | None,
    similarity: Mapping[str, float],
) -> Evidence:
    """The evidence of a query whose best hit is `best`, the re-scored candidates'
    similarities being `similarity`."""
    spread = (
        margin(similarity[best], list(similarity.values()))
        if best is not None and best in similarity
        else None
    )
    return Evidence(coverage=covered, unknown=unknown, margin=spread)


def is_weak(evidence: Evidence) -> bool:
    """True when a hybrid answer should be flagged `abstained`."""
    if evidence.unknown and evidence.coverage < NAMED_COVERAGE:
        return True
    stands_out = evidence.margin is not None and evidence.margin >= MIN_MARGIN
    return evidence.coverage < LOW_COVERAGE and not stands_out
