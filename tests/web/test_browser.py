"""The web console in a real browser (headless chromium) against `mala-tui serve` on 127.0.0.1.

The app draws on a canvas, which has no text to read: what the app did is read
from the server's processes and the run's journal.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.notices import RESTART_APPROVAL
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.questions import permission_id
from mala_tui.loopback import MODEL, load_scenario
from mala_tui.runtime.consoles.sockets import live_host
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_consoles import environment, mala, run_args
from tests.integration.test_permission_terminal import serve as loopback_serve
from tests.web.browser import chromium, wait_for
from tests.web.journals import RUN, write_finished
from tests.web.serving import serve

# Checked before any server starts, not once the browser is wanted.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("chromium_installed")]


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


def test_a_permission_is_answered_from_the_browser_and_the_agent_goes_on(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A run in the background waits for permission to use Bash. The printed URL goes
    straight to the one live run, attached; the app's keys allow the tool; the journal says
    the operator allowed it, and the agent went on to the end."""
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    loopback, env_lines = loopback_serve(workspace, tmp_path / "home")
    picture = tmp_path / "web-console.png"
    try:
        started = mala(*run_args(workspace), "--detach", env=environment(env_lines, data))
        assert started.returncode == 0, started.stderr
        (run,) = list_runs(data)

        def events() -> list[ev.Event]:
            return read_events(run.directory / "events.jsonl").events

        def answered() -> bool:
            return any(isinstance(event, ev.PermissionDecided) for event in events())

        with serve(data) as served, chromium() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            first = context.new_page()
            first.goto(served.url)
            assert first.url == f"{served.base}/?run={run.run_id}"  # the one live run, at once
            first.wait_for_selector("body.-first-byte", timeout=60_000)
            wait_for(lambda: "asks to use Bash" in first.title(), 120, "the request", first)
            assert first.title() == (
                f"mala-tui \u2014 task-1 asks to use Bash \u00b7 run {run.run_id}"
            )
            (app,) = served.children()  # the tab's app, attached
            # Closing the tab detaches its app; the run goes on, its question still waiting.
            first.close()
            page = context.new_page()
            wait_for(lambda: not alive(app), 60, "the closed tab's app to end", page)
            assert live_host(run.directory) is not None and not answered()
            page.goto(served.base)
            page.wait_for_selector("body.-first-byte", timeout=60_000)
            assert len(served.children()) == 1
            page.click("#terminal")
            for _ in range(3):  # the canvas has no text: the journal says whether it took
                page.keyboard.press("P")  # the oldest permission request...
                page.wait_for_timeout(1500)
                page.screenshot(path=str(picture))
                page.keyboard.press("o")  # ...allowed once
                with contextlib.suppress(AssertionError):
                    wait_for(answered, 15, "the answer in the journal", page)
                    break
            wait_for(
                lambda: any(isinstance(event, ev.RunEnded) for event in events()),
                120,
                "the agent to finish and the run to end",
                page,
            )
            wait_for(lambda: page.title().endswith("(ended)"), 30, "the title to say so", page)
            # Another browser without the token: refused, and no app started for it.
            before = set(served.children())
            stranger = browser.new_context().new_page()
            refused = stranger.goto(f"{served.base}/?run={run.run_id}")
            assert refused is not None and refused.status == 403
            stranger.wait_for_timeout(1000)
            assert set(served.children()) <= before
        saved = request.config.getoption("--web-screenshot")
        if saved:
            shutil.copyfile(picture, saved)
    finally:
        mala("stop", "latest", "--data-dir", str(data), env=environment(env_lines, data))
        loopback.terminate()
        loopback.communicate(timeout=30)
    (decided,) = [event for event in events() if isinstance(event, ev.PermissionDecided)]
    assert (decided.answer, decided.decided_by) == (
        PermissionAnswer.ALLOW_ONCE,
        AnsweredBy.OPERATOR,
    )
    (ended,) = [event for event in events() if isinstance(event, ev.SessionEnded)]
    assert ended.status is EndStatus.DONE
    summary = workspace / "logs" / "summary.txt"
    assert summary.read_text().strip().endswith("logs/service.log")


def test_a_restart_approval_is_answered_from_the_browser(tmp_path: Path) -> None:
    """A run in the background that asks before it restarts reaches its hard threshold
    with no console attached; its question waits. The printed URL opens the live run, the
    title says what waits, the app's key approves, and the session restarts from its
    checkpoint and goes on, approved by the operator (read from the journal)."""
    scenario = load_scenario("hard-zone-long-task")
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    loopback, env_lines = loopback_serve(workspace, tmp_path / "home", scenario.name)
    env = environment(env_lines, data)
    args = ("--set", f"agent.model={MODEL}", "--set", "context.require_approval=true")
    try:
        started = mala(*args, "run", scenario.task, "--cwd", str(workspace), "--detach", env=env)
        assert started.returncode == 0, started.stderr
        (run,) = list_runs(data)

        def events() -> list[ev.Event]:
            return read_events(run.directory / "events.jsonl").events

        def decided() -> list[ev.ApprovalDecided]:
            return [e for e in events() if isinstance(e, ev.ApprovalDecided)]

        with serve(data) as served, chromium() as browser:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte", timeout=60_000)
            wait_for(lambda: RESTART_APPROVAL in page.title(), 240, "the approval", page)
            assert page.title() == (
                f"mala-tui \u2014 task-1 {RESTART_APPROVAL} \u00b7 run {run.run_id}"
            )
            page.click("#terminal")
            for _ in range(3):  # the canvas has no text: the journal says whether it took
                page.keyboard.press("a")  # the question opens, or is approved if open
                with contextlib.suppress(AssertionError):
                    wait_for(decided, 10, "the answer in the journal", page)
                    break
            wait_for(
                lambda: any(isinstance(e, ev.Restarted) for e in events()),
                120,
                "the restart",
                page,
            )
            wait_for(lambda: RESTART_APPROVAL not in page.title(), 30, "the title", page)
    finally:
        mala("stop", "latest", "--data-dir", str(data), env=env)
        loopback.terminate()
        loopback.communicate(timeout=30)
    (answer,) = decided()
    assert (answer.decision, answer.decided_by) == (Decision.APPROVE, AnsweredBy.OPERATOR)
    asked = next(e for e in events() if isinstance(e, ev.ApprovalRequested))
    restart = next(e for e in events() if isinstance(e, ev.Restarted))
    assert (restart.approved_by, restart.checkpoint_number) == (
        AnsweredBy.OPERATOR,
        asked.checkpoint_number,
    )


def command_line(pid: int) -> str:
    """A process's arguments, each ended by a NUL; "" once it has gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


RECORD_NOTIFICATIONS = """
window.__raised = [];
if (window.Notification) {
  const Real = window.Notification;
  window.Notification = new Proxy(Real, {
    construct(target, args) {
      const made = Reflect.construct(target, args);
      window.__raised.push(made);
      return made;
    },
    get(target, name) {
      const value = target[name];  // Notification.permission, requestPermission
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
"""
"""Keeps each Notification the page raises where the test can read it and click it:
a headless browser shows none."""


def test_a_waiting_permission_raises_a_browser_notification_that_opens_it(
    tmp_path: Path,
) -> None:
    """The page asks the browser for notifications (granted here) and raises one when a
    question starts to wait; clicking it opens the question's own address, the app at
    its dialog, where one key allows the tool."""
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    loopback, env_lines = loopback_serve(workspace, tmp_path / "home")
    try:
        started = mala(*run_args(workspace), "--detach", env=environment(env_lines, data))
        assert started.returncode == 0, started.stderr
        (run,) = list_runs(data)

        def events() -> list[ev.Event]:
            return read_events(run.directory / "events.jsonl").events

        def answered() -> bool:
            return any(isinstance(event, ev.PermissionDecided) for event in events())

        with serve(data) as served, chromium() as browser:
            context = browser.new_context(
                viewport={"width": 1280, "height": 800}, permissions=["notifications"]
            )
            context.add_init_script(RECORD_NOTIFICATIONS)
            page = context.new_page()
            page.goto(served.url)
            assert page.url == f"{served.base}/?run={run.run_id}"
            page.wait_for_selector("body.-first-byte", timeout=60_000)
            assert page.evaluate("Notification.permission") == "granted"
            wait_for(
                lambda: page.evaluate("window.__raised.length") > 0, 120, "a notification", page
            )
            raised = page.evaluate("window.__raised.map((n) => [n.title, n.body, n.tag])")
            asked = next(e for e in events() if isinstance(e, ev.PermissionRequested))
            question = permission_id(asked.session, asked.request_id)
            assert raised == [["mala-tui", "task-1 asks to use Bash", question]]
            with page.expect_navigation():
                page.evaluate("window.__raised[0].dispatchEvent(new Event('click'))")
            opened = urlsplit(page.url)
            assert parse_qs(opened.query) == {"run": [run.run_id], "question": [question]}
            page.wait_for_selector("body.-first-byte", timeout=60_000)

            def at_the_question() -> bool:  # the new tab's app, started at the question
                return any(
                    f"--question\0{question}\0" in command_line(pid) for pid in served.children()
                )

            wait_for(at_the_question, 60, "the app opened at the question", page)
            page.click("#terminal")
            for _ in range(3):  # the canvas has no text: the journal says whether it took
                page.keyboard.press("o")  # the dialog is open: allowed once
                with contextlib.suppress(AssertionError):
                    wait_for(answered, 15, "the answer in the journal", page)
                    break
            # The page opened at the question (a new document) tells of it no more.
            assert page.evaluate("window.__raised.length") == 0
    finally:
        mala("stop", "latest", "--data-dir", str(data), env=environment(env_lines, data))
        loopback.terminate()
        loopback.communicate(timeout=30)
    (decided,) = [event for event in events() if isinstance(event, ev.PermissionDecided)]
    assert (decided.answer, decided.decided_by) == (
        PermissionAnswer.ALLOW_ONCE,
        AnsweredBy.OPERATOR,
    )
