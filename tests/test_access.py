"""Tokens read from the environment, the grant a header earns, and what a grant may see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragd.config.access import AccessConfig, TokenConfig
from ragd.config.loading import parse_config
from ragd.errors import ConfigError
from ragd.search.filters import QueryFilter
from ragd.service.access import (
    MCP_TOKEN_ENV,
    OPEN,
    Denied,
    Grant,
    Tokens,
    scoped_status,
    serving_tokens,
    visible_events,
)

STAFF = "s" * 32
FINANCE = "f" * 32
ACCESS = AccessConfig(
    tokens=(
        TokenConfig(name="staff", token_env="RAGD_TOKEN_STAFF", sources=("handbook",)),
        TokenConfig(name="admin", token_env="RAGD_TOKEN_ADMIN"),
    )
)
ENVIRON = {"RAGD_TOKEN_STAFF": STAFF, "RAGD_TOKEN_ADMIN": FINANCE}


def _config(listen: str, access: str = "") -> Any:
    text = f"""
[daemon]
data_dir = "data"
[http]
listen = "{listen}"
[embedding]
model = "a/b"
[[sources]]
name = "handbook"
type = "folder"
path = "handbook"
{access}
"""
    return parse_config(text, base_dir=Path("config-dir"))


def test_a_bearer_header_earns_its_tokens_grant() -> None:
    tokens = Tokens.from_config(ACCESS, ENVIRON)

    assert tokens.check(f"Bearer {STAFF}") == Grant("staff", frozenset({"handbook"}))
    assert tokens.check(f"bearer {FINANCE}") == Grant("admin", None)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "missing"),
        ("", "malformed"),
        (f"Basic {STAFF}", "malformed"),
        ("Bearer", "malformed"),
        (STAFF, "malformed"),
        (f"Bearer {STAFF}x", "invalid"),
        (f"Bearer {STAFF[:-1]}", "invalid"),
        ("Bearer " + "x" * 100_000, "invalid"),
        ("Bearer \udcff\ud800\x00", "invalid"),
    ],
)
def test_a_header_without_a_right_token_is_denied_saying_why(
    header: str | None, reason: str
) -> None:
    assert Tokens.from_config(ACCESS, ENVIRON).check(header) == Denied(reason)


def test_without_tokens_every_request_reads_everything() -> None:
    tokens = Tokens.from_config(AccessConfig(), {})

    assert not tokens.required
    assert tokens.check(None) is OPEN


def test_the_mcp_token_is_an_all_sources_token_named_mcp() -> None:
    tokens = Tokens.from_config(AccessConfig(), {MCP_TOKEN_ENV: "m" * 20})

    assert tokens.required
    assert tokens.check("Bearer " + "m" * 20) == Grant("mcp", None)


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({"RAGD_TOKEN_ADMIN": FINANCE}, "RAGD_TOKEN_STAFF is not set"),
        ({"RAGD_TOKEN_STAFF": "short", "RAGD_TOKEN_ADMIN": FINANCE}, "16 to 4096 characters"),
        ({"RAGD_TOKEN_STAFF": STAFF + ";x", "RAGD_TOKEN_ADMIN": FINANCE}, "letters, digits"),
        ({"RAGD_TOKEN_STAFF": STAFF, "RAGD_TOKEN_ADMIN": STAFF}, "the same token as 'staff'"),
    ],
)
def test_an_unusable_token_variable_is_a_config_error_naming_it(
    environ: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        Tokens.from_config(ACCESS, environ)

    assert STAFF not in str(caught.value) and FINANCE not in str(caught.value)


def test_serving_off_loopback_without_a_token_is_refused_with_a_hint() -> None:
    with pytest.raises(ConfigError, match="off loopback, with no access token") as caught:
        serving_tokens(_config("0.0.0.0:8750"), {})

    assert caught.value.hint is not None and "public = true" in caught.value.hint


def test_serving_off_loopback_without_tokens_is_allowed_when_said_public() -> None:
    config = _config("0.0.0.0:8750", "[access]\npublic = true")

    assert not serving_tokens(config, {}).required


def test_serving_on_loopback_without_tokens_stays_open() -> None:
    assert not serving_tokens(_config("127.0.0.1:8750"), {}).required


def test_a_grant_of_some_sources_searches_only_those_asked_within_it() -> None:
    grant = Grant("staff", frozenset({"handbook", "wiki"}))

    assert grant.scoped(QueryFilter()).searched == ("handbook", "wiki")
    assert grant.scoped(QueryFilter(("wiki", "finance"))).searched == ("wiki",)
    assert grant.scoped(QueryFilter(("finance",))).matches_nothing
    assert OPEN.scoped(QueryFilter(("finance",))).searched == ("finance",)


def _report() -> dict[str, Any]:
    def source(name: str, documents: int) -> dict[str, Any]:
        return {"name": name, "documents": documents, "stale": 1, "failed": 1}

    return {
        "generated_at": "2026-12-06T10:00:00.000000Z",
        "fingerprint": "f",
        "stores_agree": True,
        "stores": {"agree": True, "manifest_chunks": 70},
        "queue_depth": 4,
        "documents": 7,
        "stale": 2,
        "failed": 2,
        "second_stage": {"chunks": 70},
        "sources": [source("handbook", 3), source("finance", 4)],
        "daemon": {"state": "ok", "writer_alive": True, "queue_depth": 4, "polls": {}},
    }


def test_a_scoped_status_holds_only_the_grants_sources_and_their_totals() -> None:
    scoped = scoped_status(_report(), Grant("staff", frozenset({"handbook"})))

    assert [s["name"] for s in scoped["sources"]] == ["handbook"]
    assert (scoped["documents"], scoped["stale"], scoped["failed"]) == (3, 1, 1)
    assert scoped["stores"] == {"agree": True}
    assert scoped["daemon"] == {"state": "ok", "writer_alive": True}
    assert "finance" not in repr(scoped) and "queue_depth" not in repr(scoped)


def test_an_all_sources_grant_sees_the_whole_status() -> None:
    assert scoped_status(_report(), Grant("admin")) == _report()


def test_writer_events_are_shown_for_the_grants_sources_only() -> None:
    events = [("t", "indexed", "handbook:a.md", None), ("t", "failed", "finance:b.md", "x")]

    assert visible_events(events, Grant("staff", frozenset({"handbook"}))) == events[:1]
