"""Shared fixtures: paths to ../shared, a deterministic fake embedder, config writing."""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.s3_server import S3Server, running_s3_server

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MODEL_DIR = SHARED / "models" / "minilm-l6-static-256"
RERANK_MODEL_DIR = SHARED / "models" / "minilm-l6-v2-onnx-int8"
FASTAPI_DOCS = SHARED / "corpora" / "fastapi-docs"
GOLD = SHARED / "eval" / "fastapi-docs.jsonl"


class FakeEmbedder:
    """A deterministic embedder: each token hashes to a direction; a text is their sum.

    Texts sharing words point the same way, so vector search behaves sensibly in unit
    tests, and `calls` / `texts` count exactly what was sent to the "model".
    """

    def __init__(self, dim: int = 32, identity: str = "fake:v1") -> None:
        self._dim = dim
        self._identity = identity
        self.calls = 0
        self.texts: list[str] = []

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in text.lower().split():
                seed = int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "little")
                out[row] += np.random.default_rng(seed).standard_normal(self._dim)
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules marked slow first: CI runs the suite on two workers, a module at a
    time each, and a module whose fixture indexes a whole corpus for minutes would
    otherwise start last and keep one worker busy alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


TEST_BUCKET = "ragd-tests"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One SeaweedFS S3 server for the session, with the tests' bucket created."""
    with running_s3_server(tmp_path_factory.mktemp("seaweedfs")) as server:
        server.create_bucket(TEST_BUCKET)
        yield server


@pytest.fixture
def s3_uri(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty s3:// prefix, with the AWS variables that reach it set for this test
    and every process it starts (as an operator sets them for ragd)."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    return f"s3://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}"


def storage_section(uri: str, refresh_interval: str = "1s") -> str:
    """The [storage] section of a config whose index lives at `uri`."""
    return f'[storage]\nuri = "{uri}"\nrefresh_interval = "{refresh_interval}"\n'


@pytest.fixture
def fastapi_copy(tmp_path: Path) -> Path:
    """A writable copy of the fastapi-docs corpus."""
    target = tmp_path / "fastapi-docs"
    shutil.copytree(FASTAPI_DOCS, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def write_config(
    directory: Path,
    source_root: Path,
    *,
    model: Path = MODEL_DIR,
    rerank: Path | None = None,
    max_chars: int = 900,
    include: Sequence[str] = ("**/*.md",),
    extra: str = "",
    sections: str = "",
) -> Path:
    """Write a config.toml for a single folder source and return its path. The second
    stage is off unless `rerank` names its model: it embeds ~30 passages a second."""
    includes = ", ".join(f'"{p}"' for p in include)
    second = "enabled = false" if rerank is None else f'model = "{rerank}"'
    text = f"""
[daemon]
data_dir = "{directory / "data"}"

[embedding]
model = "{model}"

[rerank]
{second}

[chunking]
max_chars = {max_chars}

{sections}

[[sources]]
name = "docs"
type = "folder"
path = "{source_root}"
include = [{includes}]
{extra}
"""
    path = directory / "config.toml"
    path.write_text(text)
    return path
