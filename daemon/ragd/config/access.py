"""[access]: who may read what. Named bearer tokens, each scoped to sources, and whether a
server listening off loopback may go without one.

The file names the variable that holds each token (`token_env`), never the token; the
service reads the variables when it starts (ragd.service.access).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final

from ragd.config import values as v
from ragd.config.sources import SourceConfig, SourceName
from ragd.config.tables import check_keys, fail, read_table, told, within

TokenName = Annotated[str, told(
    "is not a valid token name",
    "use 1-64 letters, digits, '-' or '_': it is shown in logs and metrics",
    pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z", examples=["staff"],
)]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class TokenConfig:
    """One [[access.tokens]] table: a token's name, the variable holding it, and the
    sources it may read (None: every source)."""

    name: TokenName
    token_env: v.EnvName
    sources: tuple[SourceName, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class AccessConfig:
    """[access]: the tokens; `public` lets a server off loopback run with none."""

    public: bool = False
    tokens: tuple[TokenConfig, ...] = ()


_KEYS: Final = ("public", "tokens")
_INLINE: Final = 'never put a token in the config: set token_env = "VAR" and the token in VAR'


def parse_access(
    origin: str, raw: object, sources: tuple[SourceConfig, ...], base_dir: Path
) -> AccessConfig:
    """The validated [access] table: token names and variables unique, every source a
    token names configured."""
    if raw is None:
        return AccessConfig()
    if not isinstance(raw, dict):
        raise fail(f"{origin}: access", "expected a table ([access])", raw)
    check_keys(raw, _KEYS, within(origin, "access"))
    public = raw.get("public", False)
    if not isinstance(public, bool):
        raise fail(f"{origin}: access.public", "expected true or false", public)
    items = raw.get("tokens", [])
    if not isinstance(items, list):
        raise fail(f"{origin}: access.tokens", "expected an array of tables ([[access.tokens]])")
    configured = {source.name for source in sources}
    names: dict[str, int] = {}
    variables: dict[str, int] = {}
    tokens: list[TokenConfig] = []
    for index, item in enumerate(items):
        where = within(origin, f"access.tokens[{index}]")
        if not isinstance(item, dict):
            raise fail(f"{origin}: access.tokens[{index}]", "expected a table", item)
        check_keys(item, ("name", "token_env", "sources"), where, {"token": _INLINE})
        token = read_table(TokenConfig, item, where, base_dir)
        if token.name in names:
            problem = f"duplicate token name (also used by access.tokens[{names[token.name]}])"
            raise fail(where("name"), problem, token.name)
        if token.token_env in variables:
            also = f"access.tokens[{variables[token.token_env]}]"
            raise fail(where("token_env"), f"names the same variable as {also}", token.token_env)
        for source in token.sources or ():
            if source not in configured:
                listed = ", ".join(sorted(configured))
                raise fail(
                    where("sources"), "names a source that is not configured", source,
                    hint=f"configured sources: {listed}",
                )  # fmt: skip
        names[token.name], variables[token.token_env] = index, index
        tokens.append(token)
    return AccessConfig(public=public, tokens=tuple(tokens))
