"""/metrics of a real `ragd serve` says when the index can no longer be trusted: an edit
the writer has not applied is a stale document there, as in `ragd status`, until it is."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.daemon import Served, small_root, wait_until

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(served: Served) -> Samples:
    text = served.get_text("/metrics")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _scrape_when(served: Served, done: Callable[[Samples], bool]) -> Samples:
    """Scrape until `done` holds of what /metrics says (or fail after 30 s)."""

    def scraped() -> Samples | None:
        samples = _scrape(served)
        return samples if done(samples) else None

    found: Samples = wait_until(scraped, 30)
    return found


def _stale(samples: Samples, reason: str) -> float:
    return samples[("ragd_documents_stale", (("reason", reason), ("source", "docs")))]


def test_an_edit_the_held_writer_has_not_applied_is_stale_until_it_is(tmp_path: Path) -> None:
    root = small_root(tmp_path / "docs", 10)
    page = sorted(root.glob("*.md"))[0]
    served = Served(tmp_path, root)
    served.pause_file = tmp_path / "writer.held"
    started = time.time()
    served.start().wait_ready()
    try:
        served.wait_scanned()
        scanned = time.time()
        fresh = _scrape(served)
        scraped = time.time()
        served.hold_writer()
        page.write_text(page.read_text() + "\n\nA paragraph the index has not seen yet.\n")
        # The watcher queues the edit after its debounce; the held writer leaves it queued.
        held = _scrape_when(served, lambda samples: _stale(samples, "source_changed") >= 1)
        status = served.status()
        served.release_writer()
        served.wait_idle()
        applied = _scrape_when(served, lambda samples: _stale(samples, "source_changed") == 0)
    finally:
        served.stop()

    assert {_stale(fresh, reason) for reason in ("source_changed", "pending", "max_age")} == {0}
    assert _stale(held, "source_changed") == 1
    assert _stale(held, "pending") == 1  # its watch event waits in the queue
    source = next(s for s in status["sources"] if s["name"] == "docs")
    assert source["stale_by_reason"] == {"pending": 1, "source_changed": 1}  # ragd status
    assert [d["path"] for d in source["stale_documents"]] == [page.name]
    assert _stale(applied, "pending") == 0
    for samples in (fresh, held, applied):
        assert samples[("ragd_writer_alive", ())] == 1  # held, it still goes round its loop
        assert samples[("ragd_stores_agree", ())] == 1
        assert samples[("ragd_watcher_degraded", (("source", "docs"),))] == 0
        assert samples[("ragd_documents_failed", (("source", "docs"),))] == 0
        assert samples[("ragd_documents", (("source", "docs"),))] == 10
    # The start-up scan is the last complete one, and it confirmed every document.
    last_scan = fresh[("ragd_last_scan_timestamp_seconds", (("source", "docs"),))]
    unconfirmed = fresh[("ragd_oldest_unconfirmed_age_seconds", (("source", "docs"),))]
    assert started - 1 <= last_scan <= scanned
    assert 0 <= unconfirmed <= scraped - started + 1
