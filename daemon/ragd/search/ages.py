"""Times as people read them: "3 min ago", for the CLI's text and the status page.

Owns the one rule for turning a manifest time (ISO 8601 UTC) into an age against a given
`now`; JSON keeps the ISO times.
"""

from __future__ import annotations

from datetime import datetime

_AGE_UNITS = (("d", 86400), ("h", 3600), ("min", 60))


def relative_time(moment: str | None, now: datetime) -> str:
    """A manifest time as a person reads it against `now`: "3 min ago", "in 57 min" for
    one to come, "just now" within a second, "never" for none. Whole units, rounded down:
    an age never looks younger than it is."""
    if not moment:
        return "never"
    seconds = int((now - datetime.fromisoformat(moment)).total_seconds())
    if seconds == 0:
        return "just now"
    span = abs(seconds)
    amount = next(
        (f"{span // size} {unit}" for unit, size in _AGE_UNITS if span >= size), f"{span} s"
    )
    return f"{amount} ago" if seconds > 0 else f"in {amount}"
