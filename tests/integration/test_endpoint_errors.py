"""Errors from the model endpoint, on the real CLI: an authentication error fails the
session at once, a request the API refuses is not sent again, a dead endpoint is given
up on within its bound; each time the session's end says what Claude Code said."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import (
    FaultSpec,
    LoopbackServer,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.loopback.faults import FaultKind
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration


async def run_against(
    tmp_path: Path,
    fault: FaultKind | None,
    *options: str,
    closed: bool = False,
    key: str | None = None,
) -> tuple[int, str, int]:
    """`mala-tui run --headless` of the quickstart task against the loopback answering every
    request with `fault` (or a closed port); the exit status, stdout, and requests served."""
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        if fault is not None:
            server.add_fault(FaultSpec(kind=fault, times=1_000))
        url = "http://127.0.0.1:9" if closed else server.base_url  # port 9: nothing listens
        env = dict(os.environ, **offline_cli_env(url, tmp_path / "claude-home"))
        env.pop("CLAUDE_CODE_MAX_RETRIES", None)
        if key is not None:
            env["ANTHROPIC_API_KEY"] = key
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", *options, "run", scenario.task),
            *("--cwd", str(workspace), "--headless"),
            env=env,
        )
        served = len(server.request_log)
    assert "Traceback" not in err, err
    return code, out, served


def journal(tmp_path: Path) -> list[ev.Event]:
    (run,) = list_runs(tmp_path / "data")
    return read_events(run.directory / "events.jsonl").events


def ended(tmp_path: Path) -> ev.SessionEnded:
    (end,) = [e for e in journal(tmp_path) if isinstance(e, ev.SessionEnded)]
    return end


def sent_once(tmp_path: Path) -> bool:
    """The task went to one agent process, and mala-tui retried nothing (Claude Code may
    still send a request more than once itself before it says it failed)."""
    events = journal(tmp_path)
    started = [e for e in events if isinstance(e, ev.ProcessStarted)]
    retried = [e for e in events if isinstance(e, ev.ApiErrorSeen | ev.IdleTimeoutSeen)]
    return len(started) == 1 and not retried


async def test_a_401_fails_the_session_at_once(tmp_path: Path) -> None:
    code, out, _ = await run_against(tmp_path, "unauthorized")
    assert code == 1
    said = (
        "authentication failed: the model endpoint refused the credentials "
        "(HTTP 401, authentication_failed)"
    )
    assert f"task-1: failed - {said}" in out
    assert ended(tmp_path).reason == said
    assert sent_once(tmp_path)
    retries = [
        e for e in journal(tmp_path) if isinstance(e, ev.ErrorRecorded) and e.where is ev.Where.API
    ]
    assert len(retries) == 1  # failed at Claude Code's first retry, not after its tenth


async def test_not_logged_in_says_what_claude_code_said(tmp_path: Path) -> None:
    code, out, served = await run_against(tmp_path, None, key="")
    assert code == 1
    assert "task-1: failed - authentication failed: Not logged in · Please run /login" in out
    assert served == 0 and sent_once(tmp_path)


async def test_a_request_the_api_refuses_is_sent_once_and_its_message_shown(
    tmp_path: Path,
) -> None:
    code, out, served = await run_against(tmp_path, "bad_request")
    assert code == 1
    assert (
        "task-1: failed - the API refused the request (HTTP 400): "
        "API Error: 400 messages: text content blocks must be non-empty"
    ) in out
    assert served > 0 and sent_once(tmp_path)


async def test_a_closed_port_is_given_up_on_within_its_bound(tmp_path: Path) -> None:
    code, out, _ = await run_against(
        tmp_path, None, "--set", "idle.api_failure_seconds=3", closed=True
    )
    assert code == 1
    reason = ended(tmp_path).reason
    assert reason.startswith("the model endpoint failed every call for "), reason
    assert "(bound: 3 s): API Error: Connection refused" in reason
    assert f"task-1: failed - {reason}" in out
