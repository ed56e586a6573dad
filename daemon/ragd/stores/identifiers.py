"""Code identifiers as search terms: the whole name and its parts; and words written with a
bracketed letter, joined.

Tantivy's default tokenizer splits on every non-alphanumeric character and lowercases, so
`status_code` becomes `status` + `code` (the whole is lost) and `HTTPException` stays one
token `httpexception` (the parts are lost). Documentation questions paste names in both
forms, so the keyword store indexes, beside the default tokens, the terms this module
adds: compound names whole (`status_code`, `accept-ranges`, `fastapi.status`) and the
parts of camelCase or PascalCase names (`http`, `exception`). Queries get the same
treatment, so a pasted name matches its whole and its parts.

Command references mark a word's mnemonic letter in brackets (tldr-pages: `E[x]tract`,
`[c]reate`, `Lis[t]`), which the default tokenizer cuts into `e`, `x`, `tract`: the page
on tar then never matches "extract". `bracketed_words` gives those words whole.

Pure functions; imports nothing from ragd.
"""

from __future__ import annotations

import re

# A word (a run of letters and digits) and the words joined to it by single `_`, `-` or
# `.` (a trailing dot ends a sentence, not a name). One scan of the text yields every word
# exactly once, inside the token that holds it: a token with a separator is a compound
# name, and its words (like every other token's) may be camelCase. One scan, not one for
# compounds and another for words: this runs over every chunk text a pass indexes.
_TOKEN = re.compile(r"[^\W_]+(?:[_.\-][^\W_]+)*")
_SEPARATOR = re.compile(r"[_.\-]")
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


def compound_terms(compound: str) -> list[str]:
    """The terms of one compound name (`status_code`, `fastapi.status`): the whole, and for
    a dotted path its `_`/`-` segments, lowercased; none longer than Tantivy keeps."""
    whole = compound.lower()
    # A dotted path also names its compound segments: `status.HTTP_201_CREATED`
    # should match a bare `HTTP_201_CREATED`.
    segments = [s for s in whole.split(".") if "_" in s or "-" in s] if "." in whole else []
    return [t for t in (whole, *segments) if len(t) <= MAX_TERM_CHARS]


def identifier_terms(text: str) -> list[str]:
    """The extra terms of `text`: compound names whole, then camelCase parts, in order.

    Terms the default tokenizer already produces are not repeated here ("status" and
    "code" of `status_code`, "httpexception" of `HTTPException`), so this field scores
    exactly what the default field misses.
    """
    compounds: list[str] = []
    parts: list[str] = []
    for token in _TOKEN.findall(text):
        if token.isalnum():  # one word, no separator: by far the most common token
            words: list[str] | tuple[str] = (token,)
        else:
            compounds.extend(compound_terms(token))
            words = _SEPARATOR.split(token)
        for word in words:
            # Most words of prose are one part (lower, UPPER or Title case, or caseless
            # like Chinese, which `camel_parts` would refuse as non-ASCII): skip the call.
            if word.isalpha() and (
                word.islower() or word.isupper() or word.istitle() or not word.isascii()
            ):
                continue
            parts.extend(camel_parts(word))
    return compounds + parts


# A word with one bracketed letter in it, at its start, middle or end.
_BRACKETED = re.compile(r"(?<![\w\[])([A-Za-z]*)\[([A-Za-z])\]([A-Za-z]*)(?![\w\]])")


def bracketed_words(text: str) -> list[str]:
    """The words of `text` written with a bracketed letter, joined and lowercased:
    `E[x]tract` -> `extract` (a lone `[x]`, a checkbox, is not a word)."""
    if "[" not in text:
        return []
    return [f"{a}{b}{c}".lower() for a, b, c in _BRACKETED.findall(text) if a or c]
