"""The second-stage model on onnxruntime: the shared all-MiniLM-L6-v2 int8 export, loaded
from its directory (no network), and the one-line errors when a model cannot be used."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ragd.embedding.transformer import TransformerEmbedder
from ragd.errors import ModelLoadError
from tests.conftest import RERANK_MODEL_DIR


@pytest.fixture(scope="module")
def model() -> TransformerEmbedder:
    return TransformerEmbedder(str(RERANK_MODEL_DIR), is_local=True)


def test_vectors_are_unit_length_with_the_models_width(model: TransformerEmbedder) -> None:
    vectors = model.embed(["how do I declare a request body?", "tar", ""])

    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_same_text_gives_the_same_vector_alone_or_in_a_batch(
    model: TransformerEmbedder,
) -> None:
    alone = model.embed(["Extract a compressed archive into a directory"])[0]
    batch = model.embed(
        ["something else entirely", "Extract a compressed archive into a directory"]
    )

    assert np.array_equal(alone, batch[1])


def test_a_paraphrase_is_nearer_than_an_unrelated_text(model: TransformerEmbedder) -> None:
    query, paraphrase, unrelated = model.embed(
        [
            "undo my last commit but keep the changes",
            "git reset — Undo the last commit, keeping its changes in the filesystem",
            "Change the water of the aquarium every week",
        ]
    )

    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_long_texts_are_truncated_not_refused(model: TransformerEmbedder) -> None:
    vector = model.embed(["word " * 5000])[0]

    assert np.isfinite(vector).all()


def test_the_identity_names_the_directory_and_its_files_content(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(RERANK_MODEL_DIR, copy)
    before = TransformerEmbedder(str(copy), is_local=True).identity
    tokenizer = copy / "tokenizer.json"
    tokenizer.chmod(0o644)
    tokenizer.write_text(tokenizer.read_text() + "\n")

    after = TransformerEmbedder(str(copy), is_local=True).identity

    assert before.startswith("dir:model:") and after != before


def test_a_hub_id_is_named_by_the_id() -> None:
    model = TransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2", is_local=False)

    assert model.identity == "hub:sentence-transformers/all-MiniLM-L6-v2"


def test_a_directory_without_a_graph_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")

    with pytest.raises(ModelLoadError, match=r"no model\.onnx or onnx/model\.onnx") as error:
        TransformerEmbedder(str(tmp_path), is_local=True).embed(["x"])

    assert "\n" not in str(error.value) and "RAGD_RERANK_MODEL" in str(error.value)


def test_a_graph_that_is_not_onnx_is_a_one_line_error(tmp_path: Path) -> None:
    shutil.copy(RERANK_MODEL_DIR / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"not a graph")

    with pytest.raises(ModelLoadError, match="cannot load second-stage model") as error:
        TransformerEmbedder(str(tmp_path), is_local=True).embed(["x"])

    assert "\n" not in str(error.value)


def test_a_hub_model_not_in_the_cache_offline_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))

    with pytest.raises(ModelLoadError, match="cannot fetch second-stage model") as error:
        TransformerEmbedder("nobody/no-such-model", is_local=False).embed(["x"])

    assert "\n" not in str(error.value)


def test_pooling_it_cannot_do_is_refused(tmp_path: Path) -> None:
    for name in ("model.onnx", "tokenizer.json"):
        (tmp_path / name).symlink_to(RERANK_MODEL_DIR / name)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_max_tokens": true}')

    with pytest.raises(ModelLoadError, match="pooling pooling_mode_max_tokens is not supported"):
        TransformerEmbedder(str(tmp_path), is_local=True).embed(["x"])
