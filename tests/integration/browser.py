"""A real headless Chromium (Debian's chromium and chromium-driver) driven by Selenium, for
tests of pages `ragd serve` renders.

Selenium is handed both binaries, so its driver manager never looks anything up; the
flags keep Chromium off the network (no background requests, no component updates), as
tests must be. The browser's console is read back so a test can require it to be clean.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # tests run as root in CI
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,2000",
)


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium with its own empty profile; AssertionError naming the
    package to install when the browser or its driver is missing."""
    for binary, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        assert binary.exists(), f"{binary} is missing: install Debian's {package} (.ci/run does)"
    profile = tempfile.mkdtemp(prefix="ragd-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: webdriver.Chrome) -> list[str]:
    """What the page logged to the console at level SEVERE (errors), since the last read."""
    entries = driver.get_log("browser")  # type: ignore[no-untyped-call]  # untyped in selenium
    return [entry["message"] for entry in entries if entry["level"] == "SEVERE"]
