"""The web console in a real browser (headless chromium) against `mala-tui serve` on 127.0.0.1.

The app draws on a canvas, which has no text to read: what the app did is read
from the server's processes and the run's journal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.browser import chromium, wait_for
from tests.web.journals import RUN, write_finished
from tests.web.serving import serve

pytestmark = pytest.mark.integration


def test_without_the_token_the_browser_gets_a_refusal_and_no_app_starts(tmp_path: Path) -> None:
    write_finished(tmp_path / "data")
    with serve(tmp_path / "data") as served, chromium() as browser:
        page = browser.new_page()
        for address in (served.base + "/", f"{served.base}/?run={RUN}"):
            response = page.goto(address)
            assert response is not None and response.status == 403
            assert "needs its access token" in page.inner_text("body")
        page.wait_for_timeout(1000)
        assert served.children() == []


def test_a_finished_run_opens_read_only_from_the_printed_url(tmp_path: Path) -> None:
    write_finished(tmp_path / "data", sessions=("fix-tests", "docs"))
    with serve(tmp_path / "data") as served, chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 700})
        page.goto(served.url)
        assert page.url == served.base + "/"  # the token left the address bar
        (cookie,) = page.context.cookies()
        assert (cookie["name"], cookie["value"]) == (served.cookie, served.token)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert "Finished runs (read-only)" in page.inner_text("body")
        page.click(f"text={RUN}")
        page.wait_for_selector("body.-first-byte", timeout=60_000)  # the app drew
        assert page.title() == f"mala-tui \u2014 run {RUN} (ended)"
        assert len(served.children()) == 1
        page.click("#terminal")
        page.keyboard.press("q")  # the app's key to quit, through the canvas
        page.wait_for_selector("body.-closed", timeout=60_000)
        wait_for(lambda: served.children() == [], 30, "the tab's app to quit", page)
