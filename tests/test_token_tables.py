"""Tokenizing by table gives the ids the model's own tokenizer gives, for any text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.normalizers import BertNormalizer

from ragd.adapters import tokenizers as token_tables
from ragd.adapters.tokenizers import TableTokenizer
from tests.conftest import MODEL_DIR

LIMIT = 512
UNKNOWN = 1  # [UNK] in the model's vocabulary
TOKENIZER = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
REFERENCE = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
REFERENCE.enable_truncation(LIMIT)


def reference_ids(text: str) -> list[int]:
    """What model2vec's `tokenize` gives: truncated, no special tokens, unknowns dropped."""
    return [i for i in REFERENCE.encode(text, add_special_tokens=False).ids if i != UNKNOWN]


def table_tokenizer() -> TableTokenizer:
    return TableTokenizer(TOKENIZER, max_tokens=LIMIT, unknown=UNKNOWN)


# Characters where a table could go wrong: case and accents, a final sigma, dotted
# capital I, CJK, Hangul, combining marks alone and after letters, marks the tokenizer's
# older Unicode tables keep, whitespace and format characters of every kind, controls,
# punctuation of several scripts, digits, the added tokens' brackets and letters.
TRICKY = (
    "aAzZ09_-.,;:!?'\"()[]{}<>/\\@#$%^&*~`|+=— –…«»¿¡"
    "éÉèçÇñÑüÜßøØåÅœŒæ"
    "ΣσςΟΔ İıĲ"
    "東京中文日本語한국어"
    "\u0301\u0308\u0327\u07fd\U0001d165\u0345"
    " \t\n\r\x0b\x0c\x00\x1c\x85\xa0\u2028\u200b\u200d\u3000\ufeff\ufffd"
    "PADUNK"
)


SHARED_TABLES = table_tokenizer()  # across examples, as a worker's tables live across tasks


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=TRICKY, max_size=40) | st.text(max_size=40), max_size=6))
def test_generated_texts_get_the_tokenizers_ids(texts: list[str]) -> None:
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # no surrogates
    assert SHARED_TABLES.token_ids(texts) == [reference_ids(t) for t in texts]


def test_the_same_tables_serve_later_calls() -> None:
    tokenizer = table_tokenizer()
    first = tokenizer.token_ids(["Résumé of the tar — archive utility", "東京 tokens"])
    again = tokenizer.token_ids(["東京 tokens", "Résumé of the tar — archive utility"])

    assert again == first[::-1]
    assert first == [
        reference_ids("Résumé of the tar — archive utility"),
        reference_ids("東京 tokens"),
    ]


def test_an_added_token_in_the_text_is_matched_as_the_tokenizer_matches_it() -> None:
    ids = table_tokenizer().token_ids(["before[PAD]after", "[pad] lowercase is a word"])

    assert ids == [reference_ids("before[PAD]after"), reference_ids("[pad] lowercase is a word")]
    assert 0 in ids[0] and 0 not in ids[1]  # [PAD]'s id, only where the raw text holds it


def test_a_word_past_wordpieces_length_limit_is_unknown_and_dropped() -> None:
    assert table_tokenizer().token_ids(["short " + "a" * 101 + " words"]) == [
        reference_ids("short words")
    ]


def test_ids_past_the_limit_are_cut() -> None:
    text = "archive " * (LIMIT + 50)
    (ids,) = table_tokenizer().token_ids([text])

    assert len(ids) == LIMIT
    assert ids == reference_ids(text)


def test_a_character_the_table_cannot_hold_sends_its_text_to_the_tokenizer() -> None:
    tokenizer = table_tokenizer()
    # U+07FD survives this tokenizer's normalizer as a combining mark; NFD may reorder it.
    text = "nko \u07fd\u0301 mark"
    ids = tokenizer.token_ids([text, "plain words"])

    assert "\u07fd" in tokenizer._characters._unsafe
    assert ids == [reference_ids(text), reference_ids("plain words")]


def test_a_lone_surrogate_fails_as_the_tokenizer_fails() -> None:
    with pytest.raises(TypeError):
        REFERENCE.encode("a\ud800", add_special_tokens=False)
    with pytest.raises(TypeError):
        table_tokenizer().token_ids(["a\ud800"])


def test_a_full_character_table_sends_texts_with_new_characters_to_the_tokenizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(token_tables, "MAX_CHARACTERS", 140)  # ASCII, and a little more
    tokenizer = table_tokenizer()
    texts = [f"東京 {chr(0x4E00 + n)}{chr(0x4F00 + n)} ünï" for n in range(40)]

    assert tokenizer.token_ids(texts) == [reference_ids(t) for t in texts]
    assert 128 < len(tokenizer._characters.table) <= 140


def test_a_full_word_table_is_renewed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_tables, "MAX_WORDS", 20)
    tokenizer = table_tokenizer()
    texts = [f"word{n} other{n} third{n} fourth{n}" for n in range(30)]

    for text in texts:
        assert tokenizer.token_ids([text]) == [reference_ids(text)]
        assert len(tokenizer._words) <= 20


def test_only_a_lowercasing_bert_tokenizer_fits() -> None:
    cased = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    cased.normalizer = BertNormalizer(lowercase=False)
    wordlike_token = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    wordlike_token.add_special_tokens(["zzz"])  # could hide inside a word of the tables

    assert TableTokenizer.fits(TOKENIZER)
    assert not TableTokenizer.fits(cased)
    assert not TableTokenizer.fits(wordlike_token)
    assert not TableTokenizer.fits(None)
