"""Duration syntax of the configuration: "500ms", "90m", "1h30m", "7d", "2w", or bare
seconds, to `timedelta` and back. Which settings are durations is the schema's."""

import math
import re
from datetime import timedelta

__all__ = ["DURATION_HINT", "DurationError", "duration_from", "format_duration"]

DURATION_HINT = 'a number and a unit (us, ms, s, m, h, d, w), e.g. "30s", "10m", "1h30m" or "7d"'
_UNITS = {
    "w": timedelta(weeks=1), "d": timedelta(days=1), "h": timedelta(hours=1),
    "m": timedelta(minutes=1), "s": timedelta(seconds=1), "ms": timedelta(milliseconds=1),
    "us": timedelta(microseconds=1),
}  # fmt: skip
# Longer unit names first in the alternation so "5ms" is not read as "5m" followed by junk.
_PART = r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d|w)"
_WHOLE_RE = re.compile(rf"(?:{_PART}\s*)+", re.ASCII)


class DurationError(ValueError):
    """A value is not a positive duration; `problem` says why, `hint` how to write one."""

    def __init__(self, problem: str, *, hint: str | None = DURATION_HINT) -> None:
        super().__init__(problem)
        self.problem, self.hint = problem, hint


def duration_from(value: object) -> timedelta:
    """A positive timedelta from a duration string ("1h30m") or a number of seconds; units
    are case-sensitive ("m" is minutes, there is no month). DurationError for anything
    else, including zero, negative and non-finite values."""
    # bool is a subclass of int; `true` is never a duration.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DurationError("expected a duration string or a number of seconds")
    if isinstance(value, float) and not math.isfinite(value):
        raise DurationError("must be a finite number of seconds")
    text = value.strip() if isinstance(value, str) else str(value)
    try:
        if text.startswith("-"):
            result = timedelta(0)
        elif re.fullmatch(r"\d+(?:\.\d+)?", text, re.ASCII) or not isinstance(value, str):
            result = timedelta(seconds=float(value))
        elif _WHOLE_RE.fullmatch(text):
            parts = re.findall(_PART, text, re.ASCII)
            result = sum((_UNITS[unit] * float(n) for n, unit in parts), timedelta(0))
        else:
            raise DurationError("is not a duration")
    except OverflowError:
        raise DurationError("is too large", hint=None) from None
    if result <= timedelta(0):
        raise DurationError("must be greater than zero", hint=None)
    return result


def format_duration(td: timedelta) -> str:
    """A timedelta written compactly ("7d", "1h30m", "500ms", zero as "0s"), as
    duration_from reads it back. Weeks are left out: a week reads as "7d", as the example
    configuration writes max_age."""
    parts, rest = ["-" if td < timedelta(0) else ""], abs(td)
    for unit, size in list(_UNITS.items())[1:]:
        count, rest = divmod(rest, size)
        parts.append(f"{count}{unit}" if count else "")
    return "".join(parts) or "0s"
