"""`ragd reembed` as an operator runs it after changing the model: the real command line, the
real models, a handful of fastapi-docs pages. Every distinct chunk text is embedded once,
the stores agree afterwards, `ragd index` then has nothing to embed, and queries rank as a
fresh index built with the new model ranks them; locally, and on a local Ray with the index
(and the Ray job's datasets) on a real S3 server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from ragd.adapters.object_store import object_store
from ragd.stores.publishing import latest_generation
from tests.conftest import FASTAPI_DOCS, MODEL_DIR, storage_section, write_config
from tests.integration.conftest import run_json, run_ragd

PAGES = (
    "tutorial/static-files.md",
    "tutorial/header-params.md",
    "tutorial/request-forms.md",
    "tutorial/debugging.md",
    "tutorial/testing.md",
    "how-to/graphql.md",
)
QUERIES = ("mount a directory of static files", "run the app under a debugger")


def other_model(target: Path, *, dim: int | None = None) -> Path:
    """A copy of the test model with every token's vector re-weighted (and cut to `dim`
    columns when given): another identity and another ranking, deterministically."""
    target.mkdir()
    for name in ("config.json", "tokenizer.json", "modules.json"):
        shutil.copy(MODEL_DIR / name, target / name)
    embeddings = load_file(str(MODEL_DIR / "model.safetensors"))["embeddings"].astype(np.float32)
    weights = np.random.default_rng(29).uniform(0.1, 10.0, size=(embeddings.shape[0], 1))
    scaled = (embeddings * weights)[:, : dim or embeddings.shape[1]]
    save_file({"embeddings": scaled.astype(np.float16)}, str(target / "model.safetensors"))
    return target


def ranking(config: Path, query: str, mode: str) -> list[tuple[str, float]]:
    found = run_json(config, "query", query, "--mode", mode, "-k", "10")
    return [(hit["chunk_id"], round(hit["score"], 4)) for hit in found["results"]]


def rankings(config: Path) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """Vector rankings of every query, and the hybrid one of the first (each is a process)."""
    asked = [(query, "vector") for query in QUERIES] + [(QUERIES[0], "hybrid")]
    return {(query, mode): ranking(config, query, mode) for query, mode in asked}


class Setting:
    """The pages, model B, and what a fresh index built with model B answers."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.corpus = base / "corpus"
        for page in PAGES:
            target = self.corpus / page
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(FASTAPI_DOCS / "docs" / "en" / "docs" / page, target)
        self.model_b = other_model(base / "model-b")
        (base / "fresh").mkdir()
        fresh = write_config(base / "fresh", self.corpus, model=self.model_b)
        self.fresh_index = run_json(fresh, "index")
        self.fresh = rankings(fresh)

    def indexed_with_model_a(self, directory: Path, sections: str = "") -> tuple[Path, Any]:
        directory.mkdir()
        config = write_config(directory, self.corpus, sections=sections)
        return config, run_json(config, "index")


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Setting:
    return Setting(tmp_path_factory.mktemp("reembed"))


def _switched_as_if_fresh(setting: Setting, config: Path, first: Any, report: Any) -> None:
    """What every re-embedding must leave, whatever it ran on."""
    distinct = setting.fresh_index["chunks"]["embedded"]
    assert first["chunks"]["embedded"] == distinct  # model A's distinct texts: the same
    assert report["texts"] == {"first_stage": distinct, "second_stage": 0}
    assert report["documents_switched"] == len(PAGES) and report["documents_left"] == 0
    after = run_json(config, "index")
    assert after["chunks"]["embedded"] == 0
    assert after["documents"]["changed"] == after["documents"]["added"] == 0
    status = run_json(config, "status")
    assert status["stores_agree"] is True
    assert all(source["stale"] == 0 for source in status["sources"])
    assert rankings(config) == setting.fresh


def test_reembed_switches_to_the_new_model_as_a_fresh_index_would(
    setting: Setting, tmp_path: Path
) -> None:
    config, first = setting.indexed_with_model_a(tmp_path / "local")
    before = ranking(config, QUERIES[0], "vector")
    write_config(tmp_path / "local", setting.corpus, model=setting.model_b)

    report = run_json(config, "reembed")

    assert report["backend"] == "local" and report["table_rebuilt"] is False
    assert before != setting.fresh[(QUERIES[0], "vector")]  # model B really ranks otherwise
    _switched_as_if_fresh(setting, config, first, report)


@pytest.mark.ray
def test_reembed_on_ray_with_the_index_on_object_storage_switches_as_a_fresh_index_would(
    setting: Setting, tmp_path: Path, s3_uri: str
) -> None:
    storage = storage_section(s3_uri)
    config, first = setting.indexed_with_model_a(tmp_path / "ray", storage)
    store = object_store(s3_uri)
    published = latest_generation(store)
    write_config(tmp_path / "ray", setting.corpus, model=setting.model_b, sections=storage)

    result = run_ragd(config, "reembed", "--ray", "--ray-cpus", "2", "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["backend"] == "ray"
    assert not store.names("reembed")  # the job's datasets, on the object store, are gone
    assert latest_generation(store) == (published or 0) + 1  # replicas get the switch
    _switched_as_if_fresh(setting, config, first, report)


def test_a_model_of_another_width_rebuilds_the_vector_table(
    setting: Setting, tmp_path: Path
) -> None:
    config, first = setting.indexed_with_model_a(tmp_path / "narrow")
    narrow = other_model(tmp_path / "model-narrow", dim=128)
    write_config(tmp_path / "narrow", setting.corpus, model=narrow)

    report = run_json(config, "reembed")
    after = run_json(config, "index")

    assert report["table_rebuilt"] is True
    assert report["texts"]["first_stage"] == first["chunks"]["embedded"]
    assert report["documents_switched"] == len(PAGES)
    assert after["chunks"]["embedded"] == 0
    assert run_json(config, "status")["stores_agree"] is True
    assert ranking(config, QUERIES[0], "vector")
