"""Webhook deliveries: who sent them (signatures, bearer token) and what they say (payload).

Owns the signature schemes ragd accepts (Standard Webhooks, GitHub's X-Hub-Signature-256,
bearer-token-only), the delivery id used for idempotency, and the validation of ragd's
payload format, including the entry id that becomes the document key.

Pure: no I/O, no clock (the caller passes `now`), no HTTP framework, no logging. Every
rejection is a `WebhookRejected` whose message is one line that is safe to send back and to
log: it never contains a secret, a token or attacker-chosen header text. The HTTP layer
maps `status` to its answer; it must hand in the exact body bytes it received.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = [
    "CONTENT_TYPES",
    "Delivery",
    "WebhookAuth",
    "WebhookRejected",
    "authenticate",
    "parse_delivery",
    "secret_key",
    "sign_github",
    "sign_standard_webhooks",
    "validate_entry_id",
]

Scheme = Literal["standard-webhooks", "github", "none"]
CONTENT_TYPES = ("text/markdown", "text/html", "text/plain")

MAX_ENTRY_ID = 128
MAX_DELIVERY_ID = 256
MAX_TITLE = 1000
MAX_URL = 2048
_ENTRY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*", re.ASCII)
_DELIVERY_ID_RE = re.compile(rf"[\x21-\x7e]{{1,{MAX_DELIVERY_ID}}}", re.ASCII)
_HEX_SHA256_RE = re.compile(r"sha256=([0-9a-fA-F]{64})", re.ASCII)
# Digits only: no sign, fraction or spaces. Because the timestamp can never contain ".",
# "{id}.{timestamp}.{body}" splits one way only, whatever the id holds.
_TIMESTAMP_RE = re.compile(r"[0-9]{1,15}", re.ASCII)


class WebhookRejected(Exception):
    """A delivery is refused: 401 (authentication) or 400 (malformed payload or entry id)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class WebhookAuth:
    """How one webhook source authenticates deliveries. Build it with `from_secret_text`.

    `secret` is the HMAC key (None only for scheme "none"); `bearer_token`, when set, must
    also be presented as `Authorization: Bearer <token>`, with or without a signature.
    """

    scheme: Scheme
    secret: bytes | None = field(repr=False)
    bearer_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.scheme == "none":
            if self.secret is not None:
                raise ValueError("scheme 'none' checks no signature; a secret would be ignored")
            if not self.bearer_token:
                raise ValueError("scheme 'none' needs a bearer token, or anyone could post")
        elif not self.secret:
            raise ValueError(f"scheme {self.scheme!r} needs a non-empty secret")
        if self.bearer_token is not None and not self.bearer_token.strip():
            raise ValueError("the bearer token is empty")

    def __repr__(self) -> str:
        secret = "None" if self.secret is None else "<redacted>"
        token = "None" if self.bearer_token is None else "<redacted>"
        return f"WebhookAuth(scheme={self.scheme!r}, secret={secret}, bearer_token={token})"

    @classmethod
    def from_secret_text(
        cls, scheme: Scheme, secret_text: str | None, bearer_token: str | None = None
    ) -> WebhookAuth:
        """Build from the secret as configured: `whsec_` decoding applies to Standard Webhooks
        only, since GitHub keys its HMAC with the secret's text as typed."""
        if secret_text is None:
            key = None
        elif scheme == "standard-webhooks":
            key = secret_key(secret_text)
        else:
            key = secret_text.strip().encode()
        return cls(scheme, key, bearer_token.strip() if bearer_token else bearer_token)


def secret_key(secret_text: str) -> bytes:
    """The Standard Webhooks HMAC key: `whsec_<base64>` decoded, any other text as UTF-8.

    Surrounding whitespace (a secret file's newline) is not part of the secret. Raises
    ValueError, without echoing the secret, when it is empty or its base64 is invalid.
    """
    text = secret_text.strip()
    if text.startswith("whsec_"):
        encoded = text.removeprefix("whsec_")
        try:
            # Some senders drop the padding; the reference libraries accept that too.
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the webhook secret starts with 'whsec_' but is not base64") from None
    else:
        key = text.encode()
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def sign_standard_webhooks(secret: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` entry for a delivery: "v1," + base64 HMAC-SHA256."""
    mac = hmac.new(secret, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


def sign_github(secret: bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value for a body: "sha256=" + hex HMAC-SHA256."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


# --- authentication --------------------------------------------------------------------------

_SIGNED = ("id", "timestamp", "signature")
_READ_HEADERS = frozenset(
    {"authorization", "x-hub-signature-256", "x-github-delivery"}
    | {f"{family}-{part}" for family in ("webhook", "svix") for part in _SIGNED}
)


def authenticate(
    auth: WebhookAuth,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance: float = 300,
) -> str:
    """Check a delivery's credentials and return its delivery id (the idempotency key).

    `headers` is any mapping (names in any case); `body` the exact bytes received; `now`
    the current unix time. Raises WebhookRejected(401) when anything is missing or wrong.
    """
    lowered = _lower_headers(headers)
    if auth.bearer_token is not None:
        _check_bearer(auth.bearer_token, lowered.get("authorization"))
    if auth.scheme == "standard-webhooks":
        assert auth.secret is not None  # guaranteed by WebhookAuth.__post_init__
        return _check_standard(auth.secret, lowered, body, now=now, tolerance=tolerance)
    if auth.scheme == "github":
        assert auth.secret is not None
        _check_github(auth.secret, lowered.get("x-hub-signature-256"), body)
        return _delivery_id(lowered.get("x-github-delivery"), body)
    return _delivery_id(lowered.get("webhook-id"), body)


def _lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    # Items, not keys: a multi-valued mapping (Starlette's Headers) yields every copy.
    # Two values for a header we read is ambiguous, and a proxy and ragd could each
    # believe a different one, so it is refused rather than resolved.
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in _READ_HEADERS and key in lowered:
            raise WebhookRejected(401, f"the {key} header is given more than once")
        lowered[key] = value
    return lowered


def _check_bearer(token: str, header: str | None) -> None:
    if header is None:
        raise WebhookRejected(401, "missing Authorization header (expected 'Bearer <token>')")
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise WebhookRejected(401, "the Authorization header is not 'Bearer <token>'")
    if not hmac.compare_digest(_raw(given.strip()), _raw(token)):
        raise WebhookRejected(401, "the bearer token does not match")


def _check_standard(
    secret: bytes, headers: Mapping[str, str], body: bytes, *, now: float, tolerance: float
) -> str:
    # Svix sends the same scheme under svix-* names unless white-labelled, and its
    # libraries accept either family; so does ragd, one family at a time.
    family = "webhook"
    if not any(f"webhook-{p}" in headers for p in _SIGNED) and any(
        f"svix-{p}" in headers for p in _SIGNED
    ):
        family = "svix"
    for part in _SIGNED:
        if not headers.get(f"{family}-{part}"):
            raise WebhookRejected(401, f"missing {family}-{part} header")
    msg_id, stamp, signatures = (headers[f"{family}-{part}"] for part in _SIGNED)
    if not _DELIVERY_ID_RE.fullmatch(msg_id):
        raise WebhookRejected(401, f"{family}-id is not 1-256 printable ASCII characters")
    if not _TIMESTAMP_RE.fullmatch(stamp):
        raise WebhookRejected(401, f"{family}-timestamp is not a whole number of unix seconds")
    # Both directions: a stale delivery may be a replay, and one from the future would stay
    # replayable for longer than the tolerance once it is no longer in the future.
    skew = now - int(stamp)
    if skew > tolerance:
        raise WebhookRejected(401, f"{family}-timestamp is {skew:.0f} s old (limit {tolerance:g})")
    if -skew > tolerance:
        hint = " (milliseconds instead of seconds?)" if int(stamp) > now * 100 else ""
        raise WebhookRejected(401, f"{family}-timestamp is in the future{hint}")
    expected = hmac.new(secret, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    # Several signatures during a secret rotation: any v1 match is enough. Other versions
    # (v1a, asymmetric) and malformed entries are skipped, never fatal.
    for entry in signatures.split():
        version, _, encoded = entry.partition(",")
        if version != "v1" or len(encoded) > 88:
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            return msg_id
    raise WebhookRejected(401, f"no {family}-signature matches this body and secret")


def _check_github(secret: bytes, header: str | None, body: bytes) -> None:
    if not header:
        raise WebhookRejected(401, "missing X-Hub-Signature-256 header")
    match = _HEX_SHA256_RE.fullmatch(header.strip())
    if match is None:
        raise WebhookRejected(401, "X-Hub-Signature-256 is not 'sha256=<64 hex digits>'")
    expected = hmac.new(secret, body, hashlib.sha256).digest()
    if not hmac.compare_digest(bytes.fromhex(match.group(1)), expected):
        raise WebhookRejected(401, "X-Hub-Signature-256 does not match this body and secret")


def _delivery_id(header: str | None, body: bytes) -> str:
    # Without a usable sender id, identical bodies are the same delivery: a retry is
    # recognised, and a genuinely new change carries a new updated_at or content anyway.
    if header is not None and _DELIVERY_ID_RE.fullmatch(header):
        return header
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _raw(text: str) -> bytes:
    # compare_digest refuses non-ASCII str; compare bytes. surrogatepass so that no header
    # value, however odd, turns into an exception other than WebhookRejected.
    return text.encode("utf-8", "surrogatepass")


# --- payload ---------------------------------------------------------------------------------


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
