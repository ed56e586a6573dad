"""TOML text as the document config.toml's schema reads, or a one-line ConfigError.

Owns `read_toml`: tomllib's syntax errors (they name the line), and what tomllib accepts
or chokes on that no setting can use, each refused naming the file. Nesting: tomllib
recurses once per level of arrays and inline tables (RecursionError some hundreds of
levels down), while dotted keys nest tables without limit for the checks and messages to
recurse through later; ragd's settings nest at most 3 levels, so a value deeper than
MAX_DEPTH is refused. Integers: TOML's are 64-bit, tomllib returns any size, and raises
ValueError for a decimal one of over 4,300 digits; a hexadecimal one that long converts
but cannot be shown in a message.
"""

import tomllib
from typing import Any, Final

from ragd.errors import ConfigError

__all__ = ["MAX_DEPTH", "read_toml"]

MAX_DEPTH: Final = 16
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
_SHOWN_KEY_CHARS: Final = 40
_RANGE: Final = f"TOML integers are 64-bit, from {INT_MIN} to {INT_MAX}"


def read_toml(text: str, origin: str) -> dict[str, Any]:
    """The TOML document in `text`; ConfigError naming `origin` when it is not TOML, nests
    deeper than MAX_DEPTH, or holds an integer outside 64 bits."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # the message ends "(at line N, column M)"
        raise ConfigError(f"{origin}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"{origin}: invalid TOML: arrays or inline tables nested too deeply "
            f"(ragd reads at most {MAX_DEPTH} levels)"
        ) from None
    except ValueError:  # only int(): a decimal integer over sys.get_int_max_str_digits()
        raise ConfigError(f"{origin}: invalid TOML: an integer is too large ({_RANGE})") from None
    _check_values(doc, origin)
    return doc


def _check_values(doc: dict[str, Any], origin: str) -> None:
    # Iterative, so that checking a deep document cannot itself run out of stack.
    pending: list[tuple[tuple[str, ...], object]] = [((), doc)]
    while pending:
        path, value = pending.pop()
        if len(path) > MAX_DEPTH:
            raise ConfigError(
                f"{origin}: {_dotted(path)}: nested more than {MAX_DEPTH} levels deep "
                "(ragd's settings nest at most 3)"
            )
        if isinstance(value, dict):
            pending.extend(((*path, _key(k)), v) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend(((*path, f"[{i}]"), v) for i, v in enumerate(value))
        elif isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            raise ConfigError(f"{origin}: {_dotted(path)}: integer out of range ({_RANGE})")


def _key(key: str) -> str:
    shown = key if len(key) <= _SHOWN_KEY_CHARS else key[: _SHOWN_KEY_CHARS - 3] + "..."
    return f".{shown}" if shown.isprintable() else f".{shown!r}"  # the message stays one line


def _dotted(path: tuple[str, ...]) -> str:
    return "".join(path).removeprefix(".")
