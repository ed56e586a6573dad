"""The first-stage model: a model2vec static model, loaded on first use.

Owns naming the model precisely enough for the pipeline fingerprint (a local directory by
the hash of its files, a hub model by its id), loading it lazily (a run that changes
nothing never pays for it), its vector width without loading it where the weights' header
says, and the one-line error when it cannot be loaded. Every call into model2vec goes
through `ragd.adapters.model2vec`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragd.adapters.model2vec import LoadedModel, load_model, weights_dim
from ragd.embedding import Matrix, normalise
from ragd.embedding.identity import files_identity, hub_identity
from ragd.errors import ModelLoadError


def model_identity(model: str, *, is_local: bool) -> str:
    """Name a model by content when it is a local directory, by its hub id otherwise."""
    if not is_local:
        return hub_identity(model)
    directory = Path(model)
    return files_identity(
        directory,
        (directory / name for name in ("config.json", "model.safetensors")),
        hint="set [embedding] model or RAGD_EMBEDDING_MODEL to a model2vec directory",
    )


class Model2VecEmbedder:
    """A model2vec StaticModel, loaded lazily from a local directory or a hub id."""

    def __init__(self, model: str, *, is_local: bool, batch_size: int = 1024) -> None:
        self.model = model
        self.is_local = is_local
        self.batch_size = batch_size
        self._identity: str | None = None
        self._dim: int | None = None
        self._loaded: LoadedModel | None = None
        self.calls = 0
        self.texts_embedded = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for a worker process without the loaded model; it loads its own."""
        return self.__dict__ | {"_loaded": None}

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
            # The writer needs the dimension even when workers do all the embedding, and
            # loading the model for it would cost that process ~0.7 s and 100 MB.
            header_dim = weights_dim(Path(self.model)) if self.is_local else None
            self._dim = header_dim or self.load().dim
        return self._dim

    @property
    def encoding_path(self) -> str | None:
        """How texts are encoded once loaded ("table" or "encode"); None before."""
        return None if self._loaded is None else self._loaded.path

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Encode texts in batches on this thread (model2vec's process pool is not fork-safe)."""
        loaded = self.load()
        self.calls += 1
        self.texts_embedded += len(texts)
        return normalise(loaded.encode(texts, self.batch_size))

    def has_word(self, word: str) -> bool:
        """Whether `word` is one whole token of the model's vocabulary (loads the model)."""
        return self.load().has_token(word)

    def load(self) -> LoadedModel:
        """The model, loaded on first use; ModelLoadError naming it when it cannot be."""
        if self._loaded is not None:
            return self._loaded
        if self.is_local and not (Path(self.model) / "model.safetensors").is_file():
            raise ModelLoadError(
                f"embedding model directory {self.model} has no model.safetensors",
                hint="point [embedding] model or RAGD_EMBEDDING_MODEL at a model2vec directory",
            )
        try:
            self._loaded = load_model(self.model, is_local=self.is_local)
        except Exception as exc:  # model2vec/hub raise many types; all mean "cannot load"
            first_line = f"{type(exc).__name__}: {exc}".split("\n")[0]
            raise ModelLoadError(
                f"cannot load embedding model '{self.model}': {first_line}",
                hint="download it once, or set RAGD_EMBEDDING_MODEL to a local model2vec directory",
            ) from exc
        return self._loaded
