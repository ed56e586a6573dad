"""The index on object storage: `[storage] uri` puts the LanceDB tables on a real S3 server
(SeaweedFS on loopback), and `ragd index`, `ragd query` and `ragd status` work as they do
with everything on local disk. Credentials and the endpoint come from the AWS variables.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from ragd.cli import main as cli_main
from tests.conftest import FASTAPI_DOCS, storage_section, write_config
from tests.integration.conftest import run_json, run_ragd

QUESTIONS = (
    "How do I declare a request body?",
    "dependency injection with yield",
    "OAuth2 password flow with JWT tokens",
)


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "fastapi-docs"
    shutil.copytree(FASTAPI_DOCS, root)
    return root


def _ranking(config: Path, question: str, mode: str) -> list[str]:
    """The top 10 of `ragd query --json`, run through the CLI's entry point in this
    process (the AWS variables are this process's): 18 queries without 18 start-ups."""
    out = io.StringIO()
    args = ["--config", str(config), "query", question, "--mode", mode, "-k", "10", "--json"]
    with contextlib.redirect_stdout(out):
        assert cli_main(args) == 0
    return [hit["chunk_id"] for hit in json.loads(out.getvalue())["results"]]


def test_index_query_and_status_on_object_storage_match_local_disk(
    tmp_path: Path, docs: Path, s3_uri: str
) -> None:
    local_dir, remote_dir = tmp_path / "local", tmp_path / "remote"
    local_dir.mkdir()
    remote_dir.mkdir()
    local = write_config(local_dir, docs)
    remote = write_config(remote_dir, docs, sections=storage_section(s3_uri))

    local_report, remote_report = run_json(local, "index"), run_json(remote, "index")

    assert remote_report["documents"] == local_report["documents"]
    assert remote_report["chunks"] == local_report["chunks"]
    assert not (remote_dir / "data" / "lancedb").exists(), "vectors were written locally"
    for question in QUESTIONS:
        for mode in ("hybrid", "vector", "bm25"):
            assert _ranking(remote, question, mode) == _ranking(local, question, mode)
    status = run_json(remote, "status")
    assert status["stores_agree"] is True
    [source] = status["sources"]
    assert source["documents"] == local_report["documents"]["added"]


def test_a_second_run_on_object_storage_changes_and_embeds_nothing(
    tmp_path: Path, docs: Path, s3_uri: str
) -> None:
    config = write_config(tmp_path, docs, sections=storage_section(s3_uri))
    first = run_json(config, "index")

    again = run_json(config, "index")

    assert again["documents"]["unchanged"] == first["documents"]["added"]
    assert again["chunks"] == {"embedded": 0, "reused": 0, "deleted": 0}


def test_a_plain_http_endpoint_without_allow_http_is_a_configuration_error(
    tmp_path: Path, docs: Path, s3_uri: str
) -> None:
    config = write_config(tmp_path, docs, sections=storage_section(s3_uri))

    result = run_ragd(config, "index", env={"AWS_ALLOW_HTTP": "false"})

    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "plain http" in line and "AWS_ALLOW_HTTP=true" in line


def test_an_unreachable_object_store_is_a_one_line_error_with_a_hint(
    tmp_path: Path, docs: Path, s3_uri: str
) -> None:
    config = write_config(tmp_path, docs, sections=storage_section(s3_uri))

    result = run_ragd(config, "index", env={"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, timeout=120)

    assert result.returncode == 1, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("ragd: error: cannot ") and " s3://" in line
    assert "(check that the object store answers at AWS_ENDPOINT_URL" in line
