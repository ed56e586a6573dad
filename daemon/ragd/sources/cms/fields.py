"""Which fields of a CMS entry ragd indexes: the title, the body, and the page's URL.

Owns `FieldMap`, the mapping an operator configures for CMSes whose content types are
their own (Strapi, Contentful, Sanity, Directus): `title_field`, `body_field` (Markdown,
HTML or plain text, or structured rich text turned into Markdown by ragd.sources.rich_text)
and `url_template` ("https://docs.example.com/{slug}", each `{field}` filled from the
entry). A field may be a dotted path ("slug.current"). An entry whose body field is
missing or empty is refused naming the field: it is never indexed as an empty document.
Pure.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ragd.sources import rich_text
from ragd.sources.deliveries import MAX_TITLE, MAX_URL, Delivery
from ragd.sources.json_body import describe
from ragd.sources.webhooks import WebhookRejected

BodyFormat = Literal["markdown", "html", "text"]
CONTENT_TYPE: dict[BodyFormat, str] = {
    "markdown": "text/markdown",
    "html": "text/html",
    "text": "text/plain",
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.$-]+)\}")


def lookup(entry: Mapping[str, Any], path: str) -> object:
    """`entry`'s value at a dotted `path`; None where the path leads nowhere."""
    value: object = entry
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def carries(entry: Mapping[str, Any], path: str) -> bool:
    """Whether `entry` has the dotted `path` at all, even as null."""
    parent, _, last = path.rpartition(".")
    holder = lookup(entry, parent) if parent else entry
    return isinstance(holder, Mapping) and last in holder


@dataclass(frozen=True)
class FieldMap:
    """Where an entry keeps its title, its body (and in which format), and its URL."""

    title_field: str = "title"
    body_field: str = "content"
    body_format: BodyFormat = "markdown"
    url_template: str | None = None

    def has_body(self, entry: Mapping[str, Any]) -> bool:
        """Whether the entry carries its body field at all (a partial update may not).
        A field sent as null is carried, and empty: Strapi sends an empty Blocks body
        as `null`, and fetching the entry back would only find it empty again."""
        return carries(entry, self.body_field)

    def body(self, entry: Mapping[str, Any]) -> tuple[str, str]:
        """The body as (text, content type); WebhookRejected(400) naming the field when
        it is missing, empty or not text."""
        value = lookup(entry, self.body_field)
        where = f"the body field '{self.body_field}'"
        if value is None:
            shown = "empty (null)" if carries(entry, self.body_field) else "missing from the entry"
            raise WebhookRejected(400, f"{where} is {shown}")
        if isinstance(value, str):
            text, kind = value, CONTENT_TYPE[self.body_format]
        elif rich_text.is_rich_text(value):
            text, kind = rich_text.to_markdown(value), "text/markdown"
        else:
            raise WebhookRejected(400, f"{where} is {describe(value)}, not text or rich text")
        if not text.strip():
            raise WebhookRejected(400, f"{where} is empty")
        return text, kind

    def title(self, entry: Mapping[str, Any]) -> str | None:
        """The title, cut to MAX_TITLE characters; None when the entry has none."""
        value = lookup(entry, self.title_field)
        return value[:MAX_TITLE] if isinstance(value, str) and value.strip() else None

    def upsert(
        self, key: str, entry: Mapping[str, Any], *, updated_at: datetime | None, thin_ok: bool
    ) -> Delivery:
        """The upsert of entry `key`. Without its body field it is refused naming the
        field, unless `thin_ok` (the entry can be fetched back whole)."""
        title, url = self.title(entry), self.url(entry)
        if thin_ok and not self.has_body(entry):
            return Delivery("upsert", key, title, url, updated_at)
        text, kind = self.body(entry)
        return Delivery("upsert", key, title, url, updated_at, text, kind)

    def url(self, entry: Mapping[str, Any]) -> str | None:
        """`url_template` filled from the entry (each value URL-quoted); None without a
        template or when a placeholder's field is missing."""
        if self.url_template is None:
            return None
        missing = False

        def fill(match: re.Match[str]) -> str:
            nonlocal missing
            value = lookup(entry, match.group(1))
            if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
                missing = True
                return ""
            return urllib.parse.quote(str(value), safe="/")

        url = _PLACEHOLDER.sub(fill, self.url_template)
        return None if missing or len(url) > MAX_URL else url


def placeholders(template: str) -> list[str]:
    """The field names a URL template fills in."""
    return _PLACEHOLDER.findall(template)
