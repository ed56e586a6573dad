"""tokenizers behind one adapter: BERT tokenization by table, what the model's own
tokenizer does, learned once per character and once per word, then applied with
`str.translate`, `str.split` and dict lookups. `ragd.adapters.model2vec` uses it as a
fast path, on the tokenizers versions it was tested with.

Why: the Rust tokenizer spends most of its time per token (normalizing with offsets,
pre-tokenizing, building an `Encoding`), and it was ~40% of a full index's CPU. Its
normalizer is per character (clean, split out CJK, NFD, strip accents, lowercase) and
its pre-tokenizer splits on whitespace and around each punctuation character, so a
text's tokens are the WordPiece tokens of the words of its translated text. The tables
are filled by asking the real tokenizer about each new character and each new word, so
they hold its answers, never a re-implementation. Texts the tables cannot vouch for (an
added token such as `[PAD]` in the text, a character whose meaning could depend on its
neighbours, or a new character once the table is full) go to the real tokenizer.
tests/test_token_tables.py checks equal ids on corpora and on generated text. Only the
tokenizers package's public API is used.
"""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Sequence
from itertools import chain
from typing import Any

# Bounds on what the tables hold: at most ~16 MiB of characters (CJK) and ~40 MiB of
# words (random words of ~5 pieces; a 38k-page corpus needs ~60k words per worker).
# Learning a character costs ~8 us and a word ~2 us; hostile text (all of Unicode,
# random words) could otherwise grow them without bound. A full character table stops
# learning: a text with a character it does not hold takes the real tokenizer. A full
# word table is renewed.
MAX_CHARACTERS = 50_000
MAX_WORDS = 100_000


class _Characters:
    """A `str.translate` table: each known code point to its normalized text, with each
    whitespace character as a space and each punctuation character between spaces;
    learned from the tokenizer's own normalizer and pre-tokenizer."""

    def __init__(self, normalizer: Any, pre_tokenizer: Any) -> None:
        self._normalizer = normalizer
        self._pre_tokenizer = pre_tokenizer
        self.table: dict[int, str] = {}
        self._known: set[str] = set()
        self._unsafe: set[str] = set()
        # ASCII is learned up front, so an ASCII text (str.isascii is O(1)) needs no set
        # of its characters: a third of tldr's chunk texts, and the longest.
        self._ascii = False
        self._ascii = self.covers("".join(map(chr, range(128))))

    def covers(self, text: str) -> bool:
        """Learn the text's new characters while there is room; True if the table can
        translate the text as the tokenizer would."""
        if self._ascii and text.isascii():
            return True
        characters = set(text)
        new = characters.difference(self._known)
        if new:
            if len(self.table) + len(new) > MAX_CHARACTERS:
                return False
            for character in new:
                self._learn(character)
        return self._unsafe.isdisjoint(characters)

    def _learn(self, character: str) -> None:
        try:
            parts = [self._part(c) for c in self._normalizer.normalize_str(character)]
        except Exception:  # a lone surrogate, which no tokenizer takes: let it say so
            parts = [None]
        if None in parts:
            self._unsafe.add(character)
        # The table first: a thread that finds the character known finds it in the table.
        self.table[ord(character)] = "".join(p for p in parts if p is not None)
        self._known.add(character)

    def _part(self, character: str) -> str | None:
        """What the pre-tokenizer makes of one normalized character, as table text; None
        when no table text can stand for it."""
        pieces = [piece for piece, _ in self._pre_tokenizer.pre_tokenize_str(f"a{character}a")]
        if pieces == ["a", "a"]:
            return " "
        if pieces == ["a", character, "a"] and not character.isspace():
            return f" {character} "
        if pieces == [f"a{character}a"] and not character.isspace():
            # NFD orders combining marks by class across characters; one that survives
            # normalization could move past its neighbours, which a table cannot show.
            return None if unicodedata.combining(character) else character
        return None


class _Words(dict[str, tuple[int, ...]]):
    """A word (normalized, no whitespace or punctuation) to its WordPiece ids; learned on
    first sight from the tokenizer's own WordPiece model, up to MAX_WORDS."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model

    def __missing__(self, word: str) -> tuple[int, ...]:
        ids = tuple(token.id for token in self._model.tokenize(word))
        if len(self) < MAX_WORDS:
            self[word] = ids
        return ids


class TableTokenizer:
    """Token ids of texts as the given BERT tokenizer would give them (no special tokens
    added, truncated to `max_tokens`, `unknown` ids dropped)."""

    def __init__(self, tokenizer: Any, *, max_tokens: int | None, unknown: int | None) -> None:
        self._reference = copy.deepcopy(tokenizer)
        self._reference.no_padding()  # as the tables: a text's ids, never pad ids
        if max_tokens is None:
            self._reference.no_truncation()
        else:
            self._reference.enable_truncation(max_tokens)
        self._max_tokens = max_tokens
        self._unknown = unknown
        self._specials = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
        self._model = tokenizer.model
        self._characters = _Characters(tokenizer.normalizer, tokenizer.pre_tokenizer)
        self._words = _Words(self._model)

    @staticmethod
    def fits(tokenizer: Any) -> bool:
        """True for a lowercasing BERT tokenizer (BERT normalizer and pre-tokenizer,
        WordPiece) whose added tokens cannot hide inside a word."""
        from tokenizers import Tokenizer
        from tokenizers.models import WordPiece
        from tokenizers.normalizers import BertNormalizer
        from tokenizers.pre_tokenizers import BertPreTokenizer

        if not isinstance(tokenizer, Tokenizer):
            return False
        normalizer, pre_tokenizer = tokenizer.normalizer, tokenizer.pre_tokenizer
        if not (
            isinstance(normalizer, BertNormalizer)
            and normalizer.lowercase is True
            and isinstance(pre_tokenizer, BertPreTokenizer)
            and isinstance(tokenizer.model, WordPiece)
        ):
            return False
        # An added token is matched in the raw text, before normalizing. One with a
        # punctuation character never forms a word of the tables, and a text holding it
        # takes the real tokenizer; one without could, under a different id.
        return all(
            not token.normalized and len(pre_tokenizer.pre_tokenize_str(token.content)) > 1
            for token in tokenizer.get_added_tokens_decoder().values()
        )

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """One list of token ids per text."""
        if len(self._words) >= MAX_WORDS:
            self._words = _Words(self._model)  # not cleared: another thread may be reading
        characters, lookup = self._characters, self._words.__getitem__
        out = []
        for text in texts:
            if not characters.covers(text) or any(s in text for s in self._specials):
                out.append(self._reference_ids(text))
                continue
            ids = list(chain.from_iterable(map(lookup, text.translate(characters.table).split())))
            if self._max_tokens is not None:
                del ids[self._max_tokens :]
            out.append(self._known_ids(ids))
        return out

    def _reference_ids(self, text: str) -> list[int]:
        return self._known_ids(self._reference.encode(text, add_special_tokens=False).ids)

    def _known_ids(self, ids: list[int]) -> list[int]:
        """`ids` without the unknown token's (truncation counts them, as model2vec's does)."""
        if self._unknown is None or self._unknown not in ids:
            return ids
        return [i for i in ids if i != self._unknown]


class SentenceTokenizer:
    """A transformer's own tokenizer, as its model reads a text: special tokens added,
    truncated to `max_tokens`, no padding (each text runs alone, so none is needed)."""

    def __init__(self, path: str, *, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(path)
        # A tokenizer.json may carry padding to a fixed length (all-MiniLM-L6-v2's pads to
        # 128): padding would be attended to as text, and truncation would cut at 128.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_tokens)

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """The token ids of `text` and their segment (type) ids."""
        encoding = self._tokenizer.encode(text)
        return encoding.ids, encoding.type_ids
