"""Who may read what, through a real `ragd serve` and its real configuration: tokens from
[access] and the environment, on every read surface, scoped to their sources.

Three sources, each of whose documents carry the source's own word (okapi, quokka,
narwhal) in their paths, titles and text, and a token for every set of them: whatever a
token asks, on any surface, no answer may hold a word, path or name of a source outside
its scope, nor a count that includes one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, write_config
from tests.integration.conftest import run_ragd
from tests.integration.daemon import Served
from tests.integration.mcp_clients import http_session

WORDS = {"docs": "okapi", "handbook": "quokka", "finance": "narwhal"}
SOURCES = tuple(WORDS)
# A token per non-empty set of sources, named by it; "admin" reads every source.
SCOPES = [
    frozenset(c) for n in range(1, len(SOURCES) + 1) for c in itertools.combinations(SOURCES, n)
]
ADMIN, MCP = "a" * 40, "m" * 40


def token_of(scope: frozenset[str]) -> str:
    return "t" + "".join(sorted(scope)) + "0" * 16


def name_of(scope: frozenset[str]) -> str:
    return "-".join(sorted(scope))


def write_pages(root: Path, source: str) -> None:
    root.mkdir(parents=True)
    word = WORDS[source]
    for n in range(4):
        (root / f"{word}-policy-{n}.md").write_text(
            f"# The {word} policy {n}\n\nThe {word} travel and vacation policy {n}: "
            f"budgets, expenses and leave are approved by the {word} committee.\n"
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("access")
    for source in SOURCES:
        write_pages(workdir / source, source)
    extra = "".join(
        f'\n[[sources]]\nname = "{s}"\ntype = "folder"\npath = "{workdir / s}"\n'
        for s in SOURCES[1:]
    )
    tokens = "".join(
        f'[[access.tokens]]\nname = "{name_of(scope)}"\ntoken_env = "RAGD_T_{n}"\n'
        f"sources = {json.dumps(sorted(scope))}\n\n"
        for n, scope in enumerate(SCOPES)
    )
    tokens += '[[access.tokens]]\nname = "admin"\ntoken_env = "RAGD_T_ADMIN"\n'
    env = {f"RAGD_T_{n}": token_of(scope) for n, scope in enumerate(SCOPES)}
    env |= {"RAGD_T_ADMIN": ADMIN, "RAGD_MCP_TOKEN": MCP}
    daemon = Served(workdir, workdir / "docs", env=env, extra_sources=extra, sections=tokens)
    daemon.start()
    try:
        daemon.wait_ready()
        wait_scanned(daemon)
        yield daemon
    finally:
        daemon.stop()


def request(
    served: Served, method: str, path: str, token: str | None, body: Any = None
) -> tuple[int, dict[str, str], str]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    url = f"http://127.0.0.1:{served.port}{path}"
    ask = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(ask, timeout=30) as reply:
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def wait_scanned(served: Served) -> None:
    def scanned() -> bool:
        status, _, body = request(served, "GET", "/v1/status", ADMIN)
        report = json.loads(body)
        return status == 200 and report["documents"] == 12 and report["daemon"]["queue_depth"] == 0

    from tests.integration.daemon import wait_until

    wait_until(scanned, 120, interval=0.2)


def leaks(text: str, scope: frozenset[str]) -> list[str]:
    """The words and names of sources outside `scope` found in `text`."""
    outside = [s for s in SOURCES if s not in scope]
    return [w for s in outside for w in (WORDS[s], f'"{s}"', f"{s}:") if w in text]


SURFACES = [
    ("GET", "/", None),
    ("GET", "/v1/status", None),
    ("POST", "/v1/query", {"query": "vacation policy"}),
    ("POST", "/v1/context", {"query": "vacation policy"}),
    ("GET", "/metrics", None),
    ("POST", "/v1/index", {}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]


@pytest.mark.parametrize(("method", "path", "body"), SURFACES)
def test_every_read_surface_answers_401_without_a_token(
    served: Served, method: str, path: str, body: Any
) -> None:
    status, headers, _ = request(served, method, path, None, body)

    assert status == 401
    assert headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), SURFACES)
def test_every_read_surface_answers_401_to_a_wrong_token(
    served: Served, method: str, path: str, body: Any
) -> None:
    status, headers, _ = request(served, method, path, ADMIN[:-1] + "b", body)

    assert status == 401
    # The status page answers a browser with its form to sign in; the rest say why.
    assert "invalid_token" in headers["www-authenticate"] or path == "/"


def test_health_and_the_api_description_stay_open(served: Served) -> None:
    assert request(served, "GET", "/healthz", None)[0] == 200
    assert request(served, "GET", "/openapi.json", None)[0] == 200


def test_a_scoped_query_finds_k_hits_from_its_own_sources(served: Served) -> None:
    token = token_of(frozenset({"finance"}))
    status, _, body = request(
        served, "POST", "/v1/query", token, {"query": "okapi vacation policy", "k": 4}
    )
    hits = json.loads(body)["results"]

    assert status == 200
    assert [h["source"] for h in hits] == ["finance"] * 4


def test_a_source_filter_outside_the_scope_gives_no_hits_and_no_error(served: Served) -> None:
    token = token_of(frozenset({"finance"}))
    asked = {"query": "vacation policy", "source": ["handbook", "nosuchsource"]}
    status, _, body = request(served, "POST", "/v1/query", token, asked)

    assert status == 200
    assert json.loads(body)["results"] == []
    assert leaks(body, frozenset({"finance"})) == []


def test_metrics_need_a_token_for_every_source(served: Served) -> None:
    assert request(served, "GET", "/metrics", token_of(frozenset(SOURCES)))[0] == 403
    status, _, body = request(served, "GET", "/metrics", ADMIN)
    assert status == 200
    assert 'ragd_http_denied_total{reason="scope",token="docs-finance-handbook"}' in body, [
        line for line in body.splitlines() if "denied" in line
    ]


def test_the_mcp_token_still_reads_everything_over_mcp_and_http(served: Served) -> None:
    async def search() -> Any:
        async with http_session(served.port, MCP) as session:
            return await session.call_tool("search", {"query": "vacation policy", "k": 12})

    found = asyncio.run(asyncio.wait_for(search(), 60))
    status, _, body = request(served, "POST", "/v1/query", MCP, {"query": "vacation", "k": 12})

    assert {h["doc_id"].split(":")[0] for h in found.structured_content["hits"]} == set(SOURCES)
    assert status == 200
    assert {h["source"] for h in json.loads(body)["results"]} == set(SOURCES)


@pytest.mark.parametrize("scope", SCOPES, ids=name_of)
def test_mcp_tools_read_only_the_tokens_sources(served: Served, scope: frozenset[str]) -> None:
    outside = [s for s in SOURCES if s not in scope]

    async def session_work() -> list[Any]:
        async with http_session(served.port, token_of(scope)) as session:
            answers = [
                await session.call_tool("search", {"query": "vacation policy", "k": 12}),
                await session.call_tool("status", {}),
            ]
            for source in outside:
                doc_id = f"{source}:{WORDS[source]}-policy-0.md"
                answers.append(await session.call_tool("get_document", {"doc_id": doc_id}))
            return answers

    answers = asyncio.run(asyncio.wait_for(session_work(), 60))
    search, status, *refused = answers

    assert {h["doc_id"].split(":")[0] for h in search.structured_content["hits"]} == set(scope)
    assert {s["name"] for s in status.structured_content["sources"]} == set(scope)
    # Refused as a document that does not exist is: the answer tells nothing more.
    assert [a.content[0].text for a in refused] == [
        f"Error executing tool get_document: no document '{s}:{WORDS[s]}-policy-0.md' "
        "with text in the index"
        for s in outside
    ]
    for answer in (search, status):
        assert leaks(json.dumps(answer.model_dump(mode="json")), scope) == []


def test_the_cli_passes_ragd_token_to_its_daemon(served: Served) -> None:
    env = {**served.env, "RAGD_TOKEN": token_of(frozenset({"handbook"}))}
    ran = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(served.config), "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )

    assert ran.returncode == 0, ran.stderr
    assert [s["name"] for s in json.loads(ran.stdout)["sources"]] == ["handbook"]
    assert "note" not in ran.stderr


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    scope=st.sampled_from(SCOPES),
    asked=st.lists(st.sampled_from([*SOURCES, "elsewhere"]), max_size=3),
    words=st.lists(
        st.sampled_from(["vacation", "okapi", "quokka", "narwhal", "budget", "policy", "3"]),
        min_size=1,
        max_size=4,
    ),
    surface=st.sampled_from(["query", "context", "status", "page"]),
    k=st.integers(1, 20),
)
def test_no_answer_holds_anything_of_a_source_outside_the_tokens_scope(
    served: Served,
    scope: frozenset[str],
    asked: list[str],
    words: list[str],
    surface: str,
    k: int,
) -> None:
    query = {"query": " ".join(words), "k": k, "source": asked, "mode": "hybrid"}
    method, path, body = {
        "query": ("POST", "/v1/query", query),
        "context": ("POST", "/v1/context", query),
        "status": ("GET", "/v1/status", None),
        "page": ("GET", "/", None),
    }[surface]

    status, _, text = request(served, method, path, token_of(scope), body)

    assert status == 200, text
    if surface in ("query", "context"):  # the query itself is echoed: it may name anything
        text = json.dumps({k: v for k, v in json.loads(text).items() if k != "query"})
    assert leaks(text, scope) == []
    if surface == "status":
        report = json.loads(text)
        visible = [s for s in report["sources"] if s["name"] in scope]
        assert report["sources"] == visible and len(visible) == len(scope)
        assert report["documents"] == sum(s["documents"] for s in visible) == 4 * len(scope)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serving_off_loopback_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    listen = f'[http]\nlisten = "0.0.0.0:{_free_port()}"'
    config = write_config(tmp_path, tmp_path / "docs", sections=listen)

    ran = run_ragd(config, "serve", timeout=60)

    assert ran.returncode != 0
    assert "off loopback, with no access token" in ran.stderr
    assert len(ran.stderr.strip().splitlines()) <= 2  # the error and its hint


def test_serving_off_loopback_said_public_starts(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    port = _free_port()
    sections = f'[http]\nlisten = "0.0.0.0:{port}"\n\n[access]\npublic = true'
    daemon = Served(tmp_path, tmp_path / "docs", sections="[access]\npublic = true")
    daemon.config = write_config(tmp_path, tmp_path / "docs", sections=sections)
    daemon.port = port
    daemon.start()
    try:
        daemon.wait_ready()
        assert request(daemon, "GET", "/v1/status", None)[0] == 200
    finally:
        daemon.stop()


def raw_status(served: Served, head: bytes) -> int:
    """The status of the answer to a request written byte by byte (0: no answer). The
    server may answer and close before all is sent: what it sent is still read."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as connection:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
        answer = connection.recv(256)
    return int(answer.split()[1]) if answer.startswith(b"HTTP/1.1 ") else 0


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"Authorization: Bearer " + b"x" * 200_000 + b"\r\n", 431),
        (b"Authorization: Bearer \xff\xfe\x80binary\r\n", 401),
        (b"Authorization: Bearer \x00nul\r\n", 400),
        (b"Authorization: \r\n", 401),
        (b"".join(b"Authorization: Bearer %d\r\n" % n for n in range(500)), 401),
        (b"".join(b"Authorization: Bearer %d\r\n" % n for n in range(5000)), 431),
        (b"Authorization: Bearer " + ADMIN.encode() + b"\r\nAuthorization: Bearer x\r\n", 401),
    ],
    ids=["huge", "binary", "nul", "empty", "many", "too-many", "twice"],
)
def test_a_hostile_authorization_header_is_refused_and_the_server_goes_on(
    served: Served, head: bytes, expected: int
) -> None:
    # A header that is not text is a malformed request (400, uvicorn's); the rest are 401,
    # or 431 for headers past what a request may hold.
    assert raw_status(served, head) == expected
    assert request(served, "GET", "/v1/status", ADMIN)[0] == 200
