"""The model2vec embedder, with the real local model."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ragd.chunking import ChunkSettings, chunk_document
from ragd.embedding import MeanEncoder, Model2VecEmbedder, _from_directory, _weights_dim
from ragd.parsers import UnsupportedDocument, parse_document
from tests.conftest import FASTAPI_DOCS, MODEL_DIR, SHARED

TEXTS = [
    "FastAPI — Tutorial / Path Parameters: declare path parameters with Python format strings",
    "tar — Archiving utility: create an archive and compress it with gzip",
    "",
    "status_code HTTPException OAuth2PasswordBearer",
    # Accents, a final sigma, CJK, a vertical tab and a NUL (deleted by BERT's
    # normalizer), a no-break space.
    "Résumé of the CAFÉ — naïve ΟΔΟΣ 東京 tokens",
    "tab\there\x0bvertical\x00nul and\xa0no-break",
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
    assert np.allclose(np.linalg.norm(vectors[[0, 1, 3, 4, 5]], axis=1), 1.0, atol=1e-5)


def test_a_local_model_loads_as_model2vec_loads_it() -> None:
    from model2vec import StaticModel

    shipped = StaticModel.from_pretrained(str(MODEL_DIR))
    local = _from_directory(MODEL_DIR)

    assert local is not None
    assert np.array_equal(local.embedding, shipped.embedding)
    assert local.tokenizer.to_str() == shipped.tokenizer.to_str()
    assert (local.max_length, local.normalize, local.median_token_length, local.unk_token_id) == (
        shipped.max_length,
        shipped.normalize,
        shipped.median_token_length,
        shipped.unk_token_id,
    )
    assert np.array_equal(local.encode(TEXTS), shipped.encode(TEXTS))


def test_loading_a_local_model_does_not_import_the_hub_client() -> None:
    script = (
        "import sys; from ragd.embedding import Model2VecEmbedder; "
        f"Model2VecEmbedder({str(MODEL_DIR)!r}, is_local=True).embed(['x']); "
        "print(sorted(m for m in sys.modules if m.startswith('huggingface_hub.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout

    assert "huggingface_hub.repocard" not in loaded
    assert "huggingface_hub.hf_api" not in loaded


def test_a_model_with_more_than_embeddings_is_left_to_model2vec(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    for name in ("tokenizer.json", "config.json"):
        shutil.copy(MODEL_DIR / name, tmp_path / name)
    table = np.ones((4, 8), dtype=np.float32)
    save_file(
        {"embeddings": table, "weights": np.ones(4, dtype=np.float32)},
        tmp_path / "model.safetensors",
    )

    assert _from_directory(tmp_path) is None
    assert _from_directory(tmp_path / "missing") is None


def _corpus_chunk_texts() -> list[str]:
    """Every fastapi-docs chunk and those of every fourth tldr page, as ragd embeds them."""
    settings = ChunkSettings(900, 120)
    documents = [(p.read_bytes(), p.name) for p in sorted(FASTAPI_DOCS.rglob("*.md"))]
    with tarfile.open(SHARED / "corpora" / "tldr-pages.tar.gz") as archive:
        pages = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".md")]
        for member in pages[::4]:
            handle = archive.extractfile(member)
            assert handle is not None
            documents.append((handle.read(), member.name))
    texts = []
    for data, name in documents:
        try:
            texts += [c.embed_text for c in chunk_document(parse_document(data, name), settings)]
        except UnsupportedDocument:
            continue
    return texts


def test_corpus_chunks_get_the_token_ids_model2vec_gives() -> None:
    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)
    embedder.embed([])  # loads the model
    static, encoder = embedder._static, embedder._encoder
    assert encoder is not None
    texts = _corpus_chunk_texts()
    cut = static.max_length * static.median_token_length

    for start in range(0, len(texts), 1024):
        batch = texts[start : start + 1024]
        assert encoder.token_ids(batch) == static.tokenize([t[:cut] for t in batch])
    assert sum(not t.isascii() for t in texts) > len(texts) / 3  # translations too


def test_a_model_the_tables_do_not_know_is_encoded_by_model2vec() -> None:
    assert MeanEncoder.fits(SimpleNamespace(tokenizer=None)) is False
