"""ragd over MCP, tested with the official SDK's own clients against real processes:
`ragd mcp` on stdio, and `ragd serve`'s /mcp over Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
import pytest
from mcp import ClientSession

from tests.conftest import write_config
from tests.integration.conftest import run_json
from tests.integration.daemon import Served, small_root
from tests.integration.mcp_clients import http_session, stdio_session

T = TypeVar("T")
TOOLS = {"search", "get_section", "get_document", "status"}
QUESTION = "declare a request body with a Pydantic model"


def run(coroutine: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine(), 120))


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp")
    config = write_config(base, small_root(base / "docs", 12))
    run_json(config, "index")
    return config


def test_stdio_lists_the_tools_with_their_schemas_and_searches_as_the_cli_does(
    indexed: Path,
) -> None:
    async def session_work() -> tuple[Any, Any]:
        async with stdio_session(indexed) as session:
            tools = await session.list_tools()
            return tools, await call(session, "search", query=QUESTION, k=5)

    tools, result = run(session_work)
    cli = run_json(indexed, "query", QUESTION, "-k", "5")

    schemas = {tool.name: tool for tool in tools.tools}
    assert set(schemas) == TOOLS
    assert {"query", "k", "mode", "exclude_stale", "source", "path"} <= set(
        schemas["search"].input_schema["properties"]
    )
    assert schemas["search"].input_schema["required"] == ["query"]
    assert all(tool.output_schema for tool in tools.tools)
    hits = result.structured_content["hits"]
    assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in cli["results"]]
    assert all({"indexed_at", "stale", "stale_reasons"} <= set(h) for h in hits)
    assert result.content[0].text.startswith("[1] ")  # readable text beside the structure


def test_a_source_edited_but_not_re_indexed_is_flagged_stale_in_an_open_session(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", 4)
    config = write_config(tmp_path, root)
    run_json(config, "index")
    page = sorted(root.glob("*.md"))[0]

    async def session_work() -> tuple[Any, Any]:
        async with stdio_session(config) as session:
            before = await call(session, "search", query=page.stem.replace("-", " "), k=1)
            page.write_text(page.read_text() + "\n\nEdited after indexing.\n")
            return before, await call(session, "search", query=page.stem.replace("-", " "), k=1)

    before, after = run(session_work)

    assert before.structured_content["hits"][0]["stale"] is False
    hit = after.structured_content["hits"][0]
    assert hit["stale"] is True and hit["stale_reasons"] == ["source_changed"]
    assert "STALE" in after.content[0].text


def test_get_section_returns_a_section_of_several_chunks_whole(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    paragraphs = [f"Paragraph {n} about the aardvark migration, part {n}." * 4 for n in range(12)]
    (root / "long.md").write_text("# Long\n\n## Migration\n\n" + "\n\n".join(paragraphs) + "\n")
    config = write_config(tmp_path, root, max_chars=300)
    run_json(config, "index")

    async def session_work() -> tuple[Any, Any, Any]:
        async with stdio_session(config) as session:
            hit = await call(session, "search", query="aardvark migration part 7", k=1)
            chunk_id = hit.structured_content["hits"][0]["chunk_id"]
            whole = await call(session, "get_section", chunk_id=chunk_id, max_chars=20_000)
            cut = await call(session, "get_section", chunk_id=chunk_id, max_chars=500)
            return hit, whole, cut

    hit, whole, cut = run(session_work)

    section = whole.structured_content
    assert section["heading_path"] == ["Long", "Migration"]
    assert section["truncated"] is False
    assert all(p in section["text"] for p in paragraphs)  # every chunk, overlaps removed
    assert len(section["text"]) > 3 * len(hit.structured_content["hits"][0]["text"])
    assert cut.structured_content["truncated"] is True
    assert len(cut.structured_content["text"]) == 500


def test_get_document_bounds_its_answer_and_says_when_it_cut(indexed: Path) -> None:
    async def session_work() -> tuple[Any, Any]:
        async with stdio_session(indexed) as session:
            hit = await call(session, "search", query=QUESTION, k=1)
            doc_id = hit.structured_content["hits"][0]["doc_id"]
            whole = await call(session, "get_document", doc_id=doc_id, max_chars=200_000)
            cut = await call(session, "get_document", doc_id=doc_id, max_chars=400)
            return whole, cut

    whole, cut = run(session_work)

    assert whole.structured_content["truncated"] is False
    assert cut.structured_content["truncated"] is True
    assert len(cut.structured_content["text"]) == 400
    assert cut.structured_content["chars"] == whole.structured_content["chars"]
    assert "[cut: 400 of" in cut.content[0].text


def test_hostile_calls_get_errors_and_the_server_goes_on(indexed: Path) -> None:
    async def session_work() -> list[Any]:
        async with stdio_session(indexed) as session:
            answers = [
                await session.call_tool("no_such_tool", {}),
                await session.call_tool("search", {"query": 5}),
                await session.call_tool("search", {"query": "x" * 10_000}),
                await session.call_tool("search", {"query": "body", "k": "ten"}),
                await session.call_tool("get_section", {"chunk_id": "' OR 1=1 --"}),
                await session.call_tool("search", {"query": "body", "path": "\x00"}),
            ]
            answers.append(await session.call_tool("search", {"query": "request body"}))
            return answers

    *hostile, healthy = run(session_work)

    assert all(answer.is_error for answer in hostile)
    assert "the limit is 2000" in hostile[2].content[0].text
    assert not healthy.is_error and healthy.structured_content["hits"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    daemon = Served(tmp_path, small_root(tmp_path / "docs", 12))
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_streamable_http_serves_the_same_tools_and_hits(served: Served) -> None:
    async def session_work() -> tuple[Any, Any, Any]:
        async with http_session(served.port) as session:
            tools = await session.list_tools()
            result = await call(session, "search", query=QUESTION, k=5)
            status = await call(session, "status")
            return tools, result, status

    tools, result, status = run(session_work)
    cli = run_json(served.config, "query", QUESTION, "-k", "5")

    assert {tool.name for tool in tools.tools} == TOOLS
    hits = result.structured_content["hits"]
    assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in cli["results"]]
    assert status.structured_content["stores_agree"] is True
    assert status.structured_content["sources"][0]["documents"] == 12


async def _found_after_an_edit(session: ClientSession, page: Path, word: str) -> str:
    """Append a paragraph with `word` to `page` and search through the session, opened
    before the edit, until it finds it (30 s at most); the hit's text."""
    await call(session, "search", query="warm up", k=1)
    page.write_text(page.read_text() + f"\n\nThe {word} paragraph, written just now.\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        hits = await call(session, "search", query=f"{word} paragraph", k=1)
        found = hits.structured_content["hits"]
        if found and word in found[0]["text"]:
            return str(found[0]["text"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"the edit with {word!r} never reached the session")


def test_an_edit_reaches_an_open_http_session(served: Served) -> None:
    page = sorted((served.workdir / "docs").glob("*.md"))[0]

    async def session_work() -> str:
        async with http_session(served.port) as session:
            return await _found_after_an_edit(session, page, "okapi")

    assert "The okapi paragraph" in run(session_work)


def test_a_stdio_session_beside_the_daemon_sees_its_commits(served: Served) -> None:
    page = sorted((served.workdir / "docs").glob("*.md"))[1]

    async def session_work() -> str:
        async with stdio_session(served.config) as session:
            return await _found_after_an_edit(session, page, "tapir")

    assert "The tapir paragraph" in run(session_work)


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Origin": "http://evil.example"}, 403), ({"Host": "evil.example:80"}, 421)],
)
def test_a_foreign_origin_or_host_is_refused_and_the_daemon_goes_on(
    served: Served, headers: dict[str, str], status: int
) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    answer = httpx.post(
        f"http://127.0.0.1:{served.port}/mcp",
        content=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )

    assert answer.status_code == status
    assert served.get("/healthz")["status"] == "ok"


def test_a_malformed_or_oversized_mcp_request_gets_a_json_rpc_error(served: Served) -> None:
    url = f"http://127.0.0.1:{served.port}/mcp"
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    malformed = httpx.post(url, content=b"{not json", headers=headers)
    oversized = httpx.post(
        url, content=b'{"jsonrpc": "2.0", "x": "' + b"a" * 2_000_000 + b'"}', headers=headers
    )

    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
    assert oversized.status_code == 413
    assert served.get("/healthz")["status"] == "ok"


def test_context_numbers_passages_as_its_json_does(served: Served) -> None:
    body = served.post_json("/v1/context", {"query": QUESTION, "k": 6, "max_chars": 6000})

    passages = body["passages"]
    assert len({p["doc_id"] for p in passages}) >= 3
    assert [p["number"] for p in passages] == list(range(1, len(passages) + 1))
    for passage in passages:
        assert f"{passage['citation']}\n" in body["context"]
        assert passage["citation"].startswith(f"[{passage['number']}] ")
    assert body["abstained"] is False


def test_context_on_a_question_the_documents_do_not_answer_says_so(served: Served) -> None:
    body = served.post_json(
        "/v1/context",
        {"query": "How do I deploy my FastAPI app to AWS Lambda using Mangum?", "k": 3},
    )

    assert body["abstained"] is True
    assert body["context"].startswith("The documents may not answer this question")
