"""What a webhook delivery says: ragd's payload format, validated field by field.

Owns `Delivery` and `parse_delivery` (event, entry id, title, url, updated_at, content and
its type), and the entry id rules, since the id becomes a document key. Pure, like
`ragd.sources.webhooks`, which checks who sent the delivery: every rejection is a
`WebhookRejected(400)` whose one-line message names the field and is safe to send back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlsplit

from ragd.sources.json_body import got, json_object, optional_text
from ragd.sources.webhooks import WebhookRejected

__all__ = [
    "CONTENT_TYPES",
    "Delivery",
    "from_job_payload",
    "job_payload",
    "parse_delivery",
    "parse_time",
    "sortable_time",
    "validate_entry_id",
]

CONTENT_TYPES = ("text/markdown", "text/html", "text/plain")
MAX_ENTRY_ID = 128
MAX_TITLE = 1000
MAX_URL = 2048
_ENTRY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*", re.ASCII)


@dataclass(frozen=True)
class Delivery:
    """One validated delivery: `entry_id` may be put in a doc_id; `content` is None for a
    delete, and for an upsert that carries no content (the entry is fetched instead)."""

    event: Literal["upsert", "delete"]
    entry_id: str
    title: str | None = None
    url: str | None = None
    updated_at: datetime | None = None
    content: str | None = None
    content_type: str = "text/markdown"

    def version(self) -> str | None:
        """`updated_at` as fixed-width UTC text, so that text order is time order."""
        return None if self.updated_at is None else sortable_time(self.updated_at)


def sortable_time(moment: datetime) -> str:
    """A time as fixed-width UTC text, so that text order is time order (an entry's
    version, as the job queue and the manifest compare it)."""
    # isoformat, not strftime: "%Y" does not zero-pad years below 1000 on every platform.
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_delivery(body: bytes) -> Delivery:
    """Parse and validate ragd's payload format. Raises WebhookRejected(400) naming the field.

    Unknown fields are ignored; a null optional field counts as absent; a delete's content
    is type-checked, then dropped.
    """
    payload = json_object(body)

    for required in ("event", "id"):
        if payload.get(required) is None:
            raise WebhookRejected(400, f"{required} is missing")
    event = payload["event"]
    if event not in ("upsert", "delete"):
        raise WebhookRejected(400, 'event must be "upsert" or "delete"' + got(event))
    entry_id = validate_entry_id(payload["id"])
    title = optional_text(payload, "title", MAX_TITLE)
    url = _url(optional_text(payload, "url", MAX_URL))
    updated_at = parse_time(optional_text(payload, "updated_at", 64), "updated_at")
    content = optional_text(payload, "content", None)
    content_type = optional_text(payload, "content_type", 64) or "text/markdown"
    if content_type not in CONTENT_TYPES:
        raise WebhookRejected(400, "content_type must be one of " + ", ".join(CONTENT_TYPES))
    return Delivery(
        event="upsert" if event == "upsert" else "delete",
        entry_id=entry_id,
        title=title,
        url=url,
        updated_at=updated_at,
        content=content if event == "upsert" else None,
        content_type=content_type,
    )


def validate_entry_id(value: object) -> str:
    """Return a CMS entry id that is safe as a document key, or raise WebhookRejected(400).

    1-128 characters matching ^[A-Za-z0-9][A-Za-z0-9._:-]*$, so no path separators, leading
    dot, percent-encoding, whitespace or control characters. An integer (not a boolean) is
    accepted as its decimal text, since many CMSes number their entries.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise WebhookRejected(400, "id must be a string (or an integer)" + got(value))
    if not value:
        raise WebhookRejected(400, "id is empty")
    if len(value) > MAX_ENTRY_ID:
        raise WebhookRejected(400, f"id is {len(value)} characters; the limit is {MAX_ENTRY_ID}")
    if _ENTRY_ID_RE.fullmatch(value):
        return value
    raise WebhookRejected(400, f"id {_id_problem(value)}")


def _id_problem(value: str) -> str:
    # The most telling problem first: "../x" is about the separator, not the leading dot.
    for char in value:
        if char in "/\\":
            return "contains a path separator; ids are keys, never paths"
        if char == "%":
            return "contains '%'; ids are used as sent, never URL-decoded"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "contains a control character"
        if char.isspace():
            return "contains whitespace"
        if not char.isascii():
            return "contains a non-ASCII character"
    if not value[0].isalnum():
        return "must start with a letter or digit"
    bad = next((c for c in value if not (c.isalnum() or c in "._:-")), "?")
    return f"contains {bad!r}; allowed are letters, digits, '.', '_', ':' and '-'"


def _url(value: str | None) -> str | None:
    if value is None:
        return None
    if web_url(value) is None:
        raise WebhookRejected(400, "url must be an absolute http:// or https:// URL")
    return value


def web_url(value: object) -> str | None:
    """`value` if it is an absolute http(s) URL of at most MAX_URL printable characters,
    else None: the link a hit shows, taken from a CMS's or a site's own answer."""
    if not isinstance(value, str) or len(value) > MAX_URL:
        return None
    try:
        parts = urlsplit(value)
        ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unbalanced "[" in the host
        ok = False
    printable = not any(c.isspace() or not c.isprintable() for c in value)
    return value if ok and printable else None


def web_title(value: object) -> str | None:
    """`value` cut to MAX_TITLE characters if it is text that is not blank, else None."""
    return value[:MAX_TITLE] if isinstance(value, str) and value.strip() else None


def parse_time(value: object, name: str, *, naive_is_utc: bool = False) -> datetime | None:
    """An ISO 8601 date-time field as UTC (None when absent); WebhookRejected(400) naming
    the field otherwise. Without `naive_is_utc` a time must carry its zone: guessing one
    could order an old update after a new one."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise WebhookRejected(400, f"{name} must be a string" + got(value))
    try:
        parsed = datetime.fromisoformat(value) if value.isascii() and len(value) <= 64 else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise WebhookRejected(400, f"{name} is not an ISO 8601 date-time")
    if parsed.tzinfo is None and not naive_is_utc:
        raise WebhookRejected(400, f"{name} has no timezone (add 'Z' or an offset)")
    try:
        return parsed.replace(tzinfo=parsed.tzinfo or UTC).astimezone(UTC)
    except OverflowError:
        raise WebhookRejected(400, f"{name} is out of range") from None


def job_payload(delivery: Delivery) -> str:
    """The delivery as the job queue keeps it (its key and version are the job's own)."""
    return json.dumps(
        {
            "event": delivery.event,
            "title": delivery.title,
            "url": delivery.url,
            "content": delivery.content,
            "content_type": delivery.content_type,
        }
    )


def from_job_payload(key: str, payload: str | None, version: str | None) -> Delivery:
    """The delivery an `entry` job holds (see `job_payload`)."""
    fields = json.loads(payload or "{}")
    updated = None if version is None else datetime.fromisoformat(version)
    return Delivery(
        event="delete" if fields.get("event") == "delete" else "upsert",
        entry_id=key,
        title=fields.get("title"),
        url=fields.get("url"),
        updated_at=updated,
        content=fields.get("content"),
        content_type=fields.get("content_type") or "text/markdown",
    )
