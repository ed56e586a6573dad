"""Tests for ragd.sources.polling.poll over an in-memory RemoteSource: what a poll hands
on, in which order and batches, and how failures, gone entries and a stop are reported."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime

from ragd.errors import SourceError
from ragd.sources.deliveries import Delivery, sortable_time
from ragd.sources.http_client import FetchError
from ragd.sources.polling import EMIT_EVERY, MAX_ERRORS_KEPT, PollReport, poll
from ragd.sources.remote import Listed
from ragd.sources.webhooks import WebhookRejected

BEGAN = "2025-06-01T12:00:00.000000Z"
BEFORE = "2025-06-01T11:00:00.000000Z"
V1 = "2025-05-01T00:00:00.000000Z"
V2 = "2025-05-02T00:00:00.000000Z"

Outcome = Delivery | None | Exception | Callable[[], Delivery]


class FakeSource:
    """A RemoteSource whose listing and fetches are given: a fetch returns its Delivery,
    None (gone), or raises its exception; `fetched` records every fetch made."""

    def __init__(
        self,
        entries: Mapping[str, tuple[str | None, Outcome]] | None = None,
        *,
        listing_error: str | None = None,
        confirms_deletes: bool = False,
        unlisted: Mapping[str, Outcome] | None = None,
    ) -> None:
        self.name = "site"
        self.confirms_deletes = confirms_deletes
        self.entries = dict(entries or {})
        self.unlisted = dict(unlisted or {})  # what a fetch of an entry not listed gives
        self.listing_error = listing_error
        self.fetched: list[str] = []
        self._lock = threading.Lock()

    def listing(self) -> list[Listed]:
        if self.listing_error is not None:
            raise SourceError(self.listing_error)
        return [Listed(key, version, key) for key, (version, _) in self.entries.items()]

    def fetch(self, item: Listed) -> Delivery | None:
        with self._lock:
            self.fetched.append(item.key)
        outcome = self.entries[item.key][1] if item.key in self.entries else self.unlisted[item.key]
        if isinstance(outcome, Exception):
            raise outcome
        if callable(outcome):
            return outcome()
        return outcome


class Emitted:
    """The `emit` callback: keeps each batch handed on."""

    def __init__(self) -> None:
        self.batches: list[list[Delivery]] = []

    def __call__(self, batch: list[Delivery]) -> None:
        self.batches.append(list(batch))

    @property
    def all(self) -> list[Delivery]:
        return [delivery for batch in self.batches for delivery in batch]

    def keys(self, event: str) -> set[str]:
        return {d.entry_id for d in self.all if d.event == event}


def page(key: str) -> Delivery:
    return Delivery("upsert", key, content=f"text of {key}", content_type="text/html")


def run(
    source: FakeSource,
    known: Mapping[str, tuple[str | None, str]] | None = None,
    *,
    threads: int = 4,
) -> tuple[PollReport, Emitted]:
    emitted = Emitted()
    report = poll(source, known or {}, emitted, began_at=BEGAN, threads=threads)
    return report, emitted


def test_new_and_changed_entries_are_fetched_and_unchanged_ones_are_not() -> None:
    source = FakeSource({"new": (V1, page("new")), "changed": (V2, page("changed"))})
    source.entries["same"] = (V1, page("same"))
    known = {"changed": (V1, BEFORE), "same": (V1, BEFORE)}
    report, emitted = run(source, known)
    assert sorted(source.fetched) == ["changed", "new"]
    assert emitted.keys("upsert") == {"changed", "new"}
    assert (report.listed, report.fetched, report.unchanged) == (3, 2, 1)


def test_documents_no_longer_listed_are_deleted_before_anything_is_fetched() -> None:
    source = FakeSource({"a": (V1, page("a"))})
    report, emitted = run(source, {"old1": (V1, BEFORE), "old2": (None, BEFORE)})
    assert emitted.batches[0] == [Delivery("delete", "old1"), Delivery("delete", "old2")]
    assert emitted.batches[1] == [page("a")]
    assert report.deleted == 2


def test_a_confirmed_delete_is_as_of_the_polls_start_so_a_newer_update_outlives_it() -> None:
    source = FakeSource({"a": (V1, page("a"))}, confirms_deletes=True, unlisted={"old": None})
    _, emitted = run(source, {"old": (V1, BEFORE)})
    (delete,) = [d for d in emitted.all if d.event == "delete"]
    assert delete.version() == sortable_time(datetime.fromisoformat(BEGAN))


def test_an_entry_missing_from_a_listing_is_deleted_once_the_source_confirms_it_is_gone() -> None:
    source = FakeSource({"a": (V1, page("a"))}, confirms_deletes=True, unlisted={"old": None})
    report, emitted = run(source, {"old": (V1, BEFORE)})
    assert sorted(source.fetched) == ["a", "old"]
    assert emitted.keys("delete") == {"old"} and report.deleted == 1


def test_an_entry_missing_from_a_listing_that_the_source_still_has_is_kept() -> None:
    # An offset-paged listing skips an entry when another deletion shifts the pages.
    source = FakeSource({"a": (V1, page("a"))}, confirms_deletes=True, unlisted={"b": page("b")})
    report, emitted = run(source, {"b": (V1, BEFORE)})
    assert emitted.keys("delete") == set() and emitted.keys("upsert") == {"a", "b"}
    assert report.deleted == 0


def test_an_entry_whose_confirming_fetch_fails_is_kept() -> None:
    failure = FetchError("GET https://cms/items/b: HTTP 503", status=503)
    source = FakeSource({"a": (V1, page("a"))}, confirms_deletes=True, unlisted={"b": failure})
    report, emitted = run(source, {"b": (V1, BEFORE)})
    assert emitted.keys("delete") == set() and report.failed == ["b"]


def test_a_listing_that_raises_an_unexpected_error_is_the_polls_error() -> None:
    class Broken(FakeSource):
        def listing(self) -> list[Listed]:
            raise RecursionError("maximum recursion depth exceeded")

    report, emitted = run(Broken({"a": (V1, page("a"))}), {"a": (V1, BEFORE)})
    assert report.error == "source 'site': internal error: RecursionError"
    assert emitted.all == []


def test_a_failed_fetch_is_reported_and_its_document_kept() -> None:
    source = FakeSource({"bad": (V2, FetchError("GET https://site/bad: HTTP 500", status=500))})
    source.entries["good"] = (V1, page("good"))
    report, emitted = run(source, {"bad": (V1, BEFORE)})
    assert report.failed == ["bad"]
    assert report.errors == ["bad: GET https://site/bad: HTTP 500"]
    assert emitted.all == [page("good")]
    assert report.deleted == 0


def test_an_entry_of_a_shape_ragd_cannot_read_is_a_failure() -> None:
    source = FakeSource({"odd": (V1, WebhookRejected(400, "modified_gmt is not a date"))})
    report, emitted = run(source)
    assert report.failed == ["odd"]
    assert report.errors == ["odd: modified_gmt is not a date"]
    assert emitted.all == []


def test_an_unexpected_error_in_one_fetch_fails_that_entry_only() -> None:
    source = FakeSource({"boom": (V1, RuntimeError("secret detail")), "ok": (V1, page("ok"))})
    report, emitted = run(source)
    assert report.failed == ["boom"]
    assert report.errors == ["boom: internal error: RuntimeError"]
    assert emitted.all == [page("ok")]


def test_an_entry_the_source_says_is_gone_is_deleted() -> None:
    source = FakeSource({"gone": (V2, None), "ok": (V1, page("ok"))})
    report, emitted = run(source, {"gone": (V1, BEFORE)})
    assert emitted.keys("delete") == {"gone"}
    assert emitted.keys("upsert") == {"ok"}
    assert (report.deleted, report.fetched, report.failed) == (1, 1, [])


def test_a_listing_that_fails_deletes_nothing_and_is_the_polls_error() -> None:
    source = FakeSource({"a": (V1, page("a"))}, listing_error="source 'site': HTTP 503")
    report, emitted = run(source, {"a": (V1, BEFORE), "b": (V1, BEFORE)})
    assert report.error == "source 'site': HTTP 503"
    assert emitted.batches == []
    assert source.fetched == []


def test_an_empty_listing_deletes_nothing_and_is_reported() -> None:
    report, emitted = run(FakeSource(), {"a": (V1, BEFORE)})
    assert emitted.batches == []
    assert report.error is not None
    assert "listed no entries but 1 documents are indexed; nothing was deleted" in report.error


def test_an_empty_listing_with_nothing_indexed_is_no_error() -> None:
    report, emitted = run(FakeSource())
    assert report.error is None
    assert emitted.batches == []


def test_results_are_handed_on_in_batches() -> None:
    total = 3 * EMIT_EVERY + 5
    source = FakeSource({f"p{i}": (V1, page(f"p{i}")) for i in range(total)})
    report, emitted = run(source, threads=2)
    assert len(emitted.batches) >= 3
    # A batch is handed on once it holds EMIT_EVERY; fetches finishing together may add a few.
    assert all(EMIT_EVERY <= len(batch) <= EMIT_EVERY + 4 for batch in emitted.batches[:-1])
    assert sorted(d.entry_id for d in emitted.all) == sorted(source.entries)
    assert report.fetched == total


def test_fetches_run_on_several_threads() -> None:
    # Each fetch waits until four are running at once: only four threads get past it.
    together = threading.Barrier(4, timeout=2)

    def fetched(key: str) -> Callable[[], Delivery]:
        def wait_for_the_others() -> Delivery:
            together.wait()
            return page(key)

        return wait_for_the_others

    source = FakeSource({f"p{i}": (V1, fetched(f"p{i}")) for i in range(8)})
    report, _ = run(source, threads=4)
    assert report.failed == []
    assert report.fetched == 8


def test_a_stop_ends_the_poll_early_and_hands_on_what_was_fetched() -> None:
    source = FakeSource({f"p{i}": (V1, page(f"p{i}")) for i in range(100)})
    emitted = Emitted()
    report = poll(
        source, {}, emitted, began_at=BEGAN, threads=2, stop=lambda: len(source.fetched) >= 5
    )
    assert report.interrupted
    # Only fetches already in flight (two per thread) finish after the stop.
    assert 5 <= len(source.fetched) <= 5 + 2 * 2
    assert report.fetched == len(source.fetched)
    assert sorted(d.entry_id for d in emitted.all) == sorted(source.fetched)


def test_a_poll_stopped_before_its_first_fetch_fetches_nothing() -> None:
    source = FakeSource({f"p{i}": (V1, page(f"p{i}")) for i in range(10)})

    report = poll(source, {}, Emitted(), began_at=BEGAN, threads=2, stop=lambda: True)

    assert report.interrupted and source.fetched == []


def test_a_poll_that_is_not_stopped_is_not_interrupted() -> None:
    report, _ = run(FakeSource({"a": (V1, page("a"))}))
    assert not report.interrupted


def test_every_failure_is_listed_but_only_the_first_errors_are_kept() -> None:
    failures = {f"p{i:02}": (V1, FetchError(f"HTTP 500 for p{i:02}")) for i in range(25)}
    report, _ = run(FakeSource(failures), threads=1)
    assert sorted(report.failed) == sorted(failures)
    assert len(report.errors) == MAX_ERRORS_KEPT


def test_the_report_as_json_counts_failures() -> None:
    source = FakeSource({"bad": (V1, FetchError("HTTP 500")), "ok": (V1, page("ok"))})
    report, _ = run(source)
    shown = report.to_json()
    assert shown["failed"] == 1
    assert shown["fetched"] == 1
    assert shown["listed"] == 2
    assert shown["source"] == "site"
