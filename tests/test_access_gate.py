"""The access gate in front of `ragd serve`'s app: which paths need a token, how a request
is refused, the status page's cookie, and denials counted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from ragd.config.access import AccessConfig, TokenConfig
from ragd.service.access import OPEN, Grant, Tokens
from ragd.service.http.gate import LOGGED_DENIALS, AccessGate

STAFF, ADMIN = "s" * 32, "a" * 32
TOKENS = Tokens.from_config(
    AccessConfig(
        tokens=(
            TokenConfig(name="staff", token_env="T_STAFF", sources=("handbook",)),
            TokenConfig(name="admin", token_env="T_ADMIN"),
        )
    ),
    {"T_STAFF": STAFF, "T_ADMIN": ADMIN},
)


class Answer:
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.status: int = messages[0]["status"]
        self.headers = {k.decode(): v.decode() for k, v in messages[0]["headers"]}
        self.body: bytes = messages[1]["body"]


def call(
    path: str,
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
    *,
    method: str = "GET",
    body: bytes = b"",
    tokens: Tokens = TOKENS,
    denied: list[tuple[str, str]] | None = None,
) -> tuple[Answer, Grant | None]:
    seen: list[Grant | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope.get("state", {}).get("grant"))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"through"})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    counted = denied if denied is not None else []
    gate = AccessGate(app, tokens, lambda name, reason: counted.append((name, reason)))
    scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
    asyncio.run(gate(scope, receive, send))
    return Answer(sent), (seen[0] if seen else None)


def bearer(token: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {token}".encode())]


READ_SURFACES = ["/v1/status", "/metrics", "/mcp", "/v1/index", "/nowhere"]


@pytest.mark.parametrize("path", READ_SURFACES)
def test_a_read_surface_without_a_token_answers_401_with_a_bearer_challenge(path: str) -> None:
    answer, grant = call(path)

    assert (answer.status, grant) == (401, None)
    assert answer.headers["www-authenticate"] == 'Bearer realm="ragd"'


@pytest.mark.parametrize("path", ["/v1/query", "/v1/context", "/mcp"])
def test_a_wrong_token_answers_401_saying_it_is_invalid(path: str) -> None:
    answer, _ = call(path, bearer(STAFF + "x"), method="POST")

    assert answer.status == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert STAFF not in answer.body.decode()


def test_mcp_is_refused_in_json_rpcs_shape() -> None:
    answer, _ = call("/mcp", method="POST")

    assert json.loads(answer.body)["error"]["code"] == -32001


@pytest.mark.parametrize("path", ["/healthz", "/openapi.json", "/v1/webhooks/cms"])
def test_health_the_api_description_and_webhooks_need_no_token(path: str) -> None:
    answer, grant = call(path)

    assert (answer.status, grant) == (200, None)  # they read nothing a grant could limit


def test_a_right_token_reaches_the_app_with_its_grant() -> None:
    answer, grant = call("/v1/query", bearer(STAFF), method="POST")

    assert (answer.status, grant) == (200, Grant("staff", frozenset({"handbook"})))


@pytest.mark.parametrize("path", ["/metrics", "/v1/index"])
def test_a_token_of_some_sources_may_not_read_what_needs_every_source(path: str) -> None:
    assert call(path, bearer(STAFF))[0].status == 403
    assert call(path, bearer(ADMIN))[0].status == 200


def test_an_authorization_header_sent_twice_is_refused() -> None:
    answer, _ = call("/v1/status", bearer(ADMIN) + bearer(STAFF))

    assert answer.status == 401


def test_without_tokens_every_path_is_open() -> None:
    answer, grant = call("/v1/status", tokens=Tokens({}))

    assert (answer.status, grant) == (200, OPEN)


def test_the_status_page_without_a_token_shows_a_form_that_posts_it() -> None:
    answer, _ = call("/")

    assert answer.status == 401
    assert answer.headers["content-type"].startswith("text/html")
    assert b"<form method=post action=/login>" in answer.body


def test_a_right_token_posted_sets_an_httponly_strict_cookie_and_goes_to_the_page() -> None:
    answer, _ = call("/login", method="POST", body=f"token={STAFF}".encode())

    assert (answer.status, answer.headers["location"]) == (303, "/")
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"ragd_token={STAFF};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_a_wrong_token_posted_sets_no_cookie() -> None:
    answer, _ = call("/login", method="POST", body=b"token=nope")

    assert answer.status == 401 and "set-cookie" not in answer.headers


def test_the_cookie_opens_reads_by_get_only() -> None:
    cookie = [(b"cookie", f"other=1; ragd_token={STAFF}".encode())]

    assert call("/", cookie)[1] == Grant("staff", frozenset({"handbook"}))
    assert call("/v1/query", cookie, method="POST")[0].status == 401


def test_every_denial_is_counted_by_token_name_and_reason() -> None:
    denied: list[tuple[str, str]] = []
    call("/v1/status", denied=denied)
    call("/v1/status", bearer("x" * 20), denied=denied)
    call("/metrics", bearer(STAFF), denied=denied)

    assert denied == [("unknown", "missing"), ("unknown", "invalid"), ("staff", "scope")]


def test_denials_are_logged_at_most_a_bounded_number_a_minute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not reached")

    gate = AccessGate(app, TOKENS, lambda name, reason: None)
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    for _ in range(3 * LOGGED_DENIALS):
        scope = {"type": "http", "method": "GET", "path": "/v1/status", "headers": []}
        asyncio.run(gate(scope, receive, send))

    logged = capsys.readouterr()
    lines = [line for line in (logged.out + logged.err).splitlines() if "request_denied" in line]
    assert len(lines) == LOGGED_DENIALS
