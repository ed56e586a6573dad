"""`ragd index` end to end over a copy of fastapi-docs, with the real model and stores."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ragd.stores.keywords import KeywordStore
from ragd.stores.manifest_reader import ManifestReader
from ragd.stores.vectors import VectorStore
from tests.conftest import MODEL_DIR, write_config
from tests.integration.conftest import copy_corpus, ragd_in_process, run_json, run_ragd
from tests.integration.daemon import small_root

BODY = Path("docs/en/docs/tutorial/body.md")


def _stores(config: Path) -> tuple[ManifestReader, VectorStore, KeywordStore]:
    data = config.parent / "data"
    return (
        ManifestReader.open(data / "state.db"),
        VectorStore.open_readonly(data / "lancedb"),
        KeywordStore.open_readonly(data / "tantivy"),
    )


def test_first_index_adds_every_markdown_file_and_second_changes_nothing(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    markdown_files = len(list(corpus.rglob("*.md")))

    first = run_json(config, "index")
    second = run_json(config, "index")

    assert markdown_files == 155
    assert first["documents"]["added"] == 155
    assert first["documents"]["failed"] == 0
    assert first["chunks"]["embedded"] > 155
    assert second["documents"] == {
        "added": 0,
        "changed": 0,
        "unchanged": 155,
        "deleted": 0,
        "failed": 0,
    }
    assert second["chunks"]["embedded"] == 0


def test_editing_one_paragraph_re_embeds_only_that_section(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    path = corpus / BODY
    old = "Sending a body with a `GET` request has an undefined behavior in the specifications"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, "Zanzibar quokkas deliver request bodies by carrier pigeon"))

    report = run_json(config, "index")
    new_hits = run_json(config, "query", "Zanzibar quokkas carrier pigeon", "--mode", "bm25")
    old_hits = run_json(config, "query", old, "--mode", "bm25", "-k", "50")

    assert report["documents"]["changed"] == 1
    assert report["documents"]["unchanged"] == 154
    assert 1 <= report["chunks"]["embedded"] <= 2
    assert new_hits["results"][0]["path"] == BODY.as_posix()
    assert "Zanzibar quokkas" in new_hits["results"][0]["text"]
    assert not any(old in hit["text"] for hit in old_hits["results"])


def test_deleting_a_file_removes_its_chunks_from_every_store(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    manifest, vectors, keywords = _stores(config)
    doomed = {c.chunk_id for c in manifest.chunks_of(f"docs:{BODY.as_posix()}")}
    manifest.close()
    assert doomed

    (corpus / BODY).unlink()
    report = run_json(config, "index")

    manifest, vectors, keywords = _stores(config)
    assert report["documents"]["deleted"] == 1
    assert report["chunks"]["deleted"] == len(doomed)
    assert not doomed & vectors.chunk_ids()
    assert not doomed & keywords.chunk_ids()
    assert manifest.document(f"docs:{BODY.as_posix()}") is None


def test_renaming_a_file_re_embeds_nothing(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")

    (corpus / BODY).rename(corpus / BODY.with_name("request-body.md"))
    report = run_json(config, "index")
    hits = run_json(config, "query", "undefined behavior GET request body", "--mode", "bm25")

    assert report["documents"]["added"] == 1
    assert report["documents"]["deleted"] == 1
    assert report["chunks"]["embedded"] == 0
    assert report["chunks"]["reused"] > 0
    assert hits["results"][0]["path"].endswith("tutorial/request-body.md")


def test_changing_max_chars_re_processes_every_document(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")

    write_config(tmp_path, corpus, max_chars=600)
    report = run_json(config, "index")

    assert report["documents"]["changed"] == 155
    assert report["documents"]["unchanged"] == 0


def test_changing_the_model_re_processes_and_re_embeds_every_document(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    first = run_json(config, "index")
    other_model = tmp_path / "other-model"
    other_model.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "modules.json"):
        (other_model / name).write_bytes((MODEL_DIR / name).read_bytes())
    settings = json.loads((MODEL_DIR / "config.json").read_text())
    settings["normalize"] = not settings.get("normalize", True)  # a genuinely different model
    (other_model / "config.json").write_text(json.dumps(settings))

    write_config(tmp_path, corpus, model=other_model)
    report = run_json(config, "index")

    assert report["documents"]["changed"] == 155
    assert report["chunks"]["embedded"] == first["chunks"]["embedded"]


def test_bad_files_are_reported_with_reasons_and_the_rest_indexed(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    (corpus / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (corpus / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text\n".encode("latin-1"))
    (corpus / "empty.md").write_bytes(b"")
    unreadable = corpus / "secret.md"
    unreadable.write_text("# Secret\n\nnot for you\n")
    unreadable.chmod(0o000)
    config = write_config(tmp_path, corpus)

    report = run_ragd(config, "index", "--json", unreadable_as_root=True)
    status = run_json(config, "status")

    assert report.returncode == 0, report.stderr
    counts = json.loads(report.stdout)["documents"]
    assert counts["failed"] == 3
    assert counts["added"] == 156  # 155 docs + the empty file
    source = status["sources"][0]
    reasons = {d["path"]: d["error"] for d in source["failed_documents"]}
    assert "binary" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "permission denied" in reasons["secret.md"]
    assert source["empty_documents"] == ["empty.md"]
    assert source["documents"] == 159


def test_a_missing_source_root_fails_the_run_and_deletes_nothing(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus")
    config = write_config(tmp_path, corpus)
    run_json(config, "index")
    corpus.rename(tmp_path / "moved-away")

    result = ragd_in_process(config, "index")
    status = run_json(config, "status")

    assert result.returncode == 1
    assert "cannot open root" in result.stderr and "nothing was deleted" in result.stderr
    assert "Traceback" not in result.stderr
    assert status["sources"][0]["documents"] == 155


def test_symlinks_and_special_files_a_scan_skipped_are_counted_and_listed_by_status(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", 3)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("# Secret\n\nnot under the root\n")
    (root / "secret.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "more").symlink_to(tmp_path / "outside")
    os.mkfifo(root / "pipe.md")
    config = write_config(tmp_path, root)

    indexed = run_json(config, "index")
    status = run_json(config, "status")  # no daemon: what the scan saw was kept
    text = ragd_in_process(config, "status").stdout

    assert indexed["documents"]["added"] == 3
    assert status["sources"][0]["skipped"] == {
        "symlinks": 2,
        "special": 1,
        "non_utf8_names": 0,
        "files": [
            {"path": "more", "kind": "symlink"},
            {"path": "pipe.md", "kind": "fifo"},
            {"path": "secret.md", "kind": "symlink"},
        ],
    }
    assert "skipped docs: 2 symlinks (not followed) and 1 special file" in text
    assert "skipped docs:secret.md: symlink" in text.splitlines()


def test_a_document_over_the_chunk_limit_fails_naming_the_setting(tmp_path: Path) -> None:
    config = write_config(tmp_path, small_root(tmp_path / "docs", 3))
    config.write_text(
        config.read_text().replace(
            "max_chars = 900", "max_chars = 900\nmax_chunks_per_document = 2"
        )
    )

    report = run_json(config, "index")
    status = run_json(config, "status")

    failed = status["sources"][0]["failed_documents"]
    assert report["documents"]["failed"] == len(failed) > 0
    assert all(
        doc["error"].startswith("too many chunks: the document makes ")
        and doc["error"].endswith("more than chunking.max_chunks_per_document (2)")
        for doc in failed
    )
