"""model2vec behind one adapter: loading a static model and encoding texts with it.

Owns every call into model2vec, and into safetensors and tokenizers on its behalf: loading
a model from a local directory or a Hugging Face id, its vector width, and encoding texts
as mean token vectors (not normalised: the caller does that). The model's table is
float32 whatever its file holds: numpy averages float16 rows slowly (a cast per
reduction), and a float16 mean is rounded again.

Two fast paths live here. Each gives exactly what the public path it stands for gives
(tests/test_model2vec_adapter.py compares them on real corpora), and each is taken only
on the model2vec and tokenizers versions it was tested with (`fast_paths_supported`):

- loading a local directory in model2vec's own layout by constructing `StaticModel`:
  `StaticModel.from_pretrained` also reads the model card through huggingface_hub, whose
  import is ~0.4 s of a ~0.65 s load in every process that loads a model (each index
  worker, each `ragd query`); encoding reads nothing of the card;
- `TableMeanEncoder`: model2vec's `encode` for a plain lookup-and-average model with a
  lowercasing BERT tokenizer, tokenizing by table (`ragd.adapters.tokenizers`): the same
  token ids and the same arithmetic, for about a quarter of the CPU.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragd.adapters.tokenizers import TableTokenizer

Matrix = npt.NDArray[np.float32]

# Inclusive (major, minor) ranges the fast paths were tested on.
MODEL2VEC_TESTED = ((0, 10), (0, 10))
TOKENIZERS_TESTED = ((0, 20), (0, 23))
# What `from_pretrained` reads for a local model in model2vec's layout.
_LAYOUT = ("model.safetensors", "tokenizer.json", "config.json")


def _within(package: str, tested: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    try:
        major, minor = (int(part) for part in version(package).split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return tested[0] <= (major, minor) <= tested[1]


def fast_paths_supported() -> bool:
    """Whether the installed model2vec and tokenizers are versions the fast paths were
    tested with; on any other, only model2vec's public path is used."""
    return _within("model2vec", MODEL2VEC_TESTED) and _within("tokenizers", TOKENIZERS_TESTED)


def weights_dim(directory: Path) -> int | None:
    """The width of a local model's `embeddings` tensor, from the safetensors header alone
    (no weights read); None when the directory is not in that layout."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(directory / "model.safetensors"), framework="numpy") as tensors:
            if "embeddings" not in tensors.keys():  # noqa: SIM118 - not a mapping
                return None
            shape = tensors.get_slice("embeddings").get_shape()
    except (OSError, SafetensorError):
        return None
    return shape[1] if len(shape) == 2 and shape[1] > 0 else None


@dataclass(frozen=True)
class LoadedModel:
    """A loaded model: its width, and how its texts are encoded (`path`: "table" when the
    table encoder serves it, "encode" when model2vec's own `encode` does)."""

    static: Any
    dim: int
    path: str
    _encoder: TableMeanEncoder | None

    def has_token(self, word: str) -> bool:
        """Whether `word` is one whole token of the model's vocabulary."""
        return self.static.tokenizer.token_to_id(word) is not None

    def encode(self, texts: Sequence[str], batch_size: int) -> Matrix:
        """Mean token vectors of `texts`, one row each (zeros for a text with no known
        token), float32, not normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._encoder is not None:
            return self._encoder.encode(texts, batch_size)
        # model2vec's threaded path flips TOKENIZERS_PARALLELISM off for good: stay single.
        vectors = self.static.encode(
            list(texts), batch_size=batch_size, normalize=False, use_multiprocessing=False
        )
        return np.asarray(vectors, dtype=np.float32)


def load_model(model: str, *, is_local: bool, fast: bool | None = None) -> LoadedModel:
    """Load a model from a local directory or a hub id. `fast` (default: whether the
    installed versions were tested) allows the fast paths; exceptions are model2vec's,
    for the caller to report."""
    use_fast = fast_paths_supported() if fast is None else fast
    static = _from_directory(Path(model)) if use_fast and is_local else None
    if static is None:
        from model2vec import StaticModel

        static = StaticModel.from_pretrained(model, quantize_to="float32")
    encoder = TableMeanEncoder(static) if use_fast and TableMeanEncoder.fits(static) else None
    return LoadedModel(static, int(static.dim), "table" if encoder else "encode", encoder)


def _from_directory(directory: Path) -> Any | None:
    """A StaticModel from a local directory in model2vec's own layout, built as
    `from_pretrained` builds it; None for another layout (a vocabulary-quantized model's
    extra tensors, say), which is left to `from_pretrained`."""
    files = [directory / name for name in _LAYOUT]
    if not all(path.is_file() for path in files):
        return None
    from model2vec import StaticModel
    from safetensors import safe_open
    from tokenizers import Tokenizer

    with safe_open(str(files[0]), framework="numpy") as tensors:
        if set(tensors.keys()) != {"embeddings"}:
            return None
        embeddings = tensors.get_tensor("embeddings")
    config = json.loads(files[2].read_text(encoding="utf-8"))
    # The defaults from_pretrained applies when config.json is silent.
    return StaticModel(
        vectors=embeddings.astype(np.float32),
        tokenizer=Tokenizer.from_file(str(files[1])),
        config=config,
        normalize=config.get("normalize", False),
        max_length=config.get("max_length", 512),
    )


class TableMeanEncoder:
    """model2vec's `encode` (truncate, tokenize, drop unknown tokens, average the token
    rows of equal-length texts together) for a lowercasing BERT tokenizer, tokenizing by
    table."""

    def __init__(self, static: Any) -> None:
        self._embedding: Matrix = static.embedding
        limit: int | None = static.max_length
        self._cut = None if limit is None else limit * int(static.median_token_length)
        self._tokenizer = TableTokenizer(
            static.tokenizer, max_tokens=limit, unknown=static.unk_token_id
        )

    @staticmethod
    def fits(static: Any) -> bool:
        """True for a plain lookup-and-average float32 model with a lowercasing BERT
        tokenizer (no token weights or remapping, which the table mean leaves out)."""
        return (
            getattr(static, "token_mapping", None) is None
            and getattr(static, "weights", None) is None
            and getattr(getattr(static, "embedding", None), "dtype", None) == np.float32
            and TableTokenizer.fits(getattr(static, "tokenizer", None))
        )

    def encode(self, texts: Sequence[str], batch_size: int) -> Matrix:
        """Mean token vectors, one row per text (zeros for a text with no known token)."""
        out = np.zeros((len(texts), self._embedding.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            ids = self.token_ids(texts[start : start + batch_size])
            by_length: dict[int, list[int]] = defaultdict(list)
            for row, tokens in enumerate(ids):
                if tokens:
                    by_length[len(tokens)].append(row)
            for rows in by_length.values():  # equal lengths stack into one lookup
                matrix = np.array([ids[row] for row in rows], dtype=np.int64)
                out[[start + row for row in rows]] = self._embedding[matrix].mean(axis=1)
        return out

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids model2vec's `tokenize` gives, one list per text."""
        if self._cut is not None:
            texts = [text[: self._cut] for text in texts]
        return self._tokenizer.token_ids(texts)
