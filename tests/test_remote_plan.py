"""Tests for ragd.sources.remote.plan_poll: what a poll fetches, deletes and leaves alone."""

from __future__ import annotations

from ragd.sources.remote import Known, Listed, plan_poll

BEGAN = "2025-06-01T12:00:00.000000Z"
BEFORE = "2025-06-01T11:00:00.000000Z"
AFTER = "2025-06-01T12:00:05.000000Z"
V1 = "2025-05-01T00:00:00.000000Z"
V2 = "2025-05-02T00:00:00.000000Z"


def listed(key: str, version: str | None = V1) -> Listed:
    return Listed(key, version, f"https://site.example/{key}")


def known(version: str | None = V1, first_seen_at: str = BEFORE) -> Known:
    return Known(version, first_seen_at)


def test_a_new_entry_is_fetched() -> None:
    plan = plan_poll([listed("a")], {}, began_at=BEGAN)
    assert plan.fetch == [listed("a")]
    assert plan.unchanged == []
    assert plan.delete == []


def test_an_entry_at_the_applied_version_is_unchanged() -> None:
    plan = plan_poll([listed("a", V1)], {"a": known(V1)}, began_at=BEGAN)
    assert plan.fetch == []
    assert plan.unchanged == ["a"]


def test_an_entry_older_than_the_applied_version_is_unchanged() -> None:
    plan = plan_poll([listed("a", V1)], {"a": known(V2)}, began_at=BEGAN)
    assert plan.fetch == []
    assert plan.unchanged == ["a"]


def test_an_entry_newer_than_the_applied_version_is_fetched() -> None:
    plan = plan_poll([listed("a", V2)], {"a": known(V1)}, began_at=BEGAN)
    assert plan.fetch == [listed("a", V2)]
    assert plan.unchanged == []


def test_an_entry_listed_without_a_version_is_always_fetched() -> None:
    plan = plan_poll([listed("a", None)], {"a": known(V1)}, began_at=BEGAN)
    assert plan.fetch == [listed("a", None)]


def test_an_entry_applied_without_a_version_is_fetched() -> None:
    plan = plan_poll([listed("a", V1)], {"a": known(None)}, began_at=BEGAN)
    assert plan.fetch == [listed("a", V1)]


def test_fetches_keep_the_listing_order() -> None:
    keys = ["c", "a", "b"]
    plan = plan_poll([listed(k) for k in keys], {}, began_at=BEGAN)
    assert [item.key for item in plan.fetch] == keys


def test_an_entry_listed_twice_is_fetched_once() -> None:
    plan = plan_poll([listed("a", V1), listed("a", V2)], {}, began_at=BEGAN)
    assert plan.fetch == [listed("a", V1)]


def test_a_document_no_longer_listed_is_deleted() -> None:
    plan = plan_poll([listed("a")], {"a": known(), "gone": known()}, began_at=BEGAN)
    assert plan.delete == ["gone"]
    assert plan.unchanged == ["a"]


def test_deletes_are_sorted() -> None:
    old = {key: known() for key in ("z", "m", "b")}
    plan = plan_poll([listed("a")], old, began_at=BEGAN)
    assert plan.delete == ["b", "m", "z"]


def test_a_document_first_seen_after_the_poll_began_is_kept() -> None:
    # It arrived (by webhook, say) while the listing was in flight: the listing cannot know it.
    plan = plan_poll([listed("a")], {"new": known(first_seen_at=AFTER)}, began_at=BEGAN)
    assert plan.delete == []


def test_a_document_first_seen_as_the_poll_began_is_kept() -> None:
    plan = plan_poll([listed("a")], {"new": known(first_seen_at=BEGAN)}, began_at=BEGAN)
    assert plan.delete == []


def test_an_empty_listing_deletes_nothing() -> None:
    plan = plan_poll([], {"a": known(), "b": known()}, began_at=BEGAN)
    assert plan.delete == []
    assert plan.fetch == []
    assert plan.unchanged == []
