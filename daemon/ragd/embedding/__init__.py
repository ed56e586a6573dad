"""Embedding: the `Embedder` seam every model is used through, and the vectors it gives.

Any object with `identity`, `dim` and `embed` is an embedder: the first-stage static
model (`ragd.embedding.static`), or the deterministic fake the tests register through
the same seam. Vectors are float32 and unit length, so cosine is a dot product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


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


def normalise(vectors: Matrix) -> Matrix:
    """Scale rows to unit length (zero rows stay zero) so cosine is a dot product."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Matrix = (vectors / norms).astype(np.float32, copy=False)
    return normalised


__all__ = ["Embedder", "Matrix", "normalise"]
