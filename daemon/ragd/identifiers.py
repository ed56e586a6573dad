"""Code identifiers as search terms: the whole name and its parts.

Tantivy's default tokenizer splits on every non-alphanumeric character and lowercases, so
`status_code` becomes `status` + `code` (the whole is lost) and `HTTPException` stays one
token `httpexception` (the parts are lost). Documentation questions paste names in both
forms, so the keyword store indexes, beside the default tokens, the terms this module
adds: compound names whole (`status_code`, `accept-ranges`, `fastapi.status`) and the
parts of camelCase or PascalCase names (`http`, `exception`). Queries get the same
treatment, so a pasted name matches its whole and its parts.

Pure functions; imports nothing from ragd.
"""

from __future__ import annotations

import re

# Alphanumeric runs joined by `_`, `-` or `.` (a trailing dot ends a sentence, not a name).
# Starting only at a word's start, and never giving back part of a run, keeps each word to
# one attempt: 2.3x faster than the plain form over tldr's 15 MB of chunks, same matches.
_COMPOUND = re.compile(r"(?<![^\W_])[^\W_]++(?:[_.\-][^\W_]++)+")
_WORD = re.compile(r"[^\W_]+")
# Case-change boundaries: "HTTPException" -> HTTP|Exception, "getUserId" -> get|User|Id,
# "OAuth2Password" -> O|Auth|2|Password. Digits are a part of their own.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Same limit as Tantivy's default tokenizer (RemoveLongFilter(40)), so both fields agree.
MAX_TERM_CHARS = 40
# Single letters ("O" of OAuth2) match nearly every chunk and say nothing.
MIN_PART_CHARS = 2


def camel_parts(word: str) -> list[str]:
    """The lowercased parts of a camelCase/PascalCase word; [] when it has no case change."""
    if not word.isascii():
        return []  # case rules below are ASCII; code names are, prose like "Sebastián" is not
    parts = _CAMEL_PART.findall(word)
    if len(parts) < 2:
        return []
    return [p.lower() for p in parts if len(p) >= MIN_PART_CHARS]


def compound_terms(text: str) -> list[str]:
    """Compound names (`status_code`, `fastapi.status`) whole and lowercased, in order."""
    terms: list[str] = []
    for match in _COMPOUND.finditer(text):
        whole = match.group().lower()
        # A dotted path also names its compound segments: `status.HTTP_201_CREATED`
        # should match a bare `HTTP_201_CREATED`.
        segments = [s for s in whole.split(".") if "_" in s or "-" in s] if "." in whole else []
        terms.extend(t for t in (whole, *segments) if len(t) <= MAX_TERM_CHARS)
    return terms


def identifier_terms(text: str) -> list[str]:
    """The extra terms of `text`: compound names whole and camelCase parts, in order.

    Terms the default tokenizer already produces are not repeated here ("status" and
    "code" of `status_code`, "httpexception" of `HTTPException`), so this field scores
    exactly what the default field misses.
    """
    terms = compound_terms(text)
    for word in _WORD.findall(text):
        # Most words of prose are one part (lower, UPPER or Title case): skip the regex.
        if word.isalpha() and (word.islower() or word.isupper() or word.istitle()):
            continue
        terms.extend(camel_parts(word))
    return terms
