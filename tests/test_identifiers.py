"""Identifier terms: compound names whole, camelCase names in parts; bracketed-letter words."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ragd.stores.identifiers import (
    bracketed_words,
    camel_parts,
    compound_terms,
    identifier_terms,
)


def test_a_snake_case_name_is_kept_whole() -> None:
    assert identifier_terms("set status_code here") == ["status_code"]


def test_a_hyphenated_header_name_is_kept_whole_and_lowercased() -> None:
    assert identifier_terms("the Accept-Ranges header") == ["accept-ranges"]


def test_a_pascal_case_name_is_split_into_its_parts() -> None:
    assert identifier_terms("raise HTTPException") == ["http", "exception"]


def test_a_dotted_path_names_itself_and_its_compound_segments() -> None:
    assert identifier_terms("status.HTTP_201_CREATED") == [
        "status.http_201_created",
        "http_201_created",
    ]


def test_single_letter_and_digit_parts_are_dropped() -> None:
    assert camel_parts("OAuth2PasswordRequestForm") == ["auth", "password", "request", "form"]


def test_plain_words_add_no_terms() -> None:
    assert identifier_terms("Plain prose, with Capitals and an ending.") == []


def test_non_ascii_words_are_not_split_on_case() -> None:
    assert identifier_terms("Sebastián ÉcoleNormale") == []


def test_a_sentence_end_does_not_join_words() -> None:
    assert identifier_terms("It ends. Then") == []


def test_terms_longer_than_tantivys_limit_are_dropped() -> None:
    assert identifier_terms("a" * 30 + "_" + "b" * 30) == []


# The definition the one-scan `identifier_terms` must keep: every compound name (a word
# start, then words joined by single separators), then every word's camelCase parts.
_COMPOUND = re.compile(r"(?<![^\W_])[^\W_]++(?:[_.\-][^\W_]++)+")
_AWKWARD = st.text(alphabet="aBcZ19_.-- \u00e9e\u0301\u4e2d\u0663\u00b2", max_size=30)
_ANY = st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]), max_size=60)


@given(st.one_of(_ANY, _AWKWARD))
def test_identifier_terms_are_every_compound_then_every_words_parts(text: str) -> None:
    compounds = [t for m in _COMPOUND.findall(text) for t in compound_terms(m)]
    every_word_split = [p for w in re.findall(r"[^\W_]+", text) for p in camel_parts(w)]

    assert identifier_terms(text) == compounds + every_word_split


def test_a_word_with_a_bracketed_mnemonic_letter_is_joined() -> None:
    text = "- E[x]tract a [f]ile [v]erbosely, Lis[t] it, g[z]ipped"

    assert bracketed_words(text) == ["extract", "file", "verbosely", "list", "gzipped"]


def test_a_lone_bracketed_letter_and_options_in_brackets_are_not_words() -> None:
    assert bracketed_words("- [x] done; `tar {{[-C|--directory]}}` [a] [1]") == []
