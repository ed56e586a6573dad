"""Who may read what on `ragd serve`: the bearer tokens of [access], and what a token's
grant lets an answer show.

Owns reading the tokens from the environment when the server starts (the file names
only their variables), checking a request's `Authorization` header against them, and
cutting a status report down to a grant's sources. `RAGD_MCP_TOKEN`, the one token
ragd had before [access], is an all-sources token named "mcp". Pure: no HTTP here
(ragd.service.http.gate applies it to requests).

A header is compared with every token, each as a SHA-256 digest with
`hmac.compare_digest`, whatever matched first: how long a check takes tells nothing of
which token, or how much of one, was right.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ragd.config.access import AccessConfig
from ragd.config.settings import Config
from ragd.errors import ConfigError
from ragd.search.filters import QueryFilter

MCP_TOKEN_ENV: Final = "RAGD_MCP_TOKEN"  # noqa: S105 - the variable's name, not a token
MCP_TOKEN_NAME: Final = "mcp"  # noqa: S105
# Shorter tokens can be guessed by a caller who may try as often as the port answers.
MIN_TOKEN_CHARS: Final = 16
# A header longer than any token ragd would accept is refused unread.
MAX_CREDENTIAL_CHARS: Final = 4096
_TOKEN_HINT: Final = "make one with: openssl rand -hex 32"  # noqa: S105 - a command
# Hex, base64 and base64url, and nothing a header or the status page's cookie would split.
_TOKEN_CHARS: Final = re.compile(r"[A-Za-z0-9._~+/=-]+")


def is_loopback(host: str) -> bool:
    """Whether `host` (as [http] listen names it) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serving_tokens(config: Config, environ: Mapping[str, str]) -> Tokens:
    """The tokens `ragd serve` checks; ConfigError when a server off loopback would have
    none and [access] does not say `public = true` (anyone reaching the port could read
    every document), or a token's variable is unusable."""
    tokens = Tokens.from_config(config.access, environ)
    if tokens.required or config.access.public or is_loopback(config.http.host):
        return tokens
    raise ConfigError(
        f"ragd serve would listen on {config.http.listen}, off loopback, with no access "
        "token: anyone who reaches the port could read every document",
        hint='add an [[access.tokens]] table (name, token_env = "RAGD_TOKEN_…"), or set '
        "[access] public = true to serve without tokens",
    )


@dataclass(frozen=True)
class Grant:
    """What a request may read: `name` is its token's (for logs and metrics; "" with no
    tokens configured), `sources` the sources it may read (None: every source)."""

    name: str
    sources: frozenset[str] | None = None

    @property
    def everything(self) -> bool:
        """Whether it reads every source (and so may see what belongs to none: metrics)."""
        return self.sources is None

    def sees(self, source: str) -> bool:
        """Whether documents of `source` are within the grant."""
        return self.sources is None or source in self.sources

    def scoped(self, filters: QueryFilter) -> QueryFilter:
        """A query's filters, limited to the grant's sources."""
        if self.sources is None:
            return filters
        return QueryFilter(filters.sources, filters.path, self.sources)


OPEN: Final = Grant("")  # no token is configured: everyone reads everything


@dataclass(frozen=True)
class Denied:
    """A request without a grant: `reason` says why ("missing", "malformed", "invalid")."""

    reason: str


class Tokens:
    """The configured tokens; with none, every request reads everything."""

    def __init__(self, grants: Mapping[str, Grant]) -> None:
        self._grants = [(_digest(token), grant) for token, grant in grants.items()]

    @classmethod
    def from_config(cls, access: AccessConfig, environ: Mapping[str, str]) -> Tokens:
        """The tokens [access] names, read from `environ`, and `RAGD_MCP_TOKEN` when set;
        ConfigError when a named variable is unset, too short, or repeats another's."""
        grants: dict[str, Grant] = {}
        named = [(t.token_env, t.name, t.sources) for t in access.tokens]
        if environ.get(MCP_TOKEN_ENV):
            named.append((MCP_TOKEN_ENV, MCP_TOKEN_NAME, None))
        for variable, name, sources in named:
            token = environ.get(variable, "")
            where = f"access token {name!r}: environment variable {variable}"
            if not token:
                raise ConfigError(f"{where} is not set", hint=f"set it; {_TOKEN_HINT}")
            if len(token) < MIN_TOKEN_CHARS or len(token) > MAX_CREDENTIAL_CHARS:
                raise ConfigError(
                    f"{where} must hold {MIN_TOKEN_CHARS} to {MAX_CREDENTIAL_CHARS} characters",
                    hint=_TOKEN_HINT,
                )
            if not _TOKEN_CHARS.fullmatch(token):
                raise ConfigError(
                    f"{where} may hold letters, digits and . _ ~ + / = - only", hint=_TOKEN_HINT
                )
            if token in grants:
                other = grants[token].name
                raise ConfigError(f"{where} holds the same token as {other!r}", hint=_TOKEN_HINT)
            grants[token] = Grant(name, None if sources is None else frozenset(sources))
        return cls(grants)

    @property
    def required(self) -> bool:
        """Whether any token is configured (then every read needs one)."""
        return bool(self._grants)

    def check(self, authorization: str | None) -> Grant | Denied:
        """The grant of an `Authorization` header's value (`Bearer <token>`)."""
        if not self._grants:
            return OPEN
        if authorization is None:
            return Denied("missing")
        scheme, _, credentials = authorization.strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() != "bearer" or not credentials:
            return Denied("malformed")
        return self.match(credentials)

    def match(self, token: str) -> Grant | Denied:
        """The grant of a bare token (a header's, or the status page's cookie)."""
        if not self._grants:
            return OPEN
        if len(token) > MAX_CREDENTIAL_CHARS:
            return Denied("invalid")
        given = _digest(token)
        found: Grant | None = None
        for digest, grant in self._grants:  # every one, whatever matched: see the module doc
            if hmac.compare_digest(given, digest):
                found = grant
        return Denied("invalid") if found is None else found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()  # valid ones are ASCII


# -- what a status report shows ---------------------------------------------------------------

# What a report's daemon (or replica) section may tell a token of some sources only:
# nothing counted over every source, no source's schedule or poll; its data directory,
# which the CLI checks is its own.
_SCOPED_DAEMON_KEYS: Final = ("state", "writer_alive", "uptime_seconds", "data_dir")

Event = tuple[str, str, str, str | None]
"""A writer's event as the status page lists it: (at, action, doc_id, reason)."""


def scoped_status(report: Mapping[str, Any], grant: Grant) -> dict[str, Any]:
    """The status report (ragd.search.status's JSON, with its daemon section) as `grant`
    may read it: its sources only, totals over them, no store counts or daemon figures
    that count the others."""
    if grant.everything:
        return dict(report)
    sources = [s for s in report["sources"] if grant.sees(str(s["name"]))]
    scoped: dict[str, Any] = {
        "generated_at": report.get("generated_at"),
        "fingerprint": report.get("fingerprint"),
        "stores_agree": report["stores_agree"],
        "stores": {"agree": report["stores_agree"]},
        "documents": sum(int(s["documents"]) for s in sources),
        "stale": sum(int(s["stale"]) for s in sources),
        "failed": sum(int(s["failed"]) for s in sources),
        "sources": sources,
    }
    for section in ("daemon", "replica"):
        if isinstance(found := report.get(section), Mapping):
            scoped[section] = {k: found[k] for k in _SCOPED_DAEMON_KEYS if k in found}
    return scoped


def visible_events(events: Sequence[Event], grant: Grant) -> list[Event]:
    """The writer's events about documents of the grant's sources."""
    return [event for event in events if grant.sees(event[2].partition(":")[0])]
