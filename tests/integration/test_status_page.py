"""The status page of a real `ragd serve`, in a real headless Chromium."""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

from tests.integration.browser import chromium, console_errors
from tests.integration.daemon import TUTORIAL, Served, small_root, wait_until

HOSTILE_TITLE = "<script>alert(1)</script>"
HOSTILE_NAME = "<img src=x onerror=alert(2)>.md"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("page")
    root = workdir / "docs"
    root.mkdir()
    for name in ("first-steps.md", "query-params.md"):
        shutil.copyfile(TUTORIAL / name, root / name)
    (root / "hostile.md").write_text(f"# {HOSTILE_TITLE}\n\nA page whose title is markup.\n")
    (root / HOSTILE_NAME).write_text("# Named\n\nA page whose file name is markup.\n")
    blog = workdir / "blog"
    blog.mkdir()
    (blog / "post.md").write_text("# Post\n\nA second folder source.\n")
    second = f'\n[[sources]]\nname = "blog"\ntype = "folder"\npath = "{blog}"\n'
    daemon = Served(workdir, root, extra_sources=second).start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def test_the_page_shows_every_configured_source_and_logs_no_console_errors(
    served: Served,
) -> None:
    with chromium() as browser:
        browser.get(f"http://127.0.0.1:{served.port}/")
        names = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "td b")]

        assert browser.title == "ragd: OK"
        assert {"docs", "blog"} <= set(names)
        assert console_errors(browser) == []


def test_markup_in_a_title_and_a_file_name_shows_as_text_and_runs_nothing(
    served: Served,
) -> None:
    with chromium() as browser:
        browser.get(f"http://127.0.0.1:{served.port}/")
        text = browser.find_element(By.TAG_NAME, "body").text

        assert HOSTILE_TITLE in text
        assert HOSTILE_NAME in text
        assert browser.find_elements(By.TAG_NAME, "script") == []
        assert browser.find_elements(By.CSS_SELECTOR, "img") == []
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018  # reading it is what raises


def test_the_page_forbids_every_script_by_its_content_security_policy(served: Served) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{served.port}/", timeout=30) as reply:
        policy = reply.headers["Content-Security-Policy"]
        kind = reply.headers.get_content_type()

    assert kind == "text/html"
    assert "default-src 'none'" in policy and "script-src" not in policy


def test_the_page_draws_a_freshness_chart_per_source(served: Served) -> None:
    with chromium() as browser:
        browser.get(f"http://127.0.0.1:{served.port}/")
        charts = browser.find_elements(By.CSS_SELECTOR, "figure svg")
        labels = [c.get_attribute("aria-label") for c in charts]

    assert labels == ["freshness of docs", "freshness of blog"]


def test_a_screenshot_of_the_page_can_be_taken(served: Served, tmp_path: Path) -> None:
    with chromium() as browser:
        browser.get(f"http://127.0.0.1:{served.port}/")
        shot = tmp_path / "status-page.png"

        assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_edit_shows_stale_while_the_writer_is_held_and_fresh_once_applied(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path / "docs", 5)
    page = sorted(root.glob("*.md"))[0]
    daemon = Served(tmp_path, root)
    daemon.pause_file = tmp_path / "writer.held"
    daemon.start().wait_ready()
    try:
        daemon.wait_scanned()
        with chromium() as browser:
            url = f"http://127.0.0.1:{daemon.port}/"

            def stale_rows() -> list[str]:
                browser.get(url)
                heading = browser.find_element(By.XPATH, "//h2[.='Stale documents']")
                listing = heading.find_element(By.XPATH, "following-sibling::*[1]")
                return [row.text for row in listing.find_elements(By.TAG_NAME, "tr")[1:]]

            fresh_rows = stale_rows()
            fresh_title = browser.title
            daemon.hold_writer()
            page.write_text(page.read_text() + "\n\nA paragraph the index has not seen yet.\n")
            held = wait_until(stale_rows, 30, interval=0.5)
            held_title = browser.title
            daemon.release_writer()
            daemon.wait_idle()
            after = wait_until(lambda: stale_rows() == [], 30, interval=0.5)
            after_title = browser.title
            errors = console_errors(browser)
    finally:
        daemon.stop()

    assert (fresh_title, fresh_rows) == ("ragd: OK", [])
    assert len(held) == 1 and f"docs:{page.name}" in held[0] and "source_changed" in held[0]
    assert held_title == "ragd: ATTENTION"
    assert after and after_title == "ragd: OK"
    assert errors == []
