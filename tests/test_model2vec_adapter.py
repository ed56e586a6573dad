"""The model2vec adapter's fast paths give exactly what model2vec's public API gives, and
are used only on the versions they were tested with."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ragd.adapters import model2vec as adapter
from ragd.adapters.model2vec import TableMeanEncoder, load_model, weights_dim
from ragd.indexing.chunking import ChunkSettings, chunk_document
from ragd.indexing.parsers import UnsupportedDocument, parse_document
from tests.conftest import FASTAPI_DOCS, MODEL_DIR, SHARED


def corpus_chunk_texts() -> list[str]:
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


@pytest.fixture(scope="module")
def texts() -> list[str]:
    found = corpus_chunk_texts()
    assert sum(not t.isascii() for t in found) > len(found) / 3  # translations too
    return found


def test_the_installed_versions_are_ones_the_fast_paths_were_tested_with() -> None:
    # CI installs the newest versions in pyproject's ranges: a release outside the tested
    # ones fails here, so the range and the tested versions move together.
    assert adapter.fast_paths_supported()


def test_the_fast_load_builds_the_model_from_pretrained_builds() -> None:
    from model2vec import StaticModel

    public = StaticModel.from_pretrained(str(MODEL_DIR), quantize_to="float32")
    fast = adapter._from_directory(MODEL_DIR)

    assert fast is not None
    assert fast.embedding.dtype == public.embedding.dtype == np.float32
    assert np.array_equal(fast.embedding, public.embedding)
    assert fast.tokenizer.to_str() == public.tokenizer.to_str()
    assert (fast.max_length, fast.normalize, fast.median_token_length, fast.unk_token_id) == (
        public.max_length,
        public.normalize,
        public.median_token_length,
        public.unk_token_id,
    )


def test_the_table_encoder_gives_model2vecs_vectors_bit_for_bit_on_real_corpora(
    texts: list[str],
) -> None:
    fast = load_model(str(MODEL_DIR), is_local=True, fast=True)
    public = load_model(str(MODEL_DIR), is_local=True, fast=False)

    assert (fast.path, public.path) == ("table", "encode")
    for start in range(0, len(texts), 4096):
        batch = texts[start : start + 4096]
        assert np.array_equal(fast.encode(batch, 1024), public.encode(batch, 1024))


def test_the_table_encoder_gives_model2vecs_token_ids_on_real_corpora(texts: list[str]) -> None:
    static = load_model(str(MODEL_DIR), is_local=True, fast=False).static
    encoder = TableMeanEncoder(static)
    cut = static.max_length * static.median_token_length

    for start in range(0, len(texts), 1024):
        batch = texts[start : start + 1024]
        assert encoder.token_ids(batch) == static.tokenize([t[:cut] for t in batch])


def test_an_untested_model2vec_version_takes_the_public_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(adapter, "MODEL2VEC_TESTED", ((9, 0), (9, 0)))

    model = load_model(str(MODEL_DIR), is_local=True)

    assert not adapter.fast_paths_supported()
    assert model.path == "encode"


def test_a_model_the_tables_do_not_know_is_encoded_by_model2vec() -> None:
    assert TableMeanEncoder.fits(SimpleNamespace(tokenizer=None)) is False


def test_a_model_with_more_than_embeddings_is_left_to_model2vec(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    for name in ("tokenizer.json", "config.json"):
        shutil.copy(MODEL_DIR / name, tmp_path / name)
    save_file(
        {"embeddings": np.ones((4, 8), dtype=np.float32), "weights": np.ones(4, dtype=np.float32)},
        tmp_path / "model.safetensors",
    )

    assert adapter._from_directory(tmp_path) is None
    assert adapter._from_directory(tmp_path / "missing") is None


def test_the_width_is_read_from_the_weights_header() -> None:
    assert weights_dim(MODEL_DIR) == 256


def test_weights_of_an_unexpected_layout_give_no_width(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 64)

    assert weights_dim(tmp_path) is None
    assert weights_dim(tmp_path / "missing") is None
