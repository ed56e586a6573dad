"""KeywordStore against a real Tantivy index in tmp_path."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ragd.errors import StoreError
from ragd.stores.keywords import MAX_QUERY_TERMS, REBUILD_MARKER, KeywordRow, KeywordStore

QUOTED_DOC = 'docs:it\'s a "test".md'


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KeywordStore]:
    keywords = KeywordStore.open(tmp_path / "tantivy")
    yield keywords
    keywords.close()


def make_rows(doc_id: str, texts: Iterable[str], prefix: str = "") -> list[KeywordRow]:
    return [KeywordRow(f"{prefix}{doc_id}#{i}", doc_id, t) for i, t in enumerate(texts)]


def ids(rows: Iterable[KeywordRow]) -> set[str]:
    return {r.chunk_id for r in rows}


def test_replace_then_search_returns_ids_best_first(store: KeywordStore) -> None:
    rows = make_rows(
        "docs:a.md",
        ["salmon river fishing", "salmon salmon salmon recipes", "mountain hiking"],
    )
    store.replace_documents(["docs:a.md"], rows)

    hits = store.search("Salmon", limit=10)

    assert [chunk_id for chunk_id, _ in hits] == ["docs:a.md#1", "docs:a.md#0"]
    assert hits[0][1] > hits[1][1] > 0


def test_search_matches_any_query_term(store: KeywordStore) -> None:
    store.replace_documents(["d"], make_rows("d", ["alpha beta", "gamma", "delta"]))

    assert {c for c, _ in store.search("beta gamma", 10)} == {"d#0", "d#1"}


def test_a_new_document_written_beside_a_replaced_one_leaves_only_current_chunks(
    store: KeywordStore,
) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", ["one", "two"]))
    a_new = make_rows("docs:a.md", ["uno"], prefix="v2-")
    b = make_rows("docs:b.md", ["four", "five"])

    store.replace_documents(["docs:a.md", "docs:b.md"], a_new + b, new=["docs:b.md"])

    assert store.chunk_ids() == ids(a_new) | ids(b)


def test_replace_documents_removes_old_chunks_and_keeps_other_documents(
    store: KeywordStore,
) -> None:
    a_old = make_rows("docs:a.md", ["one", "two", "three"])
    b = make_rows("docs:b.md", ["four", "five"])
    store.replace_documents(["docs:a.md", "docs:b.md"], a_old + b)
    a_new = make_rows("docs:a.md", ["uno"], prefix="v2-")

    store.replace_documents(["docs:a.md"], a_new)

    assert store.chunk_ids() == ids(a_new) | ids(b)
    assert store.search("two", 5) == []


def test_replaying_the_same_replace_is_idempotent(store: KeywordStore) -> None:
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", ["other"]))
    rows = make_rows("docs:a.md", ["red fox", "blue fox", "green fox"])
    store.replace_documents(["docs:a.md"], rows)
    first = (store.chunk_ids(), store.count(), store.search("fox", 10))

    store.replace_documents(["docs:a.md"], rows)

    assert (store.chunk_ids(), store.count(), store.search("fox", 10)) == first
    assert first[1] == 4


def test_replace_with_no_rows_deletes_a_doc_id_containing_quotes(store: KeywordStore) -> None:
    kept = make_rows("docs:other.md", ["kept"])
    store.replace_documents([QUOTED_DOC, "docs:other.md"], make_rows(QUOTED_DOC, ["x", "y"]) + kept)

    store.replace_documents([QUOTED_DOC], [])

    assert store.chunk_ids() == ids(kept)


def test_delete_chunks_removes_exactly_those_ids(store: KeywordStore) -> None:
    rows = make_rows("docs:a.md", ["a", "b", "c", "d"])
    store.replace_documents(["docs:a.md"], rows)

    store.delete_chunks(["docs:a.md#0", "docs:a.md#2", "no-such-id"])

    assert store.chunk_ids() == {"docs:a.md#1", "docs:a.md#3"}


def test_row_of_an_unlisted_document_raises_value_error(store: KeywordStore) -> None:
    with pytest.raises(ValueError, match="not in doc_ids"):
        store.replace_documents(["docs:a.md"], make_rows("docs:b.md", ["x"]))
    assert store.count() == 0


def test_chunk_ids_matches_what_was_written(store: KeywordStore) -> None:
    docs = [f"docs:d{i}.md" for i in range(30)]
    rows = [r for d in docs for r in make_rows(d, [f"text {d} {j}" for j in range(5)])]

    store.replace_documents(docs, rows)

    assert store.chunk_ids() == ids(rows)
    assert store.count() == len(rows)


def test_open_readonly_on_a_missing_directory_is_empty_and_creates_nothing(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "tantivy"

    reader = KeywordStore.open_readonly(directory)

    assert reader.count() == 0
    assert reader.chunk_ids() == set()
    assert reader.search("anything", 5) == []
    reader.refresh()
    assert not directory.exists()


def test_readonly_handle_sees_commits_after_refresh(store: KeywordStore, tmp_path: Path) -> None:
    store.replace_documents(["docs:a.md"], make_rows("docs:a.md", ["first"]))
    reader = KeywordStore.open_readonly(tmp_path / "tantivy")
    store.replace_documents(["docs:b.md"], make_rows("docs:b.md", ["second"]))

    reader.refresh()

    assert reader.count() == 2
    assert reader.search("second", 5)[0][0] == "docs:b.md#0"


def test_readonly_handle_finds_an_index_created_after_it_opened(tmp_path: Path) -> None:
    reader = KeywordStore.open_readonly(tmp_path / "tantivy")
    writer = KeywordStore.open(tmp_path / "tantivy")
    try:
        writer.replace_documents(["d"], make_rows("d", ["hello"]))
    finally:
        writer.close()

    reader.refresh()

    assert reader.count() == 1


def test_readonly_handle_refuses_writes(store: KeywordStore, tmp_path: Path) -> None:
    reader = KeywordStore.open_readonly(tmp_path / "tantivy")

    with pytest.raises(StoreError, match="read-only"):
        reader.replace_documents(["d"], make_rows("d", ["x"]))


def test_second_writer_fails_while_the_first_is_open_and_succeeds_after_close(
    tmp_path: Path,
) -> None:
    first = KeywordStore.open(tmp_path / "tantivy")
    with pytest.raises(StoreError, match="another process is writing the Tantivy index"):
        KeywordStore.open(tmp_path / "tantivy")

    first.close()

    second = KeywordStore.open(tmp_path / "tantivy")
    second.replace_documents(["d"], make_rows("d", ["works"]))
    assert second.count() == 1
    second.close()


def test_writer_in_another_process_is_refused(store: KeywordStore, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from ragd.errors import StoreError
        from ragd.stores.keywords import KeywordStore
        try:
            KeywordStore.open(Path(sys.argv[1]))
        except StoreError as exc:
            print(exc)
            sys.exit(3)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "tantivy")],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 3, result.stderr
    assert "another process is writing the Tantivy index" in result.stdout


HOSTILE_QUERIES = {
    "100 KB": "x" * 100_000,
    "100 KB of words": " ".join(f"w{i}" for i in range(20_000)),
    "5000 nested parentheses": "(" * 5000 + "x" + ")" * 5000,
    "only punctuation": "!?.,;:()[]{}<>\"'`~^*+-/\\|&%$#@=",
    "field syntax": "text:foo",
    "field wildcard": "chunk_id:*",
    "regex": "/.*/",
    "dangling operator": "a AND",
    "unbalanced quote": '"unbalanced',
    "NUL bytes": "foo\x00bar\x00\x00",
    "range": "x [1 TO 5]",
    "fuzzy": "foo~2 bar*",
}


@pytest.mark.parametrize("query", HOSTILE_QUERIES.values(), ids=HOSTILE_QUERIES.keys())
def test_hostile_query_returns_normally(store: KeywordStore, query: str) -> None:
    # What bounds its cost is the cap on terms (test_query_terms_are_..._capped).
    store.replace_documents(["d"], make_rows("d", ["foo text", "bar x", "a b c"]))

    hits = store.search(query, 10)

    assert all(chunk_id.startswith("d#") for chunk_id, _ in hits)


def test_query_of_only_punctuation_returns_nothing(store: KeywordStore) -> None:
    store.replace_documents(["d"], make_rows("d", ["foo"]))

    assert store.search("!?.,;:()[]{}*", 10) == []


def test_query_syntax_is_matched_as_plain_words(store: KeywordStore) -> None:
    rows = make_rows("d", ["unrelated words", "some text here", "foo fighters", "nothing"])
    store.replace_documents(["d"], rows)

    assert store.search("chunk_id:*", 10) == []
    assert {c for c, _ in store.search("text:foo", 10)} == {"d#1", "d#2"}


def test_query_terms_are_lowercased_deduplicated_and_capped(store: KeywordStore) -> None:
    assert store.query_terms("Foo foo BAR, foo") == ["foo", "bar"]
    assert store.query_terms("x" * 41 + " kept") == ["kept"]
    assert len(store.query_terms(" ".join(f"t{i}" for i in range(500)))) == MAX_QUERY_TERMS


def _old_schema_index(directory: Path) -> None:
    """An index as an older ragd wrote it: same id fields, no identifier field."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="default")
    index = tantivy.Index(builder.build(), path=str(directory))
    writer = index.writer(15_000_000, 1)
    document = tantivy.Document()
    document.add_text("chunk_id", "old#0")
    document.add_text("doc_id", "old")
    document.add_text("text", "stale words")
    writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()


def test_index_with_another_schema_and_nothing_to_rebuild_from_raises_store_error(
    tmp_path: Path,
) -> None:
    _old_schema_index(tmp_path)

    with pytest.raises(StoreError, match="rebuild"):
        KeywordStore.open(tmp_path)
    with pytest.raises(StoreError, match="rebuild"):
        KeywordStore.open_readonly(tmp_path)


def test_index_with_another_schema_is_rebuilt_from_the_given_rows(tmp_path: Path) -> None:
    _old_schema_index(tmp_path)
    rows = make_rows("docs:a.md", ["raise HTTPException here", "plain words"])

    store = KeywordStore.open(tmp_path, rebuild_from=lambda: rows)
    try:
        assert store.chunk_ids() == ids(rows)
        assert store.search("http exception", 5)[0][0] == "docs:a.md#0"
        assert store.search("stale", 5) == []
    finally:
        store.close()
    assert KeywordStore.open_readonly(tmp_path).count() == 2
    assert (tmp_path / ".tantivy-writer.lock").exists()  # lock files are never deleted
    assert not (tmp_path / REBUILD_MARKER).exists()


def test_an_interrupted_rebuild_is_redone_on_the_next_open(tmp_path: Path) -> None:
    def crash() -> Iterator[KeywordRow]:
        yield from make_rows("docs:a.md", ["half"])
        raise RuntimeError("killed mid-rebuild")

    _old_schema_index(tmp_path)
    with pytest.raises(RuntimeError):
        KeywordStore.open(tmp_path, rebuild_from=crash)
    rows = make_rows("docs:a.md", ["whole", "again"])

    store = KeywordStore.open(tmp_path, rebuild_from=lambda: rows)
    try:
        assert store.chunk_ids() == ids(rows)
    finally:
        store.close()


def test_an_index_with_the_current_schema_is_not_rebuilt(
    store: KeywordStore, tmp_path: Path
) -> None:
    store.replace_documents(["d"], make_rows("d", ["kept"]))
    store.close()

    reopened = KeywordStore.open(tmp_path / "tantivy", rebuild_from=lambda: [])
    try:
        assert reopened.chunk_ids() == {"d#0"}
    finally:
        reopened.close()


def test_a_pasted_identifier_matches_its_parts_and_its_whole(store: KeywordStore) -> None:
    store.replace_documents(
        ["d"],
        make_rows(
            "d",
            [
                "Raise an HTTPException with a status_code",  # 0: both names, whole
                "the HTTP layer raises an exception; the status has a code",  # 1: parts only
                "unrelated text",
            ],
        ),
    )

    for query in ("HTTPException", "http exception", "status_code", "status code"):
        assert {chunk_id for chunk_id, _ in store.search(query, 5)} == {"d#0", "d#1"}, query
    # The whole name counts on top of its parts.
    assert store.search("status_code", 5)[0][0] == "d#0"


def test_the_identifier_field_can_be_switched_off(store: KeywordStore) -> None:
    store.replace_documents(["d"], make_rows("d", ["raise HTTPException"]))

    assert store.search("http", 5, identifier_weight=0.0) == []
    assert [c for c, _ in store.search("http", 5)] == ["d#0"]


def test_the_page_titled_with_the_word_wins_over_pages_that_mention_it(
    store: KeywordStore,
) -> None:
    # tldr-pages: tar's own page marks its mnemonics, another only names tar in passing.
    store.replace_documents(
        ["tar", "git"],
        [
            KeywordRow(
                "tar#0", "tar", "tar\n\n- E[x]tract an archive: `tar xf a.tar`", title="tar"
            ),
            KeywordRow(
                "git#0",
                "git",
                "git get-tar-commit-id\n\nExtract the commit id of a tar archive.",
                title="git get-tar-commit-id",
            ),
        ],
    )

    assert store.search("tar extract", 5)[0][0] == "tar#0"


def test_a_word_written_with_a_bracketed_letter_is_found_whole(store: KeywordStore) -> None:
    store.replace_documents(["tar"], [KeywordRow("tar#0", "tar", "- E[x]tract an archive")])

    assert [c for c, _ in store.search("extract", 5)] == ["tar#0"]
