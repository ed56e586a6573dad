"""Embedding models: the `Embedder` seam and the model2vec implementation.

Owns turning texts into unit-length float32 vectors and naming the model precisely
enough for the pipeline fingerprint. The model is loaded on first use, so runs that
change nothing never pay for it. Any object with `identity`, `dim` and `embed` is an
embedder; tests register a deterministic fake through the same seam.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ragd.errors import ModelLoadError
from ragd.token_tables import TableTokenizer

Matrix = npt.NDArray[np.float32]

_MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit on its JSON header


class Embedder(Protocol):
    """What the indexer and the query path need from a model."""

    @property
    def identity(self) -> str:
        """A stable name for the model's exact weights (part of the pipeline fingerprint)."""
        ...

    @property
    def dim(self) -> int:
        """The vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Vectors for texts: shape (len(texts), dim), float32, L2-normalised."""
        ...


def model_identity(model: str, *, is_local: bool) -> str:
    """Name a model by content when it is a local directory, by its hub id otherwise.

    Hashing the weight file means replacing the files in place (a new distillation, a new
    quantisation) changes the fingerprint, as it must.
    """
    if not is_local:
        return f"hub:{model}"
    directory = Path(model)
    digest = hashlib.sha256()
    for name in ("config.json", "model.safetensors"):
        path = directory / name
        try:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise ModelLoadError(
                f"cannot read embedding model file {path}: {exc.strerror}",
                hint="set [embedding] model or RAGD_EMBEDDING_MODEL to a model2vec directory",
            ) from exc
    return f"dir:{directory.name}:{digest.hexdigest()[:16]}"


class Model2VecEmbedder:
    """A model2vec StaticModel, loaded lazily from a local directory or a hub id."""

    def __init__(self, model: str, *, is_local: bool, batch_size: int = 1024) -> None:
        self.model = model
        self.is_local = is_local
        self.batch_size = batch_size
        self._identity: str | None = None
        self._dim: int | None = None
        self._static: Any = None
        self._encoder: MeanEncoder | None = None
        self.calls = 0
        self.texts_embedded = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for a worker process without the loaded model; it loads its own."""
        return self.__dict__ | {"_static": None, "_encoder": None}

    @property
    def identity(self) -> str:
        """Content hash of a local model's files, or the hub id."""
        if self._identity is None:
            self._identity = model_identity(self.model, is_local=self.is_local)
        return self._identity

    @property
    def dim(self) -> int:
        """The model's vector dimension: read from a local model's weights, else loaded."""
        if self._dim is None:
            # The writer needs the dimension even when a worker does all the embedding;
            # loading the model for it cost that process ~0.7 s and 100 MB.
            header_dim = _weights_dim(Path(self.model)) if self.is_local else None
            self._dim = header_dim or int(self._load().dim)
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Encode texts in batches on this thread (model2vec's process pool is not fork-safe)."""
        static = self._load()
        self.calls += 1
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, int(static.dim)), dtype=np.float32)
        if self._encoder is not None:
            return normalise(self._encoder.encode(texts, self.batch_size))
        # model2vec's threaded path flips TOKENIZERS_PARALLELISM off for good; stay single path.
        vectors = static.encode(list(texts), batch_size=self.batch_size, use_multiprocessing=False)
        return normalise(np.asarray(vectors, dtype=np.float32))

    def _load(self) -> Any:
        if self._static is not None:
            return self._static
        if self.is_local and not (Path(self.model) / "model.safetensors").is_file():
            raise ModelLoadError(
                f"embedding model directory {self.model} has no model.safetensors",
                hint="point [embedding] model or RAGD_EMBEDDING_MODEL at a model2vec directory",
            )
        try:
            static = _from_directory(Path(self.model)) if self.is_local else None
            if static is None:
                from model2vec import StaticModel

                static = StaticModel.from_pretrained(self.model)
        except Exception as exc:  # model2vec/hub raise many types; all mean "cannot load"
            raise ModelLoadError(
                f"cannot load embedding model '{self.model}': {type(exc).__name__}: {exc}".split(
                    "\n"
                )[0],
                hint="download it once, or set RAGD_EMBEDDING_MODEL to a local model2vec directory",
            ) from exc
        if static.embedding.dtype == np.float16:
            # numpy averages float16 rows slowly (a cast per reduction): widening the table
            # once makes encoding ~1.6x faster; each vector moves by at most float16 rounding.
            static.embedding = static.embedding.astype(np.float32)
        self._encoder = MeanEncoder(static) if MeanEncoder.fits(static) else None
        self._static = static
        return static


_STATIC_ATTRIBUTES = (
    "embedding",
    "max_length",
    "median_token_length",
    "token_mapping",
    "unk_token_id",
    "weights",
)


class MeanEncoder:
    """model2vec's `encode` (truncate, tokenize, drop unknown tokens, average the token
    rows) for a lowercasing BERT tokenizer, tokenizing by table (`ragd.token_tables`):
    the same token ids, ~4x less CPU."""

    def __init__(self, static: Any) -> None:
        self._table: Matrix = static.embedding
        limit: int | None = static.max_length
        self._cut = None if limit is None else limit * int(static.median_token_length)
        self._tokenizer = TableTokenizer(
            static.tokenizer, max_tokens=limit, unknown=static.unk_token_id
        )

    @staticmethod
    def fits(static: Any) -> bool:
        """True for a plain lookup-and-average model with a lowercasing BERT tokenizer."""
        # getattr: these are model2vec's attributes, not a promised API; if they change,
        # the model's own encode is used.
        return (
            all(hasattr(static, name) for name in _STATIC_ATTRIBUTES)
            and static.token_mapping is None
            and static.weights is None
            and TableTokenizer.fits(getattr(static, "tokenizer", None))
        )

    def encode(self, texts: Sequence[str], batch_size: int) -> Matrix:
        """Mean token vectors, one row per text (zeros for a text with no known token)."""
        out = np.zeros((len(texts), self._table.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            ids = self.token_ids(texts[start : start + batch_size])
            by_length: dict[int, list[int]] = defaultdict(list)
            for row, tokens in enumerate(ids):
                if tokens:
                    by_length[len(tokens)].append(row)
            for rows in by_length.values():  # equal lengths stack into one lookup
                matrix = np.array([ids[row] for row in rows], dtype=np.int64)
                out[[start + row for row in rows]] = self._table[matrix].mean(axis=1)
        return out

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids model2vec's `tokenize` gives, one list per text."""
        if self._cut is not None:
            texts = [text[: self._cut] for text in texts]
        return self._tokenizer.token_ids(texts)


def _from_directory(directory: Path) -> Any | None:
    """A StaticModel from a local directory in model2vec's own layout, or None for others.

    `StaticModel.from_pretrained` also reads the README's model card through
    huggingface_hub, whose import took ~0.4 s of the ~0.65 s a load costs, in every
    process that loads a model (each index worker, each `ragd query`). The card names the
    base model and languages; encoding reads neither. A vocabulary-quantized model (extra
    tensors) or another layout is left to `from_pretrained`.
    """
    files = [directory / name for name in ("model.safetensors", "tokenizer.json", "config.json")]
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
        vectors=embeddings,
        tokenizer=Tokenizer.from_file(str(files[1])),
        config=config,
        normalize=config.get("normalize", False),
        max_length=config.get("max_length", 512),
    )


def _weights_dim(directory: Path) -> int | None:
    """The width of the `embeddings` tensor in model.safetensors, from its JSON header."""
    try:
        with (directory / "model.safetensors").open("rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if not 2 <= length <= _MAX_HEADER_BYTES:
                return None
            header = json.loads(handle.read(length))
        _rows, width = header["embeddings"]["shape"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not the layout this expects: load the model to find out
    return width if isinstance(width, int) and width > 0 else None


def normalise(vectors: Matrix) -> Matrix:
    """Scale rows to unit length (zero rows stay zero) so cosine is a dot product."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Matrix = (vectors / norms).astype(np.float32, copy=False)
    return normalised
