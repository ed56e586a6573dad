"""Webhook deliveries: who sent them (signatures, bearer token) and with which delivery id.

Owns the signature schemes ragd accepts (Standard Webhooks, GitHub's X-Hub-Signature-256,
bearer-token-only), the delivery id used for idempotency, and `WebhookRejected`. What a
delivery says (ragd's payload format, the entry id that becomes a document key) is
`ragd.sources.deliveries`.

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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "WebhookAuth",
    "WebhookRejected",
    "authenticate",
    "check_bearer",
    "secret_key",
    "sign_github",
    "sign_standard_webhooks",
]

Scheme = Literal["standard-webhooks", "github", "none"]
MAX_DELIVERY_ID = 256
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
        check_bearer(auth.bearer_token, lowered.get("authorization"))
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


def check_bearer(token: str, header: str | None) -> None:
    """Refuse (401) an Authorization header that is not `Bearer <token>`."""
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
