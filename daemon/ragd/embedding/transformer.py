"""The second-stage model: a transformer sentence-embedding model on onnxruntime, loaded
on first use.

Slower than the first stage by about a thousand times (a passage costs tens of
milliseconds on one core), and better at paraphrases: ragd stores its vector of every
chunk at index time, content-addressed like the first stage's, so a query costs one
encode of the query. Owns naming the model (a local directory by the hash of the files
that decide its output, a hub id as given), fetching a hub model's ONNX export on first
use, loading it lazily, and the one-line error when it cannot be loaded. Every call into
onnxruntime goes through `ragd.adapters.onnxruntime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragd.adapters.huggingface_hub import download
from ragd.adapters.onnxruntime import (
    GRAPH_FILES,
    POOLING_CONFIG,
    SENTENCE_CONFIG,
    TOKENIZER_FILE,
    ModelFiles,
    ModelFilesError,
    SentenceEncoder,
    model_files,
)
from ragd.embedding import Matrix, normalise
from ragd.embedding.identity import files_identity, hub_identity
from ragd.errors import ModelLoadError

# What is fetched of a hub repository: sentence-transformers keeps its ONNX export under
# onnx/ (onnx/model.onnx is the full-precision graph) beside the tokenizer and configs.
HUB_FILES = (GRAPH_FILES[1], TOKENIZER_FILE, SENTENCE_CONFIG, POOLING_CONFIG, "config.json")
_HINT = (
    "set [rerank] model or RAGD_RERANK_MODEL to a directory holding model.onnx and "
    "tokenizer.json, or disable the second stage with [rerank] enabled = false"
)


class TransformerEmbedder:
    """A sentence-transformers model exported to ONNX, from a local directory or a hub id.

    `threads` is how many the model may use per call: one in a daemon (its filler runs
    at low priority, and queries on other threads keep a core), all in `ragd index`.
    """

    def __init__(self, model: str, *, is_local: bool, threads: int = 1) -> None:
        self.model = model
        self.is_local = is_local
        self.threads = threads
        self._identity: str | None = None
        self._encoder: SentenceEncoder | None = None
        self.calls = 0
        self.texts_embedded = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the loaded session; a copy loads its own."""
        return self.__dict__ | {"_encoder": None}

    def with_threads(self, threads: int) -> TransformerEmbedder:
        """The same model, to be run with `threads` threads (loaded again on first use)."""
        copy = TransformerEmbedder(self.model, is_local=self.is_local, threads=threads)
        copy._identity = self._identity
        return copy

    @property
    def identity(self) -> str:
        """Content hash of a local model's files, or the hub id."""
        if self._identity is None:
            if self.is_local:
                files = self._files(Path(self.model))
                self._identity = files_identity(Path(self.model), files.identity_files, hint=_HINT)
            else:
                self._identity = hub_identity(self.model)
        return self._identity

    @property
    def dim(self) -> int:
        """The vector width (the model is loaded to learn it)."""
        return self.load().dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors for texts, one row each."""
        encoder = self.load()
        self.calls += 1
        self.texts_embedded += len(texts)
        return normalise(encoder.encode(texts))

    def load(self) -> SentenceEncoder:
        """The model, loaded on first use; ModelLoadError naming it when it cannot be."""
        if self._encoder is not None:
            return self._encoder
        directory = Path(self.model) if self.is_local else self._fetch()
        files = self._files(directory)
        try:
            self._encoder = SentenceEncoder(files, threads=self.threads)
        except ModelFilesError as exc:
            raise ModelLoadError(
                f"cannot load second-stage model '{self.model}': {exc}", hint=_HINT
            ) from exc
        except Exception as exc:  # onnxruntime raises its own types for a bad graph
            first_line = f"{type(exc).__name__}: {exc}".split("\n")[0]
            raise ModelLoadError(
                f"cannot load second-stage model '{self.model}': {first_line}", hint=_HINT
            ) from exc
        return self._encoder

    def _files(self, directory: Path) -> ModelFiles:
        try:
            return model_files(directory)
        except ModelFilesError as exc:
            raise ModelLoadError(
                f"second-stage model '{self.model}' is not usable: {exc}", hint=_HINT
            ) from exc

    def _fetch(self) -> Path:
        try:
            return download(self.model, HUB_FILES)
        except Exception as exc:  # the hub client raises many types; all mean "not fetched"
            first_line = f"{type(exc).__name__}: {exc}".split("\n")[0]
            raise ModelLoadError(
                f"cannot fetch second-stage model '{self.model}': {first_line}",
                hint="download it once with network access, or " + _HINT,
            ) from exc
