"""What a webhook delivery says: ragd's payload format, validated field by field.

Owns `Delivery` and `parse_delivery` (event, entry id, title, url, updated_at, content and
its type), and the entry id rules, since the id becomes a document key. Pure, like
`ragd.sources.webhooks`, which checks who sent the delivery: every rejection is a
`WebhookRejected(400)` whose one-line message names the field and is safe to send back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from ragd.sources.webhooks import WebhookRejected

__all__ = ["CONTENT_TYPES", "Delivery", "parse_delivery", "validate_entry_id"]

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
        t = self.updated_at
        if t is None:
            return None
        # isoformat, not strftime: "%Y" does not zero-pad years below 1000 on every platform.
        return t.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that named some key twice (kept only to be refused at the top level)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else _DuplicateKeys(obj)


def parse_delivery(body: bytes) -> Delivery:
    """Parse and validate ragd's payload format. Raises WebhookRejected(400) naming the field.

    Unknown fields are ignored; a null optional field counts as absent; a delete's content
    is type-checked, then dropped.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WebhookRejected(400, "the body is not valid UTF-8") from None
    try:
        payload = json.loads(text, object_pairs_hook=_object)
    except RecursionError:
        raise WebhookRejected(400, "the body is JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and ints over Python's digit limit
        raise WebhookRejected(400, f"the body is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(payload, dict):
        raise WebhookRejected(400, f"the body must be a JSON object, not {_kind(payload)}")
    if isinstance(payload, _DuplicateKeys):
        raise WebhookRejected(400, "the JSON object names the same field twice")

    for required in ("event", "id"):
        if payload.get(required) is None:
            raise WebhookRejected(400, f"{required} is missing")
    event = payload["event"]
    if event not in ("upsert", "delete"):
        raise WebhookRejected(400, 'event must be "upsert" or "delete"' + _got(event))
    entry_id = validate_entry_id(payload["id"])
    title = _optional_text(payload, "title", MAX_TITLE)
    url = _url(_optional_text(payload, "url", MAX_URL))
    updated_at = _timestamp(_optional_text(payload, "updated_at", 64))
    content = _optional_text(payload, "content", None)
    content_type = _optional_text(payload, "content_type", 64) or "text/markdown"
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
        raise WebhookRejected(400, "id must be a string (or an integer)" + _got(value))
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


def _optional_text(payload: Mapping[str, Any], key: str, limit: int | None) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WebhookRejected(400, f"{key} must be a string" + _got(value))
    if limit is not None and len(value) > limit:
        raise WebhookRejected(400, f"{key} is {len(value)} characters; the limit is {limit}")
    return value


def _url(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parts = urlsplit(value)
        ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unbalanced "[" in the host
        ok = False
    if not ok or any(c.isspace() or not c.isprintable() for c in value):
        raise WebhookRejected(400, "url must be an absolute http:// or https:// URL")
    return value


def _timestamp(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value) if value.isascii() else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise WebhookRejected(400, "updated_at is not an ISO 8601 date-time")
    if parsed.tzinfo is None:
        raise WebhookRejected(400, "updated_at has no timezone (add 'Z' or an offset)")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise WebhookRejected(400, "updated_at is out of range") from None


_KINDS = ((bool, "a boolean"), (int | float, "a number"), (str, "a string"), (list, "an array"))


def _kind(value: object) -> str:
    # Name the JSON type received, never the value: it may be huge or hostile.
    if value is None:
        return "null"
    return next((name for t, name in _KINDS if isinstance(value, t)), "an object")


def _got(value: object) -> str:
    return "" if isinstance(value, str) else f", got {_kind(value)}"
