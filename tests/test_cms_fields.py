"""FieldMap: which fields of a CMS entry are its title, its body and its URL.

A CMS whose content types are its own (Strapi, Contentful, Sanity, Directus) is indexed
through the mapping an operator configures: `title_field`, `body_field` (dotted paths),
`body_format`, and `url_template` filled from the entry. An entry whose body field is
missing, empty or not text is refused (400) naming the field, never indexed empty.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ragd.sources.cms.contentful import localized
from ragd.sources.cms.fields import FieldMap, lookup, placeholders
from ragd.sources.deliveries import MAX_TITLE, MAX_URL, Delivery
from ragd.sources.webhooks import WebhookRejected

ENTRY: dict[str, Any] = {
    "title": "Getting started",
    "content": "# Getting started\n\nInstall ragd.\n",
    "slug": "getting-started",
}
STRAPI_BLOCKS = [
    {"type": "heading", "level": 2, "children": [{"type": "text", "text": "Install"}]},
    {"type": "paragraph", "children": [{"type": "text", "text": "Run the installer."}]},
]
PORTABLE_TEXT = [
    {"_type": "block", "_key": "a", "style": "h2", "markDefs": [],
     "children": [{"_type": "span", "_key": "s", "text": "Install", "marks": []}]},
    {"_type": "block", "_key": "b", "style": "normal", "markDefs": [],
     "children": [{"_type": "span", "_key": "t", "text": "Run the installer.", "marks": []}]},
]  # fmt: skip
CONTENTFUL_DOCUMENT = {
    "nodeType": "document", "data": {}, "content": [
        {"nodeType": "heading-2", "data": {}, "content": [
            {"nodeType": "text", "value": "Install", "marks": [], "data": {}}]},
        {"nodeType": "paragraph", "data": {}, "content": [
            {"nodeType": "text", "value": "Run the installer.", "marks": [], "data": {}}]},
    ],
}  # fmt: skip


def refused(fields: FieldMap, entry: dict[str, Any]) -> str:
    with pytest.raises(WebhookRejected) as info:
        fields.body(entry)
    assert info.value.status == 400
    assert "\n" not in info.value.message
    return info.value.message


# --- Title and body ---------------------------------------------------------------------------


def test_the_default_mapping_reads_title_and_content_as_markdown() -> None:
    fields = FieldMap()

    assert fields.title(ENTRY) == "Getting started"
    assert fields.body(ENTRY) == (ENTRY["content"], "text/markdown")


def test_title_and_body_come_from_the_configured_fields() -> None:
    fields = FieldMap(title_field="headline", body_field="text")
    entry = {"headline": "Release notes", "text": "Version 2.", "title": "x", "content": "y"}

    assert fields.title(entry) == "Release notes"
    assert fields.body(entry) == ("Version 2.", "text/markdown")


def test_a_dotted_path_reaches_into_nested_objects() -> None:
    fields = FieldMap(title_field="seo.metaTitle", body_field="body.en.text")
    entry = {"seo": {"metaTitle": "Nested"}, "body": {"en": {"text": "Deep text."}}}

    assert fields.title(entry) == "Nested"
    assert fields.body(entry)[0] == "Deep text."


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("slug.current", "intro"),
        ("slug", {"current": "intro"}),
        ("slug.current.more", None),
        ("slug.other", None),
        ("missing.current", None),
        ("tags.0", None),
    ],
)
def test_lookup_follows_objects_only_and_is_none_where_the_path_leads_nowhere(
    path: str, expected: object
) -> None:
    entry = {"slug": {"current": "intro"}, "tags": ["a", "b"]}

    assert lookup(entry, path) == expected


@pytest.mark.parametrize(
    ("body_format", "content_type"),
    [("markdown", "text/markdown"), ("html", "text/html"), ("text", "text/plain")],
)
def test_the_body_format_names_the_bodys_content_type(body_format: Any, content_type: str) -> None:
    fields = FieldMap(body_format=body_format)

    assert fields.body({"content": "<p>Body</p>"}) == ("<p>Body</p>", content_type)


@pytest.mark.parametrize(
    "rich",
    [STRAPI_BLOCKS, PORTABLE_TEXT, CONTENTFUL_DOCUMENT],
    ids=["strapi-blocks", "portable-text", "contentful-rich-text"],
)
@pytest.mark.parametrize("body_format", ["markdown", "html", "text"])
def test_a_rich_text_body_becomes_markdown_whatever_the_body_format(
    rich: object, body_format: Any
) -> None:
    text, kind = FieldMap(body_format=body_format).body({"content": rich})

    assert (text, kind) == ("## Install\n\nRun the installer.\n", "text/markdown")


def test_a_missing_body_field_is_refused_naming_the_field() -> None:
    message = refused(FieldMap(body_field="body.text"), {"title": "t", "body": {}})

    assert message == "the body field 'body.text' is missing from the entry"


def test_a_null_body_is_refused_as_empty() -> None:
    assert refused(FieldMap(), {"content": None}) == "the body field 'content' is empty (null)"


@pytest.mark.parametrize(
    "body",
    ["", "   \n\t", {"nodeType": "document", "content": []}, [{"type": "paragraph"}]],
    ids=["empty", "whitespace", "empty-document", "textless-blocks"],
)
def test_an_empty_body_is_refused_naming_the_field(body: object) -> None:
    message = refused(FieldMap(body_field="content"), {"content": body})

    assert message == "the body field 'content' is empty"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (42, "a number"),
        (True, "a boolean"),
        ({"en-US": "localized text"}, "an object"),
        (["secret-looking", "strings"], "an array"),
    ],
)
def test_a_body_that_is_not_text_is_refused_naming_its_type_not_its_value(
    body: object, kind: str
) -> None:
    message = refused(FieldMap(), {"content": body})

    assert message == f"the body field 'content' is {kind}, not text or rich text"
    assert "secret-looking" not in message and "localized" not in message


def test_has_body_tells_whether_the_body_field_is_there_at_all() -> None:
    fields = FieldMap(body_field="body.text")

    assert fields.has_body({"body": {"text": ""}})
    assert not fields.has_body({"body": {}})
    assert not fields.has_body({"body": None})
    # Sent as null, the body is there and empty: fetching the entry back finds no more.
    assert fields.has_body({"body": {"text": None}})


@pytest.mark.parametrize("title", [None, "", "   ", 7, ["a"], {"en-US": "Hi"}])
def test_a_title_that_is_missing_blank_or_not_text_is_none(title: object) -> None:
    assert FieldMap().title({"title": title, "content": "x"}) is None


def test_a_long_title_is_cut_to_the_limit() -> None:
    title = FieldMap().title({"title": "t" * (MAX_TITLE + 50)})

    assert title == "t" * MAX_TITLE


# --- URL template -----------------------------------------------------------------------------


def test_the_url_template_is_filled_from_the_entry() -> None:
    fields = FieldMap(url_template="https://docs.example.com/{locale}/{slug}")

    assert fields.url(ENTRY | {"locale": "en"}) == "https://docs.example.com/en/getting-started"


def test_a_placeholder_may_be_a_dotted_path() -> None:
    fields = FieldMap(url_template="https://example.com/blog/{slug.current}")

    assert fields.url({"slug": {"current": "hello"}}) == "https://example.com/blog/hello"


def test_an_integer_fills_a_placeholder() -> None:
    fields = FieldMap(url_template="https://cms.example.com/items/{id}")

    assert fields.url({"id": 42}) == "https://cms.example.com/items/42"


def test_filled_values_are_percent_encoded_but_keep_their_slashes() -> None:
    fields = FieldMap(url_template="https://example.com/{path}?q={q}")

    url = fields.url({"path": "guides/über uns", "q": "a&b=c#d"})

    assert url == "https://example.com/guides/%C3%BCber%20uns?q=a%26b%3Dc%23d"


@pytest.mark.parametrize(
    "entry",
    [{}, {"slug": None}, {"slug": ""}, {"slug": True}, {"slug": 1.5}, {"slug": {"current": "x"}}],
    ids=["absent", "null", "empty", "boolean", "float", "object"],
)
def test_a_placeholder_without_a_usable_value_leaves_no_url(entry: dict[str, Any]) -> None:
    fields = FieldMap(url_template="https://example.com/{slug}")

    assert fields.url(entry) is None


def test_one_unfilled_placeholder_leaves_no_url_though_others_are_filled() -> None:
    fields = FieldMap(url_template="https://example.com/{locale}/{slug}")

    assert fields.url({"slug": "hello"}) is None


def test_without_a_template_there_is_no_url() -> None:
    assert FieldMap().url(ENTRY) is None


def test_a_url_longer_than_the_limit_is_dropped() -> None:
    fields = FieldMap(url_template="https://example.com/{slug}")

    assert fields.url({"slug": "a" * MAX_URL}) is None
    assert fields.url({"slug": "a" * (MAX_URL - len("https://example.com/"))}) is not None


def test_placeholders_lists_the_fields_a_template_fills() -> None:
    template = "https://example.com/{locale}/{slug.current}/{id}"

    assert placeholders(template) == ["locale", "slug.current", "id"]


# --- Upserts ----------------------------------------------------------------------------------


def test_an_upsert_carries_key_title_url_version_and_body() -> None:
    fields = FieldMap(url_template="https://docs.example.com/{slug}")
    updated = datetime(2026, 3, 1, 10, 15, tzinfo=UTC)

    delivery = fields.upsert("article:abc:en", ENTRY, updated_at=updated, thin_ok=False)

    assert delivery == Delivery(
        "upsert",
        "article:abc:en",
        "Getting started",
        "https://docs.example.com/getting-started",
        updated,
        ENTRY["content"],
        "text/markdown",
    )


def test_an_entry_without_its_body_is_a_thin_upsert_when_it_can_be_fetched_back() -> None:
    delivery = FieldMap().upsert("k1", {"title": "Partial"}, updated_at=None, thin_ok=True)

    assert delivery.event == "upsert"
    assert delivery.title == "Partial"
    assert delivery.content is None


def test_an_entry_without_its_body_is_refused_when_it_cannot_be_fetched_back() -> None:
    with pytest.raises(WebhookRejected) as info:
        FieldMap().upsert("k1", {"title": "Partial"}, updated_at=None, thin_ok=False)

    assert info.value.status == 400
    assert "'content'" in info.value.message


def test_an_entry_with_an_empty_body_is_refused_even_when_it_could_be_fetched_back() -> None:
    with pytest.raises(WebhookRejected, match="'content' is empty"):
        FieldMap().upsert("k1", {"content": "  "}, updated_at=None, thin_ok=True)


def test_an_entry_with_its_body_carries_it_even_when_it_could_be_fetched_back() -> None:
    delivery = FieldMap().upsert("k1", ENTRY, updated_at=None, thin_ok=True)

    assert delivery.content == ENTRY["content"]


# --- Locale-keyed values (Contentful's webhook fields) ----------------------------------------


def test_locale_keyed_fields_are_read_in_one_locale() -> None:
    fields = {
        "title": {"en-US": "Hello", "de-DE": "Hallo"},
        "content": {"en-US": "English body.", "de-DE": "Deutscher Text."},
    }

    assert localized(fields, "de-DE") == {"title": "Hallo", "content": "Deutscher Text."}
    assert FieldMap().body(localized(fields, "en-US")) == ("English body.", "text/markdown")


def test_a_locale_keyed_rich_text_body_becomes_markdown() -> None:
    entry = localized({"content": {"en-US": CONTENTFUL_DOCUMENT}}, "en-US")

    assert FieldMap().body(entry) == ("## Install\n\nRun the installer.\n", "text/markdown")


def test_a_field_without_the_locale_is_not_taken_from_another_locale() -> None:
    entry = localized({"title": {"de-DE": "Hallo"}, "content": {"de-DE": "Text."}}, "en-US")

    assert FieldMap().title(entry) is None
    assert "'content'" in refused(FieldMap(), entry)


@pytest.mark.parametrize("fields", [None, "text", ["a"], 3])
def test_fields_that_are_not_an_object_localize_to_nothing(fields: object) -> None:
    assert localized(fields, "en-US") == {}
