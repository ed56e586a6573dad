"""The model2vec embedder, with the real local model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragd.embedding import Model2VecEmbedder, _weights_dim
from tests.conftest import MODEL_DIR

TEXTS = [
    "FastAPI — Tutorial / Path Parameters: declare path parameters with Python format strings",
    "tar — Archiving utility: create an archive and compress it with gzip",
    "",
    "status_code HTTPException OAuth2PasswordBearer",
]


def test_the_dimension_is_read_from_the_weights_without_loading_the_model() -> None:
    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)

    assert embedder.dim == 256
    assert embedder._static is None


def test_weights_of_an_unexpected_layout_give_no_dimension(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 64)

    assert _weights_dim(tmp_path) is None
    assert _weights_dim(tmp_path / "missing") is None


def test_vectors_are_model2vecs_within_float16_rounding() -> None:
    from model2vec import StaticModel

    shipped = StaticModel.from_pretrained(str(MODEL_DIR)).encode(TEXTS).astype(np.float32)
    expected = shipped / np.maximum(np.linalg.norm(shipped, axis=1, keepdims=True), 1e-12)

    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)
    vectors = embedder.embed(TEXTS)

    assert embedder._static.embedding.dtype == np.float32  # widened once at load
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), 256)
    assert np.abs(vectors - expected).max() < 2e-3
    assert np.allclose(np.linalg.norm(vectors[[0, 1, 3]], axis=1), 1.0, atol=1e-5)
