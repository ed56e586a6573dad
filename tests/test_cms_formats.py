"""Each CMS's webhooks, as the CMS sends them: who may send one, and what it changes.

The deliveries are built by tests/cms_deliveries.py exactly as each CMS builds and signs
them (the file names the CMS source each shape was read from); a test changes one thing
in a delivery and states what ragd makes of it: upserts, deletes, or nothing (with the
reason), a 401 for a sender that cannot prove who it is, and a one-line 400 naming the
field for a body that is not what the CMS sends.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from ragd.sources.cms.contentful import ContentfulApi, ContentfulFormat
from ragd.sources.cms.directus import DirectusApi, DirectusFormat
from ragd.sources.cms.fields import FieldMap
from ragd.sources.cms.formats import Parsed, WebhookFormat, WebhookRequest, body_delivery_id
from ragd.sources.cms.ghost import GhostApi, GhostFormat
from ragd.sources.cms.sanity import SanityApi, SanityFormat
from ragd.sources.cms.strapi import StrapiApi, StrapiFormat, flat
from ragd.sources.deliveries import Delivery
from ragd.sources.http_client import HttpClient, Limits
from ragd.sources.webhooks import WebhookRejected
from tests.cms_deliveries import Contentful, Directus, Entry, Ghost, Sanity, Sender, Sent, Strapi

GHOST, STRAPI, CONTENTFUL, SANITY, DIRECTUS = Ghost(), Strapi(), Contentful(), Sanity(), Directus()
CMS_SENDERS: tuple[Sender, ...] = (GHOST, STRAPI, CONTENTFUL, SANITY, DIRECTUS)
STRAPI_LOCALES = ("en",)  # the senders' entries are in English
ENTRY = Entry("post-1", "Hello RAG", "Index what is published.", updated=1_780_000_000.25)
UPDATED = datetime(2026, 5, 28, 20, 26, 40, 250000, tzinfo=UTC)
CLIENT = HttpClient(Limits())  # never used: parse() reads no API


def make_format(name: str, *, fields: FieldMap | None = None, api: bool = False) -> WebhookFormat:
    """The format a source of CMS `name` is configured with, with the senders' secrets;
    `api` gives it a read API, so that an entry that came without its body is fetched."""
    fields = fields or FieldMap()
    if name == "ghost":
        ghost_api = GhostApi("blog", "https://blog.example.com", "key", CLIENT) if api else None
        return GhostFormat(GHOST.secret.encode(), api=ghost_api)
    if name == "strapi":
        models = {"article": "articles"}
        base = "https://cms.example.com/api"
        strapi_api = StrapiApi("cms", base, CLIENT, fields, models, STRAPI_LOCALES)
        api_or_none = strapi_api if api else None
        return StrapiFormat(STRAPI.token, fields, locales=STRAPI_LOCALES, api=api_or_none)
    if name == "contentful":
        url = "https://cdn.contentful.com/spaces/s/environments/master"
        contentful_api = ContentfulApi("cf", url, CLIENT, fields, locale="en-US")
        return ContentfulFormat(
            fields, secret=CONTENTFUL.secret.encode(), api=contentful_api if api else None
        )
    if name == "sanity":
        query = "https://abc123.api.sanity.io/v2021-10-21/data/query/production"
        sanity_api = SanityApi("sanity", query, CLIENT, fields, ("post",))
        return SanityFormat(SANITY.secret.encode(), fields, api=sanity_api if api else None)
    assert name == "directus"
    directus_api = DirectusApi("d", "https://d.example.com", CLIENT, fields, ("articles",))
    return DirectusFormat(DIRECTUS.token, fields, api=directus_api if api else None)


def received(sent: Sent) -> WebhookRequest:
    """A delivery as ragd's HTTP layer hands it on: lower-case header names, the query."""
    return WebhookRequest(
        headers={name.lower(): value for name, value in sent.headers.items()},
        body=sent.body,
        path=CONTENTFUL.path,
        query=dict(urllib.parse.parse_qsl(sent.query)),
    )


def edited(sent: Sent, change: Callable[[dict[str, Any]], object]) -> Sent:
    """`sent` with its JSON body changed in place by `change` (not re-signed: parse
    does not authenticate)."""
    payload = json.loads(sent.body)
    change(payload)
    return Sent(json.dumps(payload, separators=(",", ":")).encode(), sent.headers, sent.query)


def with_headers(sent: Sent, **headers: str) -> Sent:
    return Sent(sent.body, {**sent.headers, **headers}, sent.query)


def parse(name: str, sent: Sent, **options: Any) -> Parsed:
    return make_format(name, **options).parse(received(sent))


def only(parsed: Parsed) -> Delivery:
    assert parsed.ignored is None, parsed.ignored
    assert len(parsed.deliveries) == 1
    return parsed.deliveries[0]


def bad_request(name: str, sent: Sent, **options: Any) -> str:
    with pytest.raises(WebhookRejected) as info:
        parse(name, sent, **options)
    assert info.value.status == 400
    assert "\n" not in info.value.message
    return info.value.message


def unauthorized(name: str, sent: Sent) -> str:
    with pytest.raises(WebhookRejected) as info:
        make_format(name).authenticate(received(sent), now=time.time())
    assert info.value.status == 401
    assert "\n" not in info.value.message
    return info.value.message


def ignored(parsed: Parsed) -> str:
    assert parsed.deliveries == ()
    assert parsed.ignored
    return parsed.ignored


# --- Every CMS --------------------------------------------------------------------------------

by_name = pytest.mark.parametrize("sender", CMS_SENDERS, ids=lambda sender: sender.name)


@by_name
def test_a_published_entry_is_authentic_and_upserts_its_text(sender: Sender) -> None:
    sent = sender.publish(ENTRY)
    fmt = make_format(sender.name)

    assert fmt.authenticate(received(sent), now=time.time())
    delivery = only(fmt.parse(received(sent)))

    assert delivery.event == "upsert"
    assert delivery.entry_id == sender.key(ENTRY)
    assert delivery.title == ENTRY.title
    assert delivery.updated_at == UPDATED
    assert delivery.content is not None and ENTRY.text in delivery.content
    assert '{"' not in delivery.content


@by_name
def test_a_removed_entry_deletes_its_key(sender: Sender) -> None:
    sent = sender.remove(ENTRY)

    assert make_format(sender.name).authenticate(received(sent), now=time.time())
    delivery = only(parse(sender.name, sent))

    assert (delivery.event, delivery.entry_id, delivery.content) == (
        "delete", sender.key(ENTRY), None
    )  # fmt: skip


@by_name
def test_a_forged_delivery_is_rejected_as_unauthorized(sender: Sender) -> None:
    message = unauthorized(sender.name, sender.forged(sender.publish(ENTRY)))

    secret = getattr(sender, "secret", None) or getattr(sender, "token", None)
    assert isinstance(secret, str) and secret not in message


CREDENTIALS = (
    "authorization",
    "x-ghost-signature",
    "x-contentful-signature",
    "sanity-webhook-signature",
)


@by_name
def test_a_delivery_without_its_credentials_is_rejected_as_unauthorized(sender: Sender) -> None:
    sent = sender.publish(ENTRY)
    bare = Sent(sent.body, {k: v for k, v in sent.headers.items() if k.lower() not in CREDENTIALS})

    assert unauthorized(sender.name, bare).startswith("missing")


@by_name
def test_a_body_changed_after_signing_is_rejected_by_the_signed_formats(sender: Sender) -> None:
    sent = edited(sender.publish(ENTRY), lambda payload: payload.update(extra=1))
    fmt = make_format(sender.name)

    if sender.name in ("strapi", "directus"):  # a static token covers no body
        assert fmt.authenticate(received(sent), now=time.time())
    else:
        assert "match" in unauthorized(sender.name, sent)


@by_name
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"title": "unterminated', "the body is not valid JSON"),
        (b"\xff\xfe{}", "the body is not valid UTF-8"),
        (b"[1, 2]", "the body must be a JSON object, not an array"),
        (b'"text"', "the body must be a JSON object, not a string"),
        (b'{"a": 1, "a": 2}', "the JSON object names the same field twice"),
        (b"[" * 100_000, "the body is JSON nested too deeply"),
    ],
    ids=["truncated", "not-utf8", "array", "string", "duplicate-key", "too-deep"],
)
def test_a_body_that_is_not_a_json_object_is_a_one_line_bad_request(
    sender: Sender, body: bytes, expected: str
) -> None:
    sent = sender.publish(ENTRY)

    assert bad_request(sender.name, Sent(body, sent.headers, sent.query)).startswith(expected)


def drop_ghost_html(payload: dict[str, Any]) -> None:
    del payload["post"]["current"]["html"]


def drop_strapi_body(payload: dict[str, Any]) -> None:
    del payload["entry"]["content"]


def drop_contentful_body(payload: dict[str, Any]) -> None:
    del payload["fields"]["content"]


def drop_sanity_body(payload: dict[str, Any]) -> None:
    del payload["content"]


def drop_directus_body(payload: dict[str, Any]) -> None:
    del payload["payload"]["content"]


@pytest.mark.parametrize(
    ("sender", "drop", "expected"),
    [
        (GHOST, drop_ghost_html, "post.current.html is missing or empty"),
        (STRAPI, drop_strapi_body, "the body field 'content' is missing from the entry"),
        (CONTENTFUL, drop_contentful_body, "the body field 'content' is missing from the entry"),
        (SANITY, drop_sanity_body, "the body field 'content' is missing from the entry"),
        (DIRECTUS, drop_directus_body, "the body field 'content' is missing from the entry"),
    ],
    ids=[sender.name for sender in CMS_SENDERS],
)
def test_an_upsert_without_its_body_field_is_refused_naming_the_field(
    sender: Sender, drop: Callable[[dict[str, Any]], None], expected: str
) -> None:
    assert bad_request(sender.name, edited(sender.publish(ENTRY), drop)) == expected


@pytest.mark.parametrize(
    ("sender", "drop"),
    [
        (GHOST, drop_ghost_html),
        (STRAPI, drop_strapi_body),
        (CONTENTFUL, drop_contentful_body),
        (SANITY, drop_sanity_body),
        (DIRECTUS, drop_directus_body),
    ],
    ids=[sender.name for sender in CMS_SENDERS],
)
def test_an_upsert_without_its_body_is_fetched_back_when_a_read_api_is_configured(
    sender: Sender, drop: Callable[[dict[str, Any]], None]
) -> None:
    delivery = only(parse(sender.name, edited(sender.publish(ENTRY), drop), api=True))

    assert (delivery.event, delivery.entry_id, delivery.content) == (
        "upsert", sender.key(ENTRY), None
    )  # fmt: skip


def null_ghost_html(payload: dict[str, Any]) -> None:
    payload["post"]["current"]["html"] = None


def null_strapi_body(payload: dict[str, Any]) -> None:
    # Strapi 5.54 sent an entry whose Blocks body was emptied as `"content": null`
    # (measured against the real server: ../shared/research/integrations.md).
    payload["entry"]["content"] = None


def null_contentful_body(payload: dict[str, Any]) -> None:
    payload["fields"]["content"] = None


def null_sanity_body(payload: dict[str, Any]) -> None:
    payload["content"] = None


def null_directus_body(payload: dict[str, Any]) -> None:
    payload["payload"]["content"] = None


@pytest.mark.parametrize(
    ("sender", "empty", "expected"),
    [
        (GHOST, null_ghost_html, "post.current.html is missing or empty"),
        (STRAPI, null_strapi_body, "the body field 'content' is empty (null)"),
        (CONTENTFUL, null_contentful_body, "the body field 'content' is empty (null)"),
        (SANITY, null_sanity_body, "the body field 'content' is empty (null)"),
        (DIRECTUS, null_directus_body, "the body field 'content' is empty (null)"),
    ],
    ids=[sender.name for sender in CMS_SENDERS],
)
def test_an_upsert_whose_body_is_null_is_refused_even_with_a_read_api(
    sender: Sender, empty: Callable[[dict[str, Any]], None], expected: str
) -> None:
    assert bad_request(sender.name, edited(sender.publish(ENTRY), empty), api=True) == expected


def test_a_strapi_entry_whose_blocks_body_has_no_text_is_refused_as_empty() -> None:
    def empty_paragraph(payload: dict[str, Any]) -> None:
        blocks = [{"type": "paragraph", "children": [{"type": "text", "text": ""}]}]
        payload["entry"]["content"] = blocks

    message = bad_request("strapi", edited(STRAPI.publish(ENTRY), empty_paragraph), api=True)

    assert message == "the body field 'content' is empty"


def test_a_mapped_field_that_the_entry_lacks_is_named_in_the_refusal() -> None:
    fields = FieldMap(body_field="body.markdown")

    for sender in (STRAPI, CONTENTFUL, SANITY, DIRECTUS):
        message = bad_request(sender.name, sender.publish(ENTRY), fields=fields)

        assert message == "the body field 'body.markdown' is missing from the entry"


# --- Delivery ids -----------------------------------------------------------------------------


def delivery_id(name: str, sent: Sent) -> str:
    return make_format(name).authenticate(received(sent), now=time.time())


def test_ghost_sends_no_delivery_id_so_it_is_a_hash_of_body_and_signing_time() -> None:
    sent = GHOST.publish(ENTRY)
    stamp = re.search(r"t=(\d+)", sent.headers["X-Ghost-Signature"])
    assert stamp is not None

    assert delivery_id("ghost", sent) == body_delivery_id("ghost", sent.body, stamp[1].encode())


@pytest.mark.parametrize("sender", [STRAPI, DIRECTUS], ids=lambda sender: sender.name)
def test_a_token_only_cms_delivery_id_is_a_hash_of_its_body(sender: Sender) -> None:
    sent = sender.publish(ENTRY)

    assert delivery_id(sender.name, sent) == body_delivery_id(sender.name, sent.body)
    assert re.fullmatch(rf"{sender.name}:sha256:[0-9a-f]{{64}}", delivery_id(sender.name, sent))
    assert delivery_id(sender.name, sender.remove(ENTRY)) != delivery_id(sender.name, sent)


def test_contentfuls_idempotency_key_is_the_delivery_id() -> None:
    sent = CONTENTFUL.publish(ENTRY)

    assert delivery_id("contentful", sent) == (
        f"contentful:{sent.headers['X-Contentful-Idempotency-Key']}"
    )


def test_without_an_idempotency_key_a_contentful_id_hashes_topic_and_body() -> None:
    sent = CONTENTFUL.publish(ENTRY)
    headers = {k: v for k, v in sent.headers.items() if not k.lower().startswith("x-contentful")}
    headers |= {"X-Contentful-Topic": "ContentManagement.Entry.publish"}
    headers |= {"Authorization": "Bearer cf-token"}
    token_only = ContentfulFormat(FieldMap(), token="cf-token")

    delivery = token_only.authenticate(received(Sent(sent.body, headers)), now=time.time())

    topic = b"ContentManagement.Entry.publish"
    assert delivery == body_delivery_id("contentful", topic, sent.body)


def test_sanitys_idempotency_key_is_the_delivery_id() -> None:
    sent = SANITY.publish(ENTRY)

    assert delivery_id("sanity", sent) == f"sanity:{sent.headers['idempotency-key']}"


# --- Ghost ------------------------------------------------------------------------------------


def ghost(event: str, kind: str = "post", **current: object) -> Sent:
    """A Ghost delivery for `event` whose current post has `current` changed."""
    post = GHOST.post(ENTRY) | current
    return Sent(
        json.dumps({kind: {"current": post, "previous": {}}}).encode(), {}, f"event={event}"
    )


def test_a_published_ghost_post_is_upserted_from_its_html() -> None:
    delivery = only(parse("ghost", GHOST.publish(ENTRY)))

    assert delivery == Delivery(
        "upsert",
        "post:post-1",
        "Hello RAG",
        "https://blog.example.com/post-1/",
        UPDATED,
        "<h2>Hello RAG</h2><p>Index what is published.</p>",
        "text/html",
    )


def test_an_edit_of_a_published_ghost_post_is_upserted() -> None:
    delivery = only(parse("ghost", ghost("post.published.edited", html="<p>Edited.</p>")))

    assert (delivery.event, delivery.content) == ("upsert", "<p>Edited.</p>")


def test_an_unpublished_ghost_post_is_deleted() -> None:
    delivery = only(parse("ghost", ghost("post.unpublished", status="draft")))

    assert (delivery.event, delivery.entry_id) == ("delete", "post:post-1")


def test_a_deleted_ghost_post_is_deleted_by_the_id_in_previous() -> None:
    delivery = only(parse("ghost", GHOST.remove(ENTRY)))

    assert (delivery.event, delivery.entry_id) == ("delete", "post:post-1")


def test_the_event_in_the_url_decides_even_when_the_post_still_looks_published() -> None:
    assert only(parse("ghost", ghost("post.deleted"))).event == "delete"
    assert only(parse("ghost", ghost("post.unpublished"))).event == "delete"


def test_without_an_event_in_the_url_the_event_in_the_body_decides() -> None:
    body = {"event": "post.unpublished", "post": {"current": GHOST.post(ENTRY), "previous": {}}}

    delivery = only(parse("ghost", Sent(json.dumps(body).encode(), {})))

    assert delivery.event == "delete"


def test_without_any_event_a_published_ghost_post_is_upserted() -> None:
    body = {"post": {"current": GHOST.post(ENTRY), "previous": {}}}

    assert only(parse("ghost", Sent(json.dumps(body).encode(), {}))).event == "upsert"


@pytest.mark.parametrize(
    ("event", "change"),
    [
        ("post.added", {"status": "draft"}),
        ("post.edited", {"status": "scheduled"}),
        ("post.published", {"visibility": "members"}),
        ("post.published.edited", {"visibility": "paid"}),
        ("post.published", {"visibility": "tiers"}),
    ],
    ids=["draft", "scheduled", "members", "paid", "tiers"],
)
def test_a_ghost_post_that_is_not_public_is_never_indexed_and_is_deleted(
    event: str, change: dict[str, str]
) -> None:
    # Deleted rather than ignored: a post made members-only after it was public must go.
    delivery = only(parse("ghost", ghost(event, **change)))

    assert (delivery.event, delivery.entry_id, delivery.content) == ("delete", "post:post-1", None)


def test_a_ghost_page_is_keyed_as_a_page() -> None:
    upsert = only(parse("ghost", ghost("page.published", kind="page")))
    delete = only(parse("ghost", ghost("page.unpublished", kind="page", status="draft")))

    assert (upsert.event, upsert.entry_id) == ("upsert", "page:post-1")
    assert (delete.event, delete.entry_id) == ("delete", "page:post-1")


def test_a_ghost_page_is_ignored_by_a_source_holding_posts_only() -> None:
    fmt = GhostFormat(GHOST.secret.encode(), kinds=("post",))

    reason = ignored(fmt.parse(received(ghost("page.published", kind="page"))))

    assert reason == "a page is not in the source's content_types"


@pytest.mark.parametrize(
    ("event", "body"),
    [
        ("tag.added", {"tag": {"current": {"id": "t1", "name": "news"}, "previous": {}}}),
        ("member.added", {"member": {"current": {"id": "m1"}, "previous": {}}}),
        ("site.changed", {"site": {}}),
    ],
)
def test_ghost_events_about_tags_members_or_the_site_are_ignored(
    event: str, body: dict[str, Any]
) -> None:
    sent = Sent(json.dumps(body).encode(), {}, f"event={event}")

    assert "not a post or a page" in ignored(parse("ghost", sent))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"posts": []}, "the body must hold one of 'post' or 'page'"),
        ({"post": {"current": {}}, "page": {"current": {}}}, "one of 'post' or 'page'"),
        ({"post": []}, "post must be an object, got an array"),
        ({"post": {"current": "x"}}, "post.current and post.previous must be objects"),
        ({"post": {"current": {"id": 5, "status": "draft"}}}, "post.id must be a string"),
        ({"post": {"current": GHOST.post(ENTRY) | {"html": ""}}}, "post.current.html is missing"),
        (
            {"post": {"current": GHOST.post(ENTRY) | {"updated_at": "yesterday"}}},
            "post.updated_at is not an ISO 8601 date-time",
        ),
    ],
    ids=[
        "no-post",
        "post-and-page",
        "post-array",
        "current-string",
        "numeric-id",
        "empty-html",
        "bad-time",
    ],
)
def test_a_ghost_body_of_the_wrong_shape_is_refused_naming_the_field(
    body: dict[str, Any], expected: str
) -> None:
    assert expected in bad_request("ghost", Sent(json.dumps(body).encode(), {}))


# --- Strapi -----------------------------------------------------------------------------------


def strapi(event: str, **changes: object) -> Sent:
    """A Strapi delivery of `event` whose entry has `changes` (... drops a field)."""
    row = {k: v for k, v in (STRAPI.row(ENTRY) | changes).items() if v is not ...}
    return Sent(json.dumps({"event": event, "model": "article", "entry": row}).encode(), {})


def test_a_published_strapi_entry_is_upserted_keyed_by_document_and_locale() -> None:
    delivery = only(parse("strapi", STRAPI.publish(ENTRY)))

    assert delivery == Delivery(
        "upsert",
        "article:post-1:en",
        "Hello RAG",
        None,
        UPDATED,
        "## Hello RAG\n\nIndex what is published.\n",
        "text/markdown",
    )


def test_the_url_template_is_filled_from_the_strapi_entry() -> None:
    fields = FieldMap(url_template="https://blog.example.com/{locale}/{slug}")

    delivery = only(parse("strapi", STRAPI.publish(ENTRY), fields=fields))

    assert delivery.url == "https://blog.example.com/en/post-1"


def test_a_strapi_draft_save_is_ignored() -> None:
    reason = ignored(parse("strapi", STRAPI.draft(ENTRY)))

    assert "draft" in reason


def test_a_strapi_entry_created_as_a_draft_is_ignored() -> None:
    assert "draft" in ignored(parse("strapi", strapi("entry.create", publishedAt=None)))


def test_a_strapi_edit_of_a_type_without_draft_and_publish_is_upserted() -> None:
    # v5 sets publishedAt on every row of such a type; create and update are its only events.
    for event in ("entry.create", "entry.update"):
        delivery = only(parse("strapi", strapi(event)))

        assert (delivery.event, delivery.entry_id) == ("upsert", "article:post-1:en")


def test_a_strapi_v4_edit_of_a_type_without_draft_and_publish_is_upserted() -> None:
    # Strapi v4 gives a type without draft & publish no publishedAt attribute at all
    # (packages/core/strapi/lib/core/domain/content-type/index.js): its rows are all live.
    sent = strapi("entry.update", publishedAt=..., documentId=..., id=12)

    delivery = only(parse("strapi", sent))

    assert (delivery.event, delivery.entry_id) == ("upsert", "article:12:en")


@pytest.mark.parametrize("event", ["entry.unpublish", "entry.delete"])
def test_an_unpublished_or_deleted_strapi_entry_is_deleted(event: str) -> None:
    delivery = only(parse("strapi", strapi(event)))

    assert (delivery.event, delivery.entry_id) == ("delete", "article:post-1:en")


def test_deleting_a_strapi_draft_row_deletes_the_document_too() -> None:
    # A document delete sends one entry.delete per row, draft and published alike.
    delivery = only(parse("strapi", strapi("entry.delete", publishedAt=None, id=47)))

    assert (delivery.event, delivery.entry_id) == ("delete", "article:post-1:en")


def test_a_strapi_entry_without_a_locale_is_keyed_by_its_document_alone() -> None:
    assert only(parse("strapi", strapi("entry.publish", locale=...))).entry_id == "article:post-1"


def test_a_strapi_v4_entry_is_keyed_by_its_numeric_id() -> None:
    sent = strapi("entry.update", documentId=..., id=12)

    assert only(parse("strapi", sent)).entry_id == "article:12:en"


def test_a_strapi_v4_rest_item_is_flattened_from_its_attributes() -> None:
    item = {"id": 12, "attributes": {"title": "Hello", "content": "Body.", "locale": "en"}}

    assert flat(item) == {"id": 12, "title": "Hello", "content": "Body.", "locale": "en"}
    assert flat({"id": 12, "title": "v5"}) == {"id": 12, "title": "v5"}


def test_the_strapi_event_header_is_read_when_the_body_names_none() -> None:
    sent = edited(STRAPI.publish(ENTRY), lambda payload: payload.pop("event"))

    assert only(parse("strapi", sent)).event == "upsert"


@pytest.mark.parametrize(
    "event", ["entry.draft-discard", "media.create", "review-workflows.updateEntryStage"]
)
def test_strapi_events_that_change_no_published_entry_are_ignored(event: str) -> None:
    assert event in ignored(parse("strapi", strapi(event)))


def test_a_strapi_entry_is_keyed_without_its_locale_when_the_source_lists_no_locales() -> None:
    delivery = only(StrapiFormat(STRAPI.token, FieldMap()).parse(received(STRAPI.publish(ENTRY))))

    assert delivery.entry_id == "article:post-1"


def test_a_strapi_entry_in_a_locale_the_source_does_not_list_is_ignored() -> None:
    fmt = StrapiFormat(STRAPI.token, FieldMap(), locales=("de", "fr"))

    assert "locale 'en'" in ignored(fmt.parse(received(STRAPI.publish(ENTRY))))


def test_a_strapi_model_outside_the_configured_content_types_is_ignored() -> None:
    fmt = StrapiFormat(STRAPI.token, FieldMap(), content_types=frozenset({"page"}))

    assert "model 'article'" in ignored(fmt.parse(received(STRAPI.publish(ENTRY))))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda p: p.pop("model"), "model must be a non-empty string, got null"),
        (lambda p: p.update(entry=[1]), "entry must be an object, got an array"),
        (lambda p: p.update(event=5), "event must be a string, got a number"),
        (
            lambda p: p["entry"].pop("documentId") and p["entry"].pop("id"),
            "entry has neither documentId nor id",
        ),
        (lambda p: p["entry"].update(documentId="../etc"), "id"),
        (lambda p: p["entry"].update(updatedAt="2026-05-28 20:26"), "entry.updatedAt"),
    ],
    ids=["no-model", "entry-array", "event-number", "no-id", "path-id", "naive-time"],
)
def test_a_strapi_body_of_the_wrong_shape_is_refused_naming_the_field(
    change: Callable[[dict[str, Any]], object], expected: str
) -> None:
    assert expected in bad_request("strapi", edited(STRAPI.publish(ENTRY), change))


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer guessed", "Basic c3RyYXBpOnRva2Vu", "Bearer", "strapi-static-token"],
)
def test_a_strapi_delivery_without_the_bearer_token_is_unauthorized(
    authorization: str | None,
) -> None:
    sent = STRAPI.publish(ENTRY)
    headers = {k: v for k, v in sent.headers.items() if k != "Authorization"}
    if authorization is not None:
        headers["Authorization"] = authorization

    unauthorized("strapi", Sent(sent.body, headers))


# --- Contentful -------------------------------------------------------------------------------


def contentful(topic: str, sent: Sent | None = None) -> Sent:
    """`sent` (a publish by default) as if its topic were `topic` (unsigned: for parse)."""
    sent = sent or CONTENTFUL.publish(ENTRY)
    return with_headers(sent, **{"X-Contentful-Topic": topic})


def test_a_published_contentful_entry_is_upserted_from_its_locale() -> None:
    delivery = only(parse("contentful", CONTENTFUL.publish(ENTRY)))

    assert delivery == Delivery(
        "upsert",
        "post-1",
        "Hello RAG",
        None,
        UPDATED,
        "## Hello RAG\n\nIndex what is published.\n",
        "text/markdown",
    )


def test_a_contentful_source_indexes_the_fields_of_its_configured_locale() -> None:
    def add_german(payload: dict[str, Any]) -> None:
        payload["fields"]["title"]["de-DE"] = "Hallo RAG"
        payload["fields"]["content"]["de-DE"] = "Veröffentlichtes wird indexiert."

    sent = edited(CONTENTFUL.publish(ENTRY), add_german)
    german = ContentfulFormat(FieldMap(), token="t", locale="de-DE").parse(received(sent))

    assert (only(german).title, only(german).content) == (
        "Hallo RAG", "Veröffentlichtes wird indexiert."
    )  # fmt: skip


@pytest.mark.parametrize("action", ["unpublish", "delete", "archive"])
def test_an_unpublished_deleted_or_archived_contentful_entry_is_deleted(action: str) -> None:
    sent = contentful(f"ContentManagement.Entry.{action}", CONTENTFUL.remove(ENTRY))

    delivery = only(parse("contentful", sent))

    assert (delivery.event, delivery.entry_id, delivery.updated_at) == ("delete", "post-1", UPDATED)


def test_an_archived_contentful_entry_is_deleted() -> None:
    payload = json.loads(CONTENTFUL.publish(ENTRY).body)
    payload["sys"] |= {"archivedVersion": 5, "archivedAt": "2026-11-27T13:00:00.000Z"}
    sent = Sent(json.dumps(payload).encode(), CONTENTFUL.publish(ENTRY).headers)

    delivery = only(parse("contentful", contentful("ContentManagement.Entry.archive", sent)))

    assert (delivery.event, delivery.entry_id) == ("delete", "post-1")


@pytest.mark.parametrize("action", ["unpublish", "delete", "archive"])
def test_a_published_contentful_body_under_a_removing_topic_is_refused(action: str) -> None:
    # The topic header may not be signed: a replayed publish must not become a delete.
    sent = contentful(f"ContentManagement.Entry.{action}", CONTENTFUL.publish(ENTRY))

    message = bad_request("contentful", sent)

    assert message == f"topic '{action}' does not match the body's sys.type 'Entry'"


def test_the_contentful_delete_tombstone_carries_only_sys() -> None:
    assert set(json.loads(CONTENTFUL.remove(ENTRY).body)) == {"sys"}
    assert only(parse("contentful", CONTENTFUL.remove(ENTRY))).event == "delete"


@pytest.mark.parametrize("action", ["create", "save", "auto_save", "unarchive"])
def test_contentful_saves_of_a_draft_are_ignored(action: str) -> None:
    reason = ignored(parse("contentful", contentful(f"ContentManagement.Entry.{action}")))

    assert "draft" in reason


@pytest.mark.parametrize(
    "topic",
    ["ContentManagement.Asset.publish", "ContentManagement.ContentType.publish", ""],
)
def test_contentful_topics_about_anything_but_an_entry_are_ignored(topic: str) -> None:
    assert "not about an entry" in ignored(parse("contentful", contentful(topic)))


def test_a_contentful_content_type_outside_the_configured_ones_is_ignored() -> None:
    fmt = ContentfulFormat(FieldMap(), token="t", content_types=frozenset({"page"}))

    for sent in (CONTENTFUL.publish(ENTRY), CONTENTFUL.remove(ENTRY)):
        assert "'article'" in ignored(fmt.parse(received(sent)))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda p: p.pop("sys"), "sys must be an object, got null"),
        (lambda p: p["sys"].update(id=42), "sys.id must be a string, got a number"),
        (lambda p: p["sys"].update(updatedAt=12), "sys.updatedAt must be a string, got a number"),
        (
            lambda p: p["fields"].update(content={"en-US": {"nodeType": "paragraph"}}),
            "the body field 'content' is an object, not text or rich text",
        ),
    ],
    ids=["no-sys", "numeric-id", "numeric-time", "not-a-document"],
)
def test_a_contentful_body_of_the_wrong_shape_is_refused_naming_the_field(
    change: Callable[[dict[str, Any]], object], expected: str
) -> None:
    assert bad_request("contentful", edited(CONTENTFUL.publish(ENTRY), change)) == expected


# --- Sanity -----------------------------------------------------------------------------------


def sanity(op: str | None = None, doc_id: str | None = None, **body: object) -> Sent:
    """A Sanity delivery with its sanity-operation and sanity-document-id headers ("" drops
    one; an operation given is also the projection's) and its body changed (... drops a
    field)."""
    sent = SANITY.publish(ENTRY)
    body = ({"operation": op} if op else {}) | body
    headers = dict(sent.headers)
    for name, value in (("sanity-operation", op), ("sanity-document-id", doc_id)):
        if value == "":
            headers.pop(name)
        elif value is not None:
            headers[name] = value
    payload = {k: v for k, v in (json.loads(sent.body) | body).items() if v is not ...}
    return Sent(json.dumps(payload).encode(), headers)


def test_a_sanity_update_is_upserted_from_its_portable_text() -> None:
    delivery = only(parse("sanity", SANITY.publish(ENTRY)))

    assert delivery == Delivery(
        "upsert",
        "post-1",
        "Hello RAG",
        None,
        UPDATED,
        "## Hello RAG\n\nIndex what is published.\n",
        "text/markdown",
    )


def test_a_sanity_create_is_upserted() -> None:
    assert only(parse("sanity", sanity("create"))).event == "upsert"


def test_a_sanity_delete_is_a_delete_whatever_the_projection_holds() -> None:
    sent = sanity("delete", content=..., title=...)

    assert only(parse("sanity", sent)) == Delivery("delete", "post-1", updated_at=UPDATED)


def test_the_operation_in_the_projection_is_read_when_the_header_is_absent() -> None:
    assert only(parse("sanity", sanity("", operation="delete"))).event == "delete"
    assert only(parse("sanity", sanity("", operation="create"))).event == "upsert"


@pytest.mark.parametrize("operation", ["publish", "UPDATE", "patch"])
def test_a_sanity_operation_other_than_create_update_or_delete_is_refused(operation: str) -> None:
    message = bad_request("sanity", sanity(operation))

    assert message == "sanity-operation must be create, update or delete"


@pytest.mark.parametrize("ident", ["drafts.post-1", "versions.rABC.post-1"])
def test_sanity_drafts_and_release_versions_are_ignored(ident: str) -> None:
    for operation in ("create", "update", "delete"):
        reason = ignored(parse("sanity", sanity(operation, ident, _id=ident)))

        assert "not published content" in reason


def test_the_sanity_document_is_the_projections_id_which_the_header_must_match() -> None:
    assert only(parse("sanity", sanity(doc_id="post-2", _id="post-2"))).entry_id == "post-2"


def test_a_sanity_document_id_header_other_than_the_signed_bodys_is_refused() -> None:
    # The signature covers the body only: a replayed body must not be aimed elsewhere.
    message = bad_request("sanity", sanity(doc_id="someone-elses"))

    assert message == "sanity-document-id does not match the body's _id"


def test_a_sanity_operation_header_other_than_the_signed_bodys_is_refused() -> None:
    message = bad_request("sanity", sanity("update", operation="delete"))

    assert message == "sanity-operation does not match the body's operation"


def test_without_the_header_the_sanity_document_is_the_projections_id() -> None:
    assert only(parse("sanity", sanity(doc_id="", _id="post-3"))).entry_id == "post-3"


def test_a_sanity_delivery_naming_no_document_is_refused() -> None:
    message = bad_request("sanity", sanity(doc_id="", _id=...))

    assert message == "_id must be a string, got null"


def test_a_sanity_type_outside_the_configured_content_types_is_ignored() -> None:
    fmt = SanityFormat(SANITY.secret.encode(), FieldMap(), content_types=frozenset({"page"}))

    assert "type 'post'" in ignored(fmt.parse(received(SANITY.publish(ENTRY))))


# --- Directus ---------------------------------------------------------------------------------


def directus(event: object, **body: object) -> Sent:
    """A Directus delivery (a Flow's {{$trigger}}) for `event`, its body fields changed."""
    payload = {"event": event, "collection": "articles", **body}
    return Sent(json.dumps({k: v for k, v in payload.items() if v is not ...}).encode(), {})


ITEM = {
    "id": "post-1",
    "title": "Hello RAG",
    "content": "## Hello RAG\n\nIndex what is published.\n",
    "date_updated": "2026-05-28T20:26:40.250Z",
}


def test_a_directus_flows_create_is_upserted_keyed_by_collection_and_key() -> None:
    delivery = only(parse("directus", DIRECTUS.publish(ENTRY)))

    assert delivery == Delivery(
        "upsert",
        "articles:post-1",
        "Hello RAG",
        None,
        UPDATED,
        "## Hello RAG\n\nIndex what is published.\n",
        "text/markdown",
    )


def test_a_legacy_directus_webhooks_create_is_read_the_same_way() -> None:
    sent = directus("items.create", payload=ITEM, key="post-1")

    assert only(parse("directus", sent)).entry_id == "articles:post-1"


def test_a_directus_integer_key_is_part_of_the_entry_key() -> None:
    sent = directus("articles.items.create", payload=ITEM, key=42)

    assert only(parse("directus", sent)).entry_id == "articles:42"


def test_a_directus_update_with_the_body_upserts_every_key() -> None:
    sent = directus("articles.items.update", payload=ITEM, keys=["a1", "a2"])

    deliveries = parse("directus", sent).deliveries

    assert [(d.event, d.entry_id, d.content) for d in deliveries] == [
        ("upsert", "articles:a1", ITEM["content"]),
        ("upsert", "articles:a2", ITEM["content"]),
    ]


def test_a_directus_update_without_the_body_field_is_refused_naming_it() -> None:
    sent = directus("articles.items.update", payload={"title": "Renamed"}, keys=["a1"])

    assert bad_request("directus", sent) == "the body field 'content' is missing from the entry"


def test_with_a_read_api_every_directus_update_is_read_back_whole() -> None:
    # An update's payload holds only the fields that changed, even when the body is one.
    sent = directus("articles.items.update", payload=ITEM, keys=["a1", "a2"])

    deliveries = parse("directus", sent, api=True).deliveries

    assert [(d.event, d.entry_id, d.content) for d in deliveries] == [
        ("upsert", "articles:a1", None),
        ("upsert", "articles:a2", None),
    ]


def test_a_directus_update_that_empties_the_body_is_refused_even_with_a_read_api() -> None:
    sent = directus("articles.items.update", payload={**ITEM, "content": ""}, keys=["a1"])

    assert bad_request("directus", sent, api=True) == "the body field 'content' is empty"


def test_a_directus_delete_deletes_every_key() -> None:
    sent = directus("items.delete", payload=["a1", 7], keys=["a1", 7])

    deliveries = parse("directus", sent).deliveries

    assert deliveries == (Delivery("delete", "articles:a1"), Delivery("delete", "articles:7"))


@pytest.mark.parametrize(
    "event", ["users.create", "articles.items.sort", "items.login", "server.start", "create"]
)
def test_directus_events_other_than_item_changes_are_ignored(event: str) -> None:
    sent = directus(event, payload=ITEM, key="a1")

    assert event in ignored(parse("directus", sent))


def test_a_directus_collection_outside_the_configured_content_types_is_ignored() -> None:
    fmt = DirectusFormat(DIRECTUS.token, FieldMap(), content_types=frozenset({"pages"}))

    assert "collection 'articles'" in ignored(fmt.parse(received(DIRECTUS.publish(ENTRY))))


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (
            directus("articles.items.create", payload=ITEM),
            "key must be a string or an integer, got null",
        ),
        (directus("articles.items.update", payload=ITEM, keys=[]), "keys is missing, got an array"),
        (directus("articles.items.delete", keys="a1"), "keys is missing"),
        (
            directus("articles.items.create", collection=..., payload=ITEM, key="a"),
            "collection must be a non-empty string, got null",
        ),
        (directus("articles.items.create", payload=["a"], key="a"), "payload must be an object"),
        (directus("articles.items.create", payload=ITEM, key=True), "key must be a string"),
        (directus(["x"], payload=ITEM, key="a"), "event must be a string, got an array"),
    ],
    ids=[
        "create-no-key",
        "update-no-keys",
        "delete-keys-string",
        "no-collection",
        "payload-array",
        "boolean-key",
        "event-array",
    ],
)
def test_a_directus_body_of_the_wrong_shape_is_refused_naming_the_field(
    sent: Sent, expected: str
) -> None:
    assert expected in bad_request("directus", sent)


def test_a_sanity_url_template_reads_the_slug_object_of_the_documented_projection() -> None:
    fields = FieldMap(url_template="https://docs.example.com/posts/{slug.current}")
    fmt = SanityFormat(SANITY.secret.encode(), fields)

    delivery = only(fmt.parse(received(SANITY.publish(ENTRY))))

    assert delivery.url == f"https://docs.example.com/posts/{ENTRY.ident}"
