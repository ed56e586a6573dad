"""Query filters on a two-source index, through `ragd query`, `ragd eval` and POST /v1/query:
`source` and `path` change what both retrievers return, before they pick their best."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FASTAPI_DOCS, write_config
from tests.integration.conftest import ragd_in_process, run_json
from tests.integration.daemon import Served, small_root

ADVANCED = FASTAPI_DOCS / "docs" / "en" / "docs" / "advanced"
PAGES = ("response-cookies.md", "response-headers.md", "middleware.md", "events.md")


def _advanced(target: Path) -> Path:
    (target / "more").mkdir(parents=True)
    for name in PAGES[:2]:
        shutil.copyfile(ADVANCED / name, target / name)
    for name in PAGES[2:]:
        shutil.copyfile(ADVANCED / name, target / "more" / name)
    return target


def _second_source(root: Path) -> str:
    return f'\n[[sources]]\nname = "advanced"\ntype = "folder"\npath = "{root}"\n'


@pytest.fixture(scope="module")
def two_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("filters")
    tutorial = small_root(base / "tutorial", 12)
    advanced = _advanced(base / "advanced")
    config = write_config(base, tutorial, extra=_second_source(advanced))
    run_json(config, "index")
    return config


def _paths(body: dict[str, Any]) -> list[str]:
    return [f"{hit['source']}:{hit['path']}" for hit in body["results"]]


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_a_source_filter_keeps_every_retriever_to_that_source(two_sources: Path, mode: str) -> None:
    question = "set a cookie in the response"
    unfiltered = _paths(run_json(two_sources, "query", question, "--mode", mode, "-k", "20"))
    assert any(p.startswith("docs:") for p in unfiltered)

    filtered = _paths(
        run_json(two_sources, "query", question, "--mode", mode, "--source", "advanced")
    )

    assert filtered and all(p.startswith("advanced:") for p in filtered)


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_a_path_filter_keeps_every_retriever_to_matching_keys(two_sources: Path, mode: str) -> None:
    body = run_json(two_sources, "query", "response", "--mode", mode, "--path", "more/*.md")

    assert _paths(body) and all(p.startswith("advanced:more/") for p in _paths(body))


def test_the_filter_applies_before_the_top_k_is_picked(two_sources: Path) -> None:
    question = "declare a request body with a Pydantic model"
    top = _paths(run_json(two_sources, "query", question, "-k", "1", "--mode", "bm25"))
    assert top[0].startswith("docs:")

    filtered = run_json(
        two_sources, "query", question, "-k", "1", "--mode", "bm25", "--source", "advanced"
    )

    assert len(_paths(filtered)) == 1 and _paths(filtered)[0].startswith("advanced:")


def test_an_unknown_source_is_a_usage_error_naming_the_sources(two_sources: Path) -> None:
    result = ragd_in_process(two_sources, "query", "cookie", "--source", "wiki")

    assert result.returncode == 2
    assert "unknown source 'wiki'" in result.stderr and "advanced, docs" in result.stderr


def test_eval_takes_the_same_filters(two_sources: Path, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {
                "id": "c1",
                "query": "set a cookie in the response",
                "kind": "paraphrase",
                "gold": [{"path": "response-cookies.md", "heading": "Response Cookies"}],
            }
        )
        + "\n"
    )

    report = run_json(two_sources, "eval", str(gold), "--mode", "bm25", "--source", "advanced")

    assert report["modes"]["bm25"]["overall"]["recall@5"] == 1.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(
        tmp_path,
        small_root(tmp_path / "tutorial", 6),
        extra_sources=_second_source(_advanced(tmp_path / "advanced")),
    )
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_http_queries_take_source_and_path(served: Served) -> None:
    by_source = served.query("response", mode="hybrid", source=["advanced"])
    by_path = served.query("response", mode="hybrid", source="advanced", path="more/**")

    assert _paths(by_source) and all(p.startswith("advanced:") for p in _paths(by_source))
    assert _paths(by_path) and all(p.startswith("advanced:more/") for p in _paths(by_path))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": "x", "source": 5}, "'source' must be a source name"),
        ({"query": "x", "path": ["a"]}, "'path' must be a glob"),
        ({"query": "x", "path": ""}, "path filter"),
        ({"query": "x", "source": "wiki"}, "unknown source 'wiki'"),
        ({"query": "x", "rerank": "no"}, "'rerank' must be true or false"),
    ],
)
def test_http_refuses_bad_filters_with_400(
    served: Served, body: dict[str, Any], message: str
) -> None:
    status, answer = served.post(
        "/v1/query", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )

    assert status == 400 and message in answer["error"]
