"""Duration syntax used by the configuration: "500ms", "90m", "1h30m", "7d", "2w", or bare seconds.

Owns only the syntax (text or number to `timedelta`, and back). It knows nothing about keys,
files or messages: `ragd.config` decides which settings are durations and turns a
`DurationError` into a `ConfigError` that names the key. Imports nothing from ragd.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

__all__ = ["DURATION_HINT", "DurationError", "duration_from", "format_duration"]

DURATION_HINT = 'a number and a unit (us, ms, s, m, h, d, w), e.g. "30s", "10m", "1h30m" or "7d"'

_UNITS: dict[str, timedelta] = {
    "us": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
# Longer unit names first in the alternation so "5ms" is not read as "5m" followed by junk.
_PART = r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d|w)"
_PART_RE = re.compile(_PART, re.ASCII)
_WHOLE_RE = re.compile(rf"(?:{_PART}\s*)+", re.ASCII)
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?", re.ASCII)

# Largest whole-unit breakdown used by format_duration; weeks are left out on purpose so a
# week reads as "7d", matching how the example configuration writes max_age.
_FORMAT_UNITS: tuple[tuple[str, int], ...] = (
    ("d", 86_400_000_000),
    ("h", 3_600_000_000),
    ("m", 60_000_000),
    ("s", 1_000_000),
    ("ms", 1_000),
    ("us", 1),
)


class DurationError(ValueError):
    """A value is not a positive duration; `problem` says why, `hint` how to write one."""

    def __init__(
        self, problem: str, *, hint: str | None = DURATION_HINT, wrong_type: bool = False
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint
        self.wrong_type = wrong_type  # neither text nor a number, as opposed to a bad value


def duration_from(value: object) -> timedelta:
    """Convert a duration string ("1h30m") or a number of seconds to a positive timedelta.

    Raises DurationError for anything else, including zero, negative and non-finite values.
    Units are case-sensitive: "m" is minutes, and there is no month unit.
    """
    # bool is a subclass of int; `true` is never a duration.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DurationError("expected a duration string or a number of seconds", wrong_type=True)
    try:
        if isinstance(value, str):
            result = _from_text(value)
        else:
            if not math.isfinite(value):
                raise DurationError("must be a finite number of seconds")
            result = timedelta(seconds=value)
    except OverflowError:
        raise DurationError("is too large", hint=None) from None
    if result <= timedelta(0):
        raise DurationError("must be greater than zero", hint=None)
    return result


def _from_text(text: str) -> timedelta:
    stripped = text.strip()
    if stripped.startswith("-"):
        raise DurationError("must be greater than zero", hint=None)
    if _NUMBER_RE.fullmatch(stripped):
        return timedelta(seconds=float(stripped))
    if not _WHOLE_RE.fullmatch(stripped):
        raise DurationError("is not a duration")
    total = timedelta(0)
    for number, unit in _PART_RE.findall(stripped):
        total += _UNITS[unit] * float(number)
    return total


def format_duration(td: timedelta) -> str:
    """Format a timedelta compactly: "7d", "1h30m", "500ms"; zero is "0s".

    The output is accepted by duration_from, so format/parse round-trips positive values.
    """
    micros = (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    parts: list[str] = []
    for unit, size in _FORMAT_UNITS:
        count, micros = divmod(micros, size)
        if count:
            parts.append(f"{count}{unit}")
    return sign + "".join(parts)
