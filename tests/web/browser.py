"""A real browser for the web console's tests: Debian's chromium, headless, driven by Playwright.

Playwright cannot download a browser of its own here: it drives the system's
chromium through `executable_path` (.ci/run installs the package when missing;
without it the tests skip, or fail in CI: tests.support.tools).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.polling import wait_until
from tests.support.tools import require

FLAGS = (
    "--headless",
    "--no-sandbox",  # we run as root, where chromium's sandbox will not start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # nothing but the server under test is asked
    "--disable-component-update",
    "--disable-sync",
)


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Headless chromium; Playwright gives each launch a fresh profile (no cookie kept)."""
    executable = require("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(FLAGS))
        try:
            yield browser
        finally:
            browser.close()


def wait_for(check: Callable[[], object], seconds: float, what: str, page: Page) -> None:
    """Poll `check` while the page keeps running its scripts, until it holds or time runs out."""
    wait_until(
        check,
        what=what,
        timeout=seconds,
        seen=lambda: f"the page's title: {page.title()!r}",
        pause=lambda seconds: page.wait_for_timeout(seconds * 1000),
    )
