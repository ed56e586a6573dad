"""Sources ragd reads over HTTP on a schedule: what they list, and what a poll must do.

Owns the `RemoteSource` protocol (a sitemap, a WordPress site, a CMS's read API: each
lists its entries with their versions and fetches one), `Listed` and the plan of a poll:
which entries to fetch (new, or newer than the version applied), which documents to
delete (indexed before the poll began, and no longer listed) and which are unchanged.
A listing that failed never gets this far; an empty one deletes nothing. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ragd.sources.deliveries import Delivery


@dataclass(frozen=True, slots=True)
class Listed:
    """One entry a source lists: its document key, its version (sortable UTC text, as
    `Delivery.version`; None when the source gives none) and what `fetch` needs."""

    key: str
    version: str | None
    locator: str


@dataclass(frozen=True, slots=True)
class Known:
    """What the manifest holds of a document of the source: the version last applied and
    when it was first seen."""

    version: str | None
    first_seen_at: str


class RemoteSource(Protocol):
    """A source ragd polls. Both methods do HTTP and may take seconds.

    `confirms_deletes`: the source can say of one entry whether it is gone (a CMS's or
    WordPress's API, addressed by id), so an entry missing from a listing is deleted only
    once `fetch` says so; a listing paged by offset can skip an entry another deletion
    shifted. A sitemap's listing is its word: a page it drops is deleted.
    """

    name: str
    confirms_deletes: bool

    def listing(self) -> list[Listed]:
        """Every entry the source publishes now; SourceError when it cannot say."""
        ...

    def fetch(self, item: Listed) -> Delivery | None:
        """The entry's content; None when the source says it is gone; FetchError or
        WebhookRejected (a shape ragd cannot read) when it cannot be had."""
        ...


@dataclass
class Plan:
    """What one poll does: `fetch` in listing order; `delete` and `unchanged` are keys."""

    fetch: list[Listed] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def plan_poll(listed: Iterable[Listed], known: Mapping[str, Known], *, began_at: str) -> Plan:
    """Compare a listing with the manifest's documents of its source.

    An entry is fetched when it is new, when either side has no version, or when its
    version is newer than the one applied. A document the listing lacks is deleted only
    if the listing named something (an empty answer is taken for an outage) and it was
    first seen before the poll `began_at` (it may have arrived by webhook since).
    """
    result = Plan()
    seen: set[str] = set()
    for item in listed:
        if item.key in seen:
            continue  # a sitemap may list a page twice
        seen.add(item.key)
        had = known.get(item.key)
        # New, or without a version to compare: only its content can tell.
        applied = None if had is None else had.version
        if item.version is not None and applied is not None and item.version <= applied:
            result.unchanged.append(item.key)
        else:
            result.fetch.append(item)
    if seen:
        result.delete = sorted(
            key for key, had in known.items() if key not in seen and had.first_seen_at < began_at
        )
    return result
