"""The first-stage embedder over the real local model: identity, width, vectors, errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragd.embedding import normalise
from ragd.embedding.static import Model2VecEmbedder, model_identity
from ragd.errors import ModelLoadError
from tests.conftest import MODEL_DIR

TEXTS = [
    "FastAPI — Tutorial / Path Parameters: declare path parameters with Python format strings",
    "tar — Archiving utility: create an archive and compress it with gzip",
    "",
    "status_code HTTPException OAuth2PasswordBearer",
    "Résumé of the CAFÉ — naïve ΟΔΟΣ 東京 tokens",
    "tab\there\x0bvertical\x00nul and\xa0no-break",
]


def test_the_dimension_is_read_from_the_weights_without_loading_the_model() -> None:
    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)

    assert embedder.dim == 256
    assert embedder.encoding_path is None  # not loaded


def test_vectors_are_unit_length_float32_rows_of_model2vecs_means() -> None:
    from model2vec import StaticModel

    public = StaticModel.from_pretrained(str(MODEL_DIR), quantize_to="float32")
    means = public.encode(TEXTS, normalize=False, use_multiprocessing=False)

    vectors = Model2VecEmbedder(str(MODEL_DIR), is_local=True).embed(TEXTS)

    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 256)
    assert np.array_equal(vectors, normalise(np.asarray(means, dtype=np.float32)))
    assert np.allclose(np.linalg.norm(vectors[[0, 1, 3, 4, 5]], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any()  # no token, no direction


def test_a_local_model_is_named_by_the_content_of_its_files(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    before = model_identity(str(copy), is_local=True)
    (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")

    assert before == model_identity(str(MODEL_DIR), is_local=True).replace(MODEL_DIR.name, "model")
    assert model_identity(str(copy), is_local=True) != before
    assert (
        model_identity("minishlab/potion-base-8M", is_local=False) == "hub:minishlab/potion-base-8M"
    )


def test_a_directory_without_weights_is_a_model_load_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=str(tmp_path)):
        Model2VecEmbedder(str(tmp_path), is_local=True).embed(["x"])


def test_a_worker_gets_the_embedder_without_its_loaded_model() -> None:
    import pickle

    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)
    embedder.embed(["load it"])

    copy = pickle.loads(pickle.dumps(embedder))

    assert embedder.encoding_path is not None and copy.encoding_path is None
    assert np.array_equal(copy.embed(TEXTS), embedder.embed(TEXTS))


def test_loading_a_local_model_does_not_import_the_hub_client() -> None:
    script = (
        "import sys; from ragd.embedding.static import Model2VecEmbedder; "
        f"Model2VecEmbedder({str(MODEL_DIR)!r}, is_local=True).embed(['x']); "
        "print(sorted(m for m in sys.modules if m.startswith('huggingface_hub.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout

    assert "huggingface_hub.repocard" not in loaded
    assert "huggingface_hub.hf_api" not in loaded
