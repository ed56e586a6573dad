"""Webhook authentication and payload validation, checked against known answers.

The signature vectors come from the schemes' own publications, not from ragd's signer: the
Standard Webhooks reference library's test (standard-webhooks/standard-webhooks,
libraries/python/tests/test_webhooks.py, test_sign_function) and GitHub's "Validating
webhook deliveries" page. A vector ragd signed itself would only show it agrees with itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.sources.deliveries import Delivery, parse_delivery, validate_entry_id
from ragd.sources.webhooks import (
    WebhookAuth,
    WebhookRejected,
    authenticate,
    secret_key,
    sign_github,
    sign_standard_webhooks,
)

SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

GITHUB_SECRET = b"It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

KEY = secret_key(SPEC_SECRET)
NOW = 1_800_000_000
BODY = b'{"event": "upsert", "id": "post-1", "title": "Hello"}'
STANDARD = WebhookAuth("standard-webhooks", KEY)


def signed(
    body: bytes = BODY, *, ts: int = NOW, msg_id: str = "msg_1", key: bytes = KEY
) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign_standard_webhooks(key, msg_id, ts, body),
    }


def rejected(auth: WebhookAuth, headers: dict[str, str], body: bytes = BODY) -> WebhookRejected:
    with pytest.raises(WebhookRejected) as info:
        authenticate(auth, headers, body, now=NOW)
    assert info.value.status == 401
    assert "\n" not in info.value.message
    return info.value


def bad_payload(body: bytes | dict[str, object]) -> str:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    with pytest.raises(WebhookRejected) as info:
        parse_delivery(raw)
    assert info.value.status == 400
    return info.value.message


# --- Standard Webhooks -------------------------------------------------------------------------


def test_the_specifications_published_vector_signs_and_verifies() -> None:
    assert sign_standard_webhooks(KEY, SPEC_ID, SPEC_TS, SPEC_BODY) == SPEC_SIGNATURE
    headers = {"webhook-id": SPEC_ID, "webhook-timestamp": str(SPEC_TS)}
    headers["webhook-signature"] = SPEC_SIGNATURE

    assert authenticate(STANDARD, headers, SPEC_BODY, now=SPEC_TS) == SPEC_ID


def test_a_valid_delivery_returns_its_webhook_id_whatever_the_header_case() -> None:
    headers = {k.title(): v for k, v in signed(msg_id="msg_2abc").items()}

    assert authenticate(STANDARD, headers, BODY, now=NOW) == "msg_2abc"


def test_during_rotation_any_matching_signature_is_enough() -> None:
    old = sign_standard_webhooks(b"old-key-old-key-old-key!", "msg_1", NOW, BODY)
    good = signed()["webhook-signature"]
    header = f"{old} v1a,c2lnbmF0dXJl v2,{good[3:]} nonsense v1,!!notbase64!! {good}"

    assert authenticate(STANDARD, signed() | {"webhook-signature": header}, BODY, now=NOW)
    assert "matches" in rejected(STANDARD, signed() | {"webhook-signature": f"{old} v1a,x"}).message


def test_a_tampered_body_is_rejected() -> None:
    assert "no webhook-signature matches" in rejected(STANDARD, signed(), BODY + b" ").message


def test_a_wrong_secret_is_rejected() -> None:
    other = WebhookAuth(
        "standard-webhooks", secret_key("whsec_" + base64.b64encode(b"x" * 24).decode())
    )

    rejected(other, signed())


def test_the_id_and_timestamp_are_signed_too() -> None:
    rejected(STANDARD, signed() | {"webhook-id": "msg_2"})
    rejected(STANDARD, signed() | {"webhook-timestamp": str(NOW - 1)})


def test_re_serialised_json_is_rejected_though_it_is_the_same_object() -> None:
    reserialised = json.dumps(json.loads(BODY), separators=(",", ":")).encode()
    assert json.loads(reserialised) == json.loads(BODY) and reserialised != BODY

    rejected(STANDARD, signed(BODY), reserialised)


@pytest.mark.parametrize("age", [301, 600, 86_400])
def test_stale_timestamps_are_rejected(age: int) -> None:
    assert f"{age} s old" in rejected(STANDARD, signed(ts=NOW - age)).message


@pytest.mark.parametrize("ahead", [301, 600])
def test_future_timestamps_are_rejected(ahead: int) -> None:
    assert "future" in rejected(STANDARD, signed(ts=NOW + ahead)).message


def test_a_timestamp_in_milliseconds_gets_a_hint() -> None:
    assert "milliseconds" in rejected(STANDARD, signed(ts=NOW * 1000)).message


@pytest.mark.parametrize("skew", [-300, 0, 300])
def test_the_tolerance_is_300_seconds_either_way(skew: int) -> None:
    assert authenticate(STANDARD, signed(ts=NOW + skew), BODY, now=NOW) == "msg_1"


def test_the_tolerance_can_be_narrowed() -> None:
    with pytest.raises(WebhookRejected):
        authenticate(STANDARD, signed(ts=NOW - 60), BODY, now=NOW, tolerance=30)


@pytest.mark.parametrize("header", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_each_header_is_required(header: str) -> None:
    headers = signed()
    del headers[header]
    assert rejected(STANDARD, headers).message == f"missing {header} header"
    assert rejected(STANDARD, headers | {header: ""}).message == f"missing {header} header"


@pytest.mark.parametrize("stamp", ["1800000000.5", "-1800000000", " 1800000000", "1e9", "١٨٠٠"])
def test_a_timestamp_must_be_whole_ascii_seconds(stamp: str) -> None:
    assert "whole number" in rejected(STANDARD, signed() | {"webhook-timestamp": stamp}).message


@pytest.mark.parametrize("msg_id", ["msg 1", "x" * 257, "msg_é", "msg\x00"])
def test_a_webhook_id_must_be_printable_ascii_up_to_256(msg_id: str) -> None:
    assert "webhook-id" in rejected(STANDARD, signed(msg_id=msg_id)).message


def test_a_repeated_header_is_rejected_rather_than_guessed() -> None:
    headers = signed() | {"Webhook-Signature": "v1,AAAA"}

    assert "more than once" in rejected(STANDARD, headers).message


def test_svix_branded_headers_are_the_same_scheme() -> None:
    headers = {k.replace("webhook-", "svix-"): v for k, v in signed().items()}

    assert authenticate(STANDARD, headers, BODY, now=NOW) == "msg_1"
    del headers["svix-signature"]
    assert rejected(STANDARD, headers).message == "missing svix-signature header"


# --- secrets -------------------------------------------------------------------------------------


def test_whsec_secrets_are_base64_decoded_and_others_used_as_utf8() -> None:
    assert base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == KEY
    assert secret_key("plain secret") == b"plain secret"
    assert secret_key("clé") == "clé".encode()
    assert secret_key(SPEC_SECRET + "\n") == KEY
    assert secret_key("whsec_" + base64.b64encode(b"12345").decode().rstrip("=")) == b"12345"
    # The spec vector only verifies with the decoded key, not with the text's bytes.
    as_text = WebhookAuth("standard-webhooks", SPEC_SECRET.encode())
    headers = {"webhook-id": SPEC_ID, "webhook-timestamp": str(SPEC_TS)}
    with pytest.raises(WebhookRejected):
        authenticate(
            as_text, headers | {"webhook-signature": SPEC_SIGNATURE}, SPEC_BODY, now=SPEC_TS
        )


@pytest.mark.parametrize("text", ["", "  \n", "whsec_", "whsec_not*base64!", "whsec_QUJD RA=="])
def test_unusable_secrets_raise_without_echoing_them(text: str) -> None:
    with pytest.raises(ValueError) as info:
        secret_key(text)
    assert text.strip() == "" or text not in str(info.value)


def test_auth_never_shows_its_secret_or_token() -> None:
    auth = WebhookAuth("github", b"s3cr3t-key", bearer_token="t0ken-value")

    for text in (repr(auth), str(auth), repr([auth])):
        assert "s3cr3t" not in text and "t0ken" not in text
        assert "<redacted>" in text


def test_auth_refuses_incoherent_settings() -> None:
    with pytest.raises(ValueError):
        WebhookAuth("standard-webhooks", None)
    with pytest.raises(ValueError):
        WebhookAuth("github", b"")
    with pytest.raises(ValueError):
        WebhookAuth("none", None)
    with pytest.raises(ValueError):
        WebhookAuth("none", b"key", bearer_token="t")
    with pytest.raises(ValueError):
        WebhookAuth("none", None, bearer_token="  ")


def test_from_secret_text_decodes_whsec_for_standard_webhooks_only() -> None:
    assert WebhookAuth.from_secret_text("standard-webhooks", SPEC_SECRET).secret == KEY
    assert WebhookAuth.from_secret_text("github", SPEC_SECRET + "\n").secret == SPEC_SECRET.encode()
    assert WebhookAuth.from_secret_text("none", None, " tok\n").bearer_token == "tok"


# --- GitHub --------------------------------------------------------------------------------------

GITHUB = WebhookAuth("github", GITHUB_SECRET)


def test_githubs_published_vector_signs_and_verifies() -> None:
    assert sign_github(GITHUB_SECRET, GITHUB_BODY) == GITHUB_SIGNATURE
    headers = {"X-Hub-Signature-256": GITHUB_SIGNATURE, "X-GitHub-Delivery": "72d3162e-cc78"}

    assert authenticate(GITHUB, headers, GITHUB_BODY, now=NOW) == "72d3162e-cc78"


def test_github_delivery_id_falls_back_to_the_body_hash() -> None:
    expected = "sha256:" + hashlib.sha256(GITHUB_BODY).hexdigest()
    signature = {"X-Hub-Signature-256": GITHUB_SIGNATURE}

    assert authenticate(GITHUB, signature, GITHUB_BODY, now=NOW) == expected
    bad_id = signature | {"X-GitHub-Delivery": "not valid"}
    assert authenticate(GITHUB, bad_id, GITHUB_BODY, now=NOW) == expected


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (None, "missing"),
        ("", "missing"),
        (GITHUB_SIGNATURE.replace("sha256=", "sha1="), "not 'sha256="),
        (GITHUB_SIGNATURE[:-2], "not 'sha256="),
        (GITHUB_SIGNATURE[:20] + " " + GITHUB_SIGNATURE[20:], "not 'sha256="),
        (GITHUB_SIGNATURE[:-1] + "0", "does not match"),
    ],
)
def test_github_signatures_must_match_exactly(header: str | None, problem: str) -> None:
    headers = {} if header is None else {"X-Hub-Signature-256": header}

    assert problem in rejected(GITHUB, headers, GITHUB_BODY).message


def test_github_rejects_a_tampered_body_and_a_wrong_secret() -> None:
    headers = {"X-Hub-Signature-256": GITHUB_SIGNATURE}

    rejected(GITHUB, headers, GITHUB_BODY + b"\n")
    rejected(WebhookAuth("github", b"another secret"), headers, GITHUB_BODY)


# --- bearer tokens -------------------------------------------------------------------------------

BEARER = WebhookAuth("none", None, bearer_token="tok-123")


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "tok-123",
        "Bearer",
        "Bearer ",
        "Basic tok-123",
        "Bearer tok-124",
        "Bearer tok-1234",
    ],
)
def test_a_missing_or_wrong_bearer_token_is_rejected(value: str | None) -> None:
    headers = {} if value is None else {"Authorization": value}

    assert "tok-12" not in rejected(BEARER, headers).message


def test_the_right_bearer_token_is_accepted_with_any_scheme_case() -> None:
    for value in ("Bearer tok-123", "bearer tok-123", "BEARER  tok-123 "):
        assert authenticate(BEARER, {"Authorization": value}, BODY, now=NOW).startswith("sha256:")


def test_an_unsigned_delivery_uses_webhook_id_else_the_body_hash() -> None:
    auth = {"authorization": "Bearer tok-123"}

    assert authenticate(BEARER, auth | {"webhook-id": "evt_9"}, BODY, now=NOW) == "evt_9"
    by_body = "sha256:" + hashlib.sha256(BODY).hexdigest()
    assert authenticate(BEARER, auth | {"webhook-id": "e v t"}, BODY, now=NOW) == by_body


def test_a_non_ascii_bearer_token_is_compared_not_crashed_on() -> None:
    rejected(BEARER, {"Authorization": "Bearer tök-123"})
    rejected(BEARER, {"Authorization": "Bearer \udcff"})


def test_bearer_and_signature_are_both_required_when_both_are_configured() -> None:
    both = WebhookAuth("standard-webhooks", KEY, bearer_token="tok-123")
    auth = {"Authorization": "Bearer tok-123"}

    assert authenticate(both, signed() | auth, BODY, now=NOW) == "msg_1"
    assert "Authorization" in rejected(both, signed()).message
    rejected(both, signed() | {"Authorization": "Bearer nope"})
    rejected(both, auth)
    rejected(both, signed(ts=NOW - 900) | auth)
    github = WebhookAuth("github", GITHUB_SECRET, bearer_token="tok-123")
    rejected(github, {"X-Hub-Signature-256": GITHUB_SIGNATURE}, GITHUB_BODY)
    rejected(github, auth, GITHUB_BODY)


# --- entry ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("../../etc/passwd", "path separator"),
        ("/etc/passwd", "path separator"),
        ("..\\windows", "path separator"),
        ("%2e%2e/x", "'%'"),
        ("%2e%2e%2fx", "'%'"),
        ("post\x00.md", "control character"),
        ("post\n", "control character"),
        ("post\x7f", "control character"),
        ("my post", "whitespace"),
        ("post\u00a0x", "whitespace"),
        ("pöst", "non-ASCII"),
        ("..", "start with a letter or digit"),
        (".hidden", "start with a letter or digit"),
        ("-rf", "start with a letter or digit"),
        ("post#1", "'#'"),
        ("a" * 129, "129 characters"),
        ("", "empty"),
        (True, "got a boolean"),
        (1.5, "got a number"),
        (None, "got null"),
        (["a"], "got an array"),
        ({"id": "a"}, "got an object"),
        (-5, "start with a letter or digit"),
    ],
)
def test_unsafe_entry_ids_are_400s_that_name_the_problem(value: object, problem: str) -> None:
    with pytest.raises(WebhookRejected) as info:
        validate_entry_id(value)

    assert info.value.status == 400
    assert problem in info.value.message


@pytest.mark.parametrize(
    "value", ["a", "post-1", "6650f7c2e1b0a4001c3b2f9a", "api::article:12", "v1.2_x", "x" * 128]
)
def test_safe_entry_ids_pass_unchanged(value: str) -> None:
    assert validate_entry_id(value) == value


def test_integer_entry_ids_become_their_decimal_text() -> None:
    assert validate_entry_id(42) == "42"
    assert parse_delivery(b'{"event": "delete", "id": 7}').entry_id == "7"


# --- payloads ------------------------------------------------------------------------------------


def test_a_full_upsert_is_parsed() -> None:
    body = {
        "event": "upsert",
        "id": "post-1",
        "title": "Hello",
        "url": "https://cms.example.com/posts/hello",
        "updated_at": "2026-11-29T10:00:00Z",
        "content": "# Hello\n\nWorld",
        "content_type": "text/markdown",
        "model": "article",
        "entry": {"nested": [1, 2, {"x": None}]},
    }

    assert parse_delivery(json.dumps(body).encode()) == Delivery(
        event="upsert",
        entry_id="post-1",
        title="Hello",
        url="https://cms.example.com/posts/hello",
        updated_at=datetime(2026, 11, 29, 10, 0, tzinfo=UTC),
        content="# Hello\n\nWorld",
        content_type="text/markdown",
    )


def test_a_minimal_upsert_has_defaults_and_nulls_count_as_absent() -> None:
    body = b'{"event": "upsert", "id": "p", "title": null, "url": null, "content": null}'

    assert parse_delivery(body) == Delivery(event="upsert", entry_id="p")
    assert parse_delivery(body).content_type == "text/markdown"


def test_a_delete_drops_content_it_carries() -> None:
    body = {"event": "delete", "id": "p", "content": "old text", "content_type": "text/html"}

    delivery = parse_delivery(json.dumps(body).encode())

    assert (delivery.event, delivery.content) == ("delete", None)


def test_offsets_are_converted_to_utc() -> None:
    body = {"event": "upsert", "id": "p", "updated_at": "2026-11-29T11:30:00.250+01:30"}

    updated = parse_delivery(json.dumps(body).encode()).updated_at

    assert updated == datetime(2026, 11, 29, 10, 0, 0, 250_000, tzinfo=UTC)
    assert updated is not None and updated.tzinfo is UTC


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"\xff\xfe{}", "UTF-8"),
        (b"", "not valid JSON"),
        (b"{'event': 'upsert'}", "not valid JSON"),
        (b'{"event": "upsert", "id": "p"', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"x": ' + b"1" * 5000 + b"}", "not valid JSON"),
        (b'["upsert"]', "not an array"),
        (b'"upsert"', "not a string"),
        (b"null", "not null"),
        (b'{"event": "upsert", "id": "a", "id": "../x"}', "same field twice"),
        (b'{"id": "p"}', "event is missing"),
        (b'{"event": "upsert"}', "id is missing"),
    ],
)
def test_malformed_bodies_are_400s(body: bytes, problem: str) -> None:
    assert problem in bad_payload(body)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"event": "update"}, 'event must be "upsert" or "delete"'),
        ({"event": 1}, "got a number"),
        ({"event": True}, "got a boolean"),
        ({"title": 5}, "title must be a string, got a number"),
        ({"title": ["a"]}, "got an array"),
        ({"title": "t" * 1001}, "title is 1001 characters"),
        ({"content": {"html": "x"}}, "content must be a string, got an object"),
        ({"content": False}, "got a boolean"),
        ({"content_type": "text/x-rst"}, "content_type must be one of"),
        ({"content_type": "text/html; charset=utf-8"}, "content_type must be one of"),
        ({"url": "ftp://example.com/x"}, "url must be"),
        ({"url": "javascript:alert(1)"}, "url must be"),
        ({"url": "/posts/1"}, "url must be"),
        ({"url": "https:///path"}, "url must be"),
        ({"url": "https://[::1/x"}, "url must be"),
        ({"url": "https://example.com/a b"}, "url must be"),
        ({"url": "https://example.com/\x00"}, "url must be"),
        ({"url": "https://example.com/" + "a" * 2030}, "url is 2050 characters"),
        ({"updated_at": "2026-11-29T10:00:00"}, "no timezone"),
        ({"updated_at": "2026-11-29"}, "no timezone"),
        ({"updated_at": "yesterday"}, "not an ISO 8601"),
        ({"updated_at": "２０２６-11-29T10:00:00Z"}, "not an ISO 8601"),
        ({"updated_at": 1764410400}, "updated_at must be a string"),
        ({"updated_at": "0001-01-01T00:00:00+01:00"}, "out of range"),
    ],
)
def test_wrong_types_and_values_are_400s_naming_the_field(
    fields: dict[str, object], problem: str
) -> None:
    body: dict[str, object] = {"event": "upsert", "id": "p"} | fields

    assert problem in bad_payload(body)


def test_a_delete_still_type_checks_its_content() -> None:
    assert "content must be a string" in bad_payload({"event": "delete", "id": "p", "content": 3})


def test_a_bad_id_in_a_payload_is_a_400() -> None:
    assert "path separator" in bad_payload({"event": "delete", "id": "../../etc/passwd"})


# --- version ordering ----------------------------------------------------------------------------


def at(text: str) -> Delivery:
    return parse_delivery(json.dumps({"event": "upsert", "id": "p", "updated_at": text}).encode())


def test_version_is_fixed_format_utc_text() -> None:
    assert at("2026-11-29T10:00:00Z").version() == "2026-11-29T10:00:00.000000Z"
    assert at("2026-11-29T12:00:00.5+02:00").version() == "2026-11-29T10:00:00.500000Z"
    assert at("0999-01-01T00:00:00Z").version() == "0999-01-01T00:00:00.000000Z"
    assert Delivery(event="delete", entry_id="p").version() is None


def test_an_older_update_sorts_before_a_newer_one_as_text() -> None:
    times = ["2026-11-29T10:00:00Z", "2026-11-29T09:00:00-02:00", "2026-11-29T10:00:00.000001Z"]
    versions = [at(t).version() or "" for t in times]

    assert sorted(versions) == [versions[0], versions[2], versions[1]]
    assert at("0999-12-31T23:59:59Z").version() or (at("1000-01-01T00:00:00Z").version() or "") > ""


aware = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=11))]
    ),
)


@settings(database=None, deadline=None)
@given(aware, aware)
def test_version_text_order_is_time_order(a: datetime, b: datetime) -> None:
    va = Delivery(event="upsert", entry_id="p", updated_at=a).version() or ""
    vb = Delivery(event="upsert", entry_id="p", updated_at=b).version() or ""

    assert (va < vb) == (a < b) and (va == vb) == (a == b)


# --- hostile input never escapes as anything but WebhookRejected --------------------------------

header_names = st.sampled_from(
    [
        "webhook-id",
        "Webhook-Timestamp",
        "webhook-signature",
        "authorization",
        "X-Hub-Signature-256",
        "x-github-delivery",
        "svix-id",
        "svix-signature",
        "content-type",
    ]
)
AUTHS = [STANDARD, GITHUB, BEARER, WebhookAuth("standard-webhooks", KEY, bearer_token="tok-123")]


@settings(database=None, deadline=None, max_examples=300)
@given(
    st.sampled_from(AUTHS),
    st.dictionaries(header_names | st.text(max_size=20), st.text(max_size=300), max_size=8),
    st.binary(max_size=300),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e13),
)
def test_random_headers_and_bodies_only_ever_raise_webhook_rejected(
    auth: WebhookAuth, headers: dict[str, str], body: bytes, now: float
) -> None:
    try:
        delivery_id = authenticate(auth, headers, body, now=now)
    except WebhookRejected as exc:
        assert exc.status == 401 and "\n" not in exc.message
    else:
        assert auth.scheme == "none" and 1 <= len(delivery_id) <= 256


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
fields = st.sampled_from(["event", "id", "title", "url", "updated_at", "content", "content_type"])


@settings(database=None, deadline=None, max_examples=300)
@given(
    st.one_of(
        st.binary(max_size=400),
        st.dictionaries(
            fields | st.text(max_size=8), json_values | st.sampled_from(["upsert", "delete"])
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_random_payloads_parse_or_raise_webhook_rejected(body: bytes) -> None:
    try:
        delivery = parse_delivery(body)
    except WebhookRejected as exc:
        assert exc.status == 400 and "\n" not in exc.message
    else:
        assert validate_entry_id(delivery.entry_id) == delivery.entry_id


@settings(database=None, deadline=None, max_examples=200)
@given(st.binary(max_size=300), st.text(min_size=1, max_size=40))
def test_a_correctly_signed_body_is_accepted_whatever_its_bytes(body: bytes, msg_id: str) -> None:
    headers = signed(body, msg_id=msg_id)
    try:
        assert authenticate(STANDARD, headers, body, now=NOW) == msg_id
    except WebhookRejected as exc:
        assert "webhook-id" in exc.message  # only an id ragd refuses to key on
