"""The CMS webhook signatures, checked against answers ragd did not compute.

- Sanity: the test vectors of Sanity's own toolkit, verbatim (sanity-io/webhook-toolkit,
  test/signature.test.ts: `isValidSignature`, `encodeSignatureHeader`).
- Contentful: node-apps-toolkit's tests fix the inputs but assert no signature, so the
  vectors below were computed by a line-for-line port of its src/requests/sign-request.ts
  and utils.ts (contentful/node-apps-toolkit @ 42bf35e), and checked against a second,
  independent Python verifier. Vector A is the toolkit's own VALID_SECRET, VALID_TIMESTAMP
  and VALID_REQUEST; vector B a webhook-like POST with the headers Contentful sends.
- Ghost: computed here with hmac the way ghost/core/core/server/services/webhooks/
  webhook-trigger.js computes it: hex HMAC-SHA256 of the body followed by the time in ms,
  sent as `X-Ghost-Signature: sha256=<hex>, t=<ms>`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest

from ragd.sources.cms.contentful import ContentfulFormat, canonical_request, sign
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import WebhookRequest, body_delivery_id
from ragd.sources.cms.ghost import GhostFormat
from ragd.sources.cms.sanity import SanityFormat
from ragd.sources.cms.sanity import sign as sanity_sign
from ragd.sources.webhooks import WebhookRejected

Format = GhostFormat | SanityFormat | ContentfulFormat


def rejected(fmt: Format, request: WebhookRequest, now: float) -> str:
    with pytest.raises(WebhookRejected) as info:
        fmt.authenticate(request, now=now)
    assert info.value.status == 401
    assert "\n" not in info.value.message
    return info.value.message


# --- Sanity -----------------------------------------------------------------------------------

SANITY_SECRET = b"test"
SANITY_BODY = b'{"_id":"resume"}'
SANITY_T = 1633519811129
SANITY_V1 = "tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N0"
SANITY_HEADER = f"t={SANITY_T},v1={SANITY_V1}"
SANITY_NOW = SANITY_T / 1000
SANITY = SanityFormat(SANITY_SECRET, FieldMap())


def sanity_request(
    header: str = SANITY_HEADER, body: bytes = SANITY_BODY, extra: dict[str, str] | None = None
) -> WebhookRequest:
    return WebhookRequest({"sanity-webhook-signature": header, **(extra or {})}, body)


def test_sanity_signs_the_toolkits_encode_vector() -> None:
    body = b'{"title":"GROQ-Hooks are neat"}'

    assert sanity_sign(b"try-me", 1633518820676, body) == (
        "e7C9h2sfbFfc4V7TEz7PSOp4IoNzl0UdVsBV-1wgdeA"
    )


def test_sanity_signs_the_toolkits_valid_request_vector() -> None:
    assert sanity_sign(SANITY_SECRET, SANITY_T, SANITY_BODY) == SANITY_V1


def test_the_toolkits_valid_request_is_authentic_at_the_time_it_was_signed() -> None:
    delivery = SANITY.authenticate(sanity_request(), now=SANITY_NOW)

    assert delivery == body_delivery_id("sanity", SANITY_BODY, str(SANITY_T).encode())


def test_a_space_after_the_comma_is_accepted_as_the_toolkit_parses_it() -> None:
    header = f"t={SANITY_T}, v1={SANITY_V1}"

    assert SANITY.authenticate(sanity_request(header), now=SANITY_NOW)


@pytest.mark.parametrize(
    ("header", "body"),
    [
        (f"t={SANITY_T - 1},v1={SANITY_V1}", SANITY_BODY),
        (f"t={SANITY_T},v1={SANITY_V1[:-1]}1", SANITY_BODY),
        (SANITY_HEADER, b'{"_id":"structure"}'),
    ],
    ids=["timestamp", "hash", "payload"],
)
def test_the_toolkits_invalid_signatures_are_rejected(header: str, body: bytes) -> None:
    message = rejected(SANITY, sanity_request(header, body), SANITY_NOW)

    assert message == "sanity-webhook-signature does not match this body"


@pytest.mark.parametrize(
    "header",
    [
        f"t={SANITY_T},v5={SANITY_V1}",
        f"t={SANITY_T},v1={SANITY_V1},v1={SANITY_V1}",
        f"v1={SANITY_V1},t={SANITY_T}",
        SANITY_V1,
        f"t=,v1={SANITY_V1}",
    ],
    ids=["v5-scheme", "two-signatures", "reordered", "bare-signature", "no-time"],
)
def test_a_signature_header_the_toolkit_cannot_parse_is_rejected(header: str) -> None:
    message = rejected(SANITY, sanity_request(header), SANITY_NOW)

    assert "is not 't=<ms>,v1=<signature>'" in message


def test_a_sanity_delivery_without_a_signature_is_rejected() -> None:
    request = WebhookRequest({"sanity-operation": "update"}, SANITY_BODY)

    assert "missing sanity-webhook-signature" in rejected(SANITY, request, SANITY_NOW)


def test_a_sanity_signature_from_another_secret_is_rejected() -> None:
    other = SanityFormat(b"not-test", FieldMap())

    rejected(other, sanity_request(), SANITY_NOW)


def test_sanity_retries_for_30_minutes_so_a_signature_may_be_35_minutes_old() -> None:
    assert SANITY.authenticate(sanity_request(), now=SANITY_NOW + 34 * 60)
    assert "s off" in rejected(SANITY, sanity_request(), SANITY_NOW + 36 * 60)


def test_a_sanity_signature_from_the_future_is_rejected() -> None:
    assert "s off" in rejected(SANITY, sanity_request(), SANITY_NOW - 36 * 60)


def test_a_timestamp_in_seconds_is_rejected_as_the_toolkit_rejects_it() -> None:
    header = f"t={SANITY_T // 1000},v1={sanity_sign(SANITY_SECRET, SANITY_T // 1000, SANITY_BODY)}"

    rejected(SANITY, sanity_request(header), SANITY_NOW)


def test_a_fresh_signature_made_with_the_toolkits_algorithm_is_authentic() -> None:
    now = 1_800_000_000.0
    stamp = int(now * 1000)
    mac = hmac.new(SANITY_SECRET, f"{stamp}.".encode() + SANITY_BODY, hashlib.sha256).digest()
    v1 = base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    assert SANITY.authenticate(sanity_request(f"t={stamp},v1={v1}"), now=now)


def test_sanitys_idempotency_key_is_the_delivery_id() -> None:
    request = sanity_request(extra={"idempotency-key": "msg-2Qk7x.abc_1"})

    assert SANITY.authenticate(request, now=SANITY_NOW) == "sanity:msg-2Qk7x.abc_1"


@pytest.mark.parametrize("key", ["", "has spaces", "k" * 129, "semi;colon", "ünï"])
def test_an_unusable_idempotency_key_falls_back_to_a_hash_of_the_delivery(key: str) -> None:
    request = sanity_request(extra={"idempotency-key": key})

    delivery = SANITY.authenticate(request, now=SANITY_NOW)

    assert re.fullmatch(r"sanity:sha256:[0-9a-f]{64}", delivery)


# --- Contentful -------------------------------------------------------------------------------

CF_SECRET = b"a" * 64
CF_T = "1603379941037"
CF_NOW = int(CF_T) / 1000
ALWAYS_SIGNED = "x-contentful-signed-headers,x-contentful-timestamp"

# Vector A: node-apps-toolkit's VALID_REQUEST (GET, no other headers, no body).
VECTOR_A_CANONICAL = (
    b"GET\n/api/resources/1\n"
    b"x-contentful-signed-headers:x-contentful-signed-headers,x-contentful-timestamp;"
    b"x-contentful-timestamp:1603379941037\n"
)
VECTOR_A_SIGNATURE = "3b21d63c31a2a92d38945394da0b1a2a0dc2d9bf13ef4dfd91b9f3fa1440b404"

# Vector B: a webhook-like POST, every header Contentful sends signed.
VECTOR_B_BODY = (
    b'{"sys":{"type":"Entry","id":"5KsDBWseXY6QegucYAoacS"},'
    b'"fields":{"title":{"en-US":"Hello, World!"}}}'
)
VECTOR_B_KEY = "94516f9a3fe42e3065ad9ef4f2a9f865c9bf0a962db8b7cfcb470b42052ea22c"
VECTOR_B_CRN = (
    "crn:contentful:::content:spaces/yadj1kx9rmg0/environments/master/entries/"
    "5KsDBWseXY6QegucYAoacS"
)
VECTOR_B_SIGNED = (
    "content-type,x-contentful-crn,x-contentful-idempotency-key,x-contentful-signed-headers,"
    "x-contentful-timestamp,x-contentful-topic,x-contentful-webhook-name,"
    "x-contentful-webhook-request-attempt"
)
VECTOR_B_HEADERS = {
    "x-contentful-topic": "ContentManagement.Entry.publish",
    "x-contentful-webhook-name": "ragd",
    "x-contentful-crn": VECTOR_B_CRN,
    "x-contentful-idempotency-key": VECTOR_B_KEY,
    "x-contentful-webhook-request-attempt": "1",
    "content-type": "application/vnd.contentful.management.v1+json",
    "x-contentful-signed-headers": VECTOR_B_SIGNED,
    "x-contentful-timestamp": CF_T,
    "x-contentful-signature": "e110e2ff65b1bffe5dc28e06edfb7e929ae87e81f4b58dfbb4447f99eb0f789a",
}
VECTOR_B_CANONICAL = (
    "POST\n/webhooks/contentful\n"
    "content-type:application/vnd.contentful.management.v1+json;"
    f"x-contentful-crn:{VECTOR_B_CRN};"
    f"x-contentful-idempotency-key:{VECTOR_B_KEY};"
    f"x-contentful-signed-headers:{VECTOR_B_SIGNED};"
    "x-contentful-timestamp:1603379941037;"
    "x-contentful-topic:ContentManagement.Entry.publish;"
    "x-contentful-webhook-name:ragd;"
    "x-contentful-webhook-request-attempt:1\n"
).encode() + VECTOR_B_BODY
CONTENTFUL = ContentfulFormat(FieldMap(), secret=CF_SECRET)


def vector_a() -> WebhookRequest:
    headers = {"x-contentful-signed-headers": ALWAYS_SIGNED, "x-contentful-timestamp": CF_T}
    headers["x-contentful-signature"] = VECTOR_A_SIGNATURE
    return WebhookRequest(headers, b"", method="GET", path="/api/resources/1")


def vector_b(
    changes: dict[str, str] | None = None, *, body: bytes = VECTOR_B_BODY, method: str = "POST"
) -> WebhookRequest:
    """Vector B with some headers changed ("" removes one)."""
    headers = {k: v for k, v in (VECTOR_B_HEADERS | (changes or {})).items() if v}
    return WebhookRequest(headers, body, method=method, path="/webhooks/contentful")


def test_contentfuls_canonical_request_matches_the_toolkits_for_vector_a() -> None:
    assert canonical_request(vector_a(), ALWAYS_SIGNED.split(",")) == VECTOR_A_CANONICAL


def test_contentful_signs_vector_a_as_the_toolkit_does() -> None:
    assert sign(CF_SECRET, vector_a(), ALWAYS_SIGNED.split(",")) == VECTOR_A_SIGNATURE


def test_the_two_always_signed_headers_are_signed_even_when_not_listed() -> None:
    assert sign(CF_SECRET, vector_a(), []) == VECTOR_A_SIGNATURE


def test_contentfuls_canonical_request_matches_the_toolkits_for_vector_b() -> None:
    assert canonical_request(vector_b(), VECTOR_B_SIGNED.split(",")) == VECTOR_B_CANONICAL


def test_vector_b_is_authentic_and_its_idempotency_key_is_the_delivery_id() -> None:
    assert CONTENTFUL.authenticate(vector_b(), now=CF_NOW) == f"contentful:{VECTOR_B_KEY}"


def test_vector_a_is_authentic_and_without_a_key_its_id_is_a_hash_of_topic_and_body() -> None:
    assert CONTENTFUL.authenticate(vector_a(), now=CF_NOW) == body_delivery_id(
        "contentful", b"", b""
    )


def test_an_unsigned_header_may_change_without_breaking_the_signature() -> None:
    request = vector_b({"user-agent": "Contentful-Webhook/1.0", "x-forwarded-for": "10.0.0.1"})

    assert CONTENTFUL.authenticate(request, now=CF_NOW)


@pytest.mark.parametrize(
    "changes",
    [
        {"x-contentful-topic": "ContentManagement.Entry.unpublish"},
        {"x-contentful-webhook-request-attempt": "2"},
        {"x-contentful-idempotency-key": "0" * 64},
        {"x-contentful-timestamp": str(int(CF_T) + 1)},
        {"x-contentful-signed-headers": ALWAYS_SIGNED},
        {"x-contentful-signature": VECTOR_A_SIGNATURE},
    ],
    ids=["topic", "attempt", "idempotency-key", "timestamp", "signed-headers", "signature"],
)
def test_changing_a_signed_header_breaks_the_signature(changes: dict[str, str]) -> None:
    message = rejected(CONTENTFUL, vector_b(changes), CF_NOW)

    assert message == "x-contentful-signature does not match this request"


def test_a_tampered_contentful_body_is_rejected() -> None:
    rejected(CONTENTFUL, vector_b(body=VECTOR_B_BODY.replace(b"Hello", b"Hallo")), CF_NOW)


def test_another_method_breaks_the_contentful_signature() -> None:
    rejected(CONTENTFUL, vector_b(method="PUT"), CF_NOW)


def test_another_path_breaks_the_contentful_signature() -> None:
    request = vector_b()
    moved = WebhookRequest(request.headers, request.body, path="/webhooks/other")

    rejected(CONTENTFUL, moved, CF_NOW)


def test_a_contentful_signature_from_another_secret_is_rejected() -> None:
    other = ContentfulFormat(FieldMap(), secret=b"q" + b"a" * 63)

    rejected(other, vector_b(), CF_NOW)


@pytest.mark.parametrize("offset", [-301, 301, 86_400])
def test_an_expired_or_future_contentful_timestamp_is_rejected(offset: float) -> None:
    assert "x-contentful-timestamp is" in rejected(CONTENTFUL, vector_b(), CF_NOW + offset)


def test_a_contentful_timestamp_within_five_minutes_is_accepted() -> None:
    assert CONTENTFUL.authenticate(vector_b(), now=CF_NOW + 299)


@pytest.mark.parametrize(
    "missing", ["x-contentful-signature", "x-contentful-signed-headers", "x-contentful-timestamp"]
)
def test_a_missing_signing_header_is_rejected_when_a_secret_is_configured(missing: str) -> None:
    message = rejected(CONTENTFUL, vector_b({missing: ""}), CF_NOW)

    assert message.startswith("missing x-contentful-signature")


@pytest.mark.parametrize(
    "stamp", ["1603379941037.5", "-1603379941037", "16033799410370000", "\u00b2"]
)
def test_a_contentful_timestamp_that_is_not_milliseconds_is_rejected(stamp: str) -> None:
    message = rejected(CONTENTFUL, vector_b({"x-contentful-timestamp": stamp}), CF_NOW)

    assert message == "x-contentful-timestamp is not milliseconds"


def test_a_contentful_source_with_a_token_also_requires_the_bearer_header() -> None:
    both = ContentfulFormat(FieldMap(), secret=CF_SECRET, token="cf-static-token")

    assert "Authorization" in rejected(both, vector_b(), CF_NOW)
    assert both.authenticate(vector_b({"authorization": "Bearer cf-static-token"}), now=CF_NOW)


def test_a_token_only_contentful_source_checks_the_bearer_and_not_the_signature() -> None:
    token_only = ContentfulFormat(FieldMap(), token="cf-static-token")
    unsigned = vector_b({"x-contentful-signature": "", "authorization": "Bearer cf-static-token"})

    assert token_only.authenticate(unsigned, now=CF_NOW) == f"contentful:{VECTOR_B_KEY}"
    assert "bearer token does not match" in rejected(
        token_only, vector_b({"authorization": "Bearer guessed"}), CF_NOW
    )


def test_a_contentful_source_needs_a_secret_or_a_token() -> None:
    with pytest.raises(ValueError, match="signing secret or a bearer token"):
        ContentfulFormat(FieldMap())


# --- Ghost ------------------------------------------------------------------------------------

GHOST_SECRET = "ghost-webhook-secret"
GHOST_BODY = b'{"post":{"current":{"id":"6650f0c2a1b2c3d4e5f60718"},"previous":{}}}'
GHOST_NOW = 1_780_000_000.0
GHOST_T = str(int(GHOST_NOW * 1000))
GHOST = GhostFormat(GHOST_SECRET.encode())


def ghost_signature(secret: str, body: bytes, ts: str) -> str:
    """webhook-trigger.js: crypto.createHmac('sha256', secret).update(`${reqPayload}${ts}`)."""
    digest = hmac.new(secret.encode(), body + ts.encode(), hashlib.sha256).hexdigest()
    return f"sha256={digest}, t={ts}"


def ghost_request(header: str | None = None, body: bytes = GHOST_BODY) -> WebhookRequest:
    signature = ghost_signature(GHOST_SECRET, body, GHOST_T) if header is None else header
    return WebhookRequest({"x-ghost-signature": signature}, body)


def test_a_delivery_signed_as_ghost_signs_it_is_authentic() -> None:
    delivery = GHOST.authenticate(ghost_request(), now=GHOST_NOW)

    assert delivery == body_delivery_id("ghost", GHOST_BODY, GHOST_T.encode())
    assert re.fullmatch(r"ghost:sha256:[0-9a-f]{64}", delivery)


def test_ghost_signs_the_body_followed_by_the_time_with_no_separator() -> None:
    digest = hmac.new(b"s", b'{"data":[1]}' + b"1700000000000", hashlib.sha256).hexdigest()
    request = WebhookRequest(
        {"x-ghost-signature": f"sha256={digest}, t=1700000000000"}, b'{"data":[1]}'
    )

    assert GhostFormat(b"s").authenticate(request, now=1_700_000_000)


def test_the_same_body_sent_at_another_time_is_another_delivery() -> None:
    later = str(int(GHOST_T) + 1000)
    resent = ghost_request(ghost_signature(GHOST_SECRET, GHOST_BODY, later))

    first = GHOST.authenticate(ghost_request(), now=GHOST_NOW)
    again = GHOST.authenticate(ghost_request(), now=GHOST_NOW)

    assert first == again
    assert GHOST.authenticate(resent, now=GHOST_NOW) != first


def test_a_ghost_signature_without_the_space_after_the_comma_is_accepted() -> None:
    header = ghost_signature(GHOST_SECRET, GHOST_BODY, GHOST_T).replace(", ", ",")

    assert GHOST.authenticate(ghost_request(header), now=GHOST_NOW)


def test_a_ghost_signature_from_another_secret_is_rejected() -> None:
    header = ghost_signature("not-the-secret", GHOST_BODY, GHOST_T)

    message = rejected(GHOST, ghost_request(header), GHOST_NOW)

    assert message == "X-Ghost-Signature does not match this body and secret"
    assert GHOST_SECRET not in message


def test_a_tampered_ghost_body_is_rejected() -> None:
    header = ghost_signature(GHOST_SECRET, GHOST_BODY, GHOST_T)

    rejected(GHOST, ghost_request(header, GHOST_BODY.replace(b"6650", b"6651")), GHOST_NOW)


def test_a_ghost_time_changed_after_signing_is_rejected() -> None:
    header = ghost_signature(GHOST_SECRET, GHOST_BODY, GHOST_T)
    moved = header.replace(f"t={GHOST_T}", f"t={int(GHOST_T) + 1}")

    assert "does not match" in rejected(GHOST, ghost_request(moved), GHOST_NOW)


def test_a_ghost_delivery_without_a_signature_is_rejected_asking_for_a_secret() -> None:
    request = WebhookRequest({"content-type": "application/json"}, GHOST_BODY)

    assert "give the Ghost webhook a secret" in rejected(GHOST, request, GHOST_NOW)


@pytest.mark.parametrize(
    "header",
    [
        "sha256=abc, t=1",
        f"t={GHOST_T}, sha256={'0' * 64}",
        f"sha1={'0' * 40}, t={GHOST_T}",
        f"sha256={'g' * 64}, t={GHOST_T}",
        f"sha256={'0' * 64}, t=",
    ],
    ids=["short-digest", "reordered", "sha1", "not-hex", "no-time"],
)
def test_a_malformed_ghost_signature_header_is_rejected(header: str) -> None:
    assert "is not 'sha256=<hex>, t=<ms>'" in rejected(GHOST, ghost_request(header), GHOST_NOW)


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_ghost_signature_more_than_five_minutes_off_is_rejected(offset: float) -> None:
    assert "s off" in rejected(GHOST, ghost_request(), GHOST_NOW + offset)


def test_a_ghost_time_in_seconds_is_rejected() -> None:
    seconds = str(int(GHOST_NOW))
    header = ghost_signature(GHOST_SECRET, GHOST_BODY, seconds)

    rejected(GHOST, ghost_request(header), GHOST_NOW)
