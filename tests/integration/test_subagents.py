"""Background subagents with the real CLI on the loopback: the session is done when its work is.

The scripted main agent hands eight logs to two background subagents and ends its turn
("Waiting for 2 subagent(s) to report."); the CLI runs them, then hands each report to
the agent in turns of its own. mala-tui must keep the session (and its agent process)
until the last report is in and answered, never kill the subagents at the first turn's end.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundKind
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.run_view import RunState
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_run_command import run_cli, run_scenario_headless
from tests.support.polling import eventually

pytestmark = pytest.mark.integration


async def test_a_session_with_background_subagents_runs_until_every_report_is_used(
    tmp_path: Path,
) -> None:
    log = tmp_path / "requests.jsonl"
    code, out, err, _ = await run_scenario_headless(tmp_path, "delegation", log=log)
    assert code == 0, out + err
    assert "task-1: done - the agent finished its task" in out
    assert "waiting for 2 subagents" in out  # the headless line for the wait
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    waits = [e for e in events if isinstance(e, ev.BackgroundWaiting)]
    assert waits, "the first turn ended while both subagents worked"
    assert {task.kind for task in waits[0].tasks} == {BackgroundKind.SUBAGENT}
    listed = [e for e in events if isinstance(e, ev.BackgroundListed)]
    assert listed and listed[-1].tasks == (), "both reported"
    assert not [e for e in events if isinstance(e, ev.BackgroundStopped)], "none was killed"
    (ended,) = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert ended.status is EndStatus.DONE
    assert ended.at > waits[0].at
    # The final answer is the last thing the agent said, and it used both reports.
    said = [
        e
        for e in events
        if isinstance(e, ev.MessageRecorded) and e.role == "assistant" and e.kind == "text"
    ]
    assert said and "REPORT A:" in said[-1].excerpt and "REPORT B:" in said[-1].excerpt
    # Every subagent call is journaled once, with the usage the model billed for it.
    billed: dict[str, int] = {}
    calls: dict[str, int] = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("agent_id") and record.get("status") == 200:
            agent = record["agent_id"]
            billed[agent] = billed.get(agent, 0) + record["prompt_tokens"] + record["output_tokens"]
            calls[agent] = calls.get(agent, 0) + 1
    journaled: dict[str, int] = {}
    journaled_calls: dict[str, int] = {}
    for call in (e for e in events if isinstance(e, ev.SubagentCall)):
        usage = call.call
        journaled[call.agent_id] = journaled.get(call.agent_id, 0) + usage.context_tokens
        journaled_calls[call.agent_id] = journaled_calls.get(call.agent_id, 0) + 1
    assert len(billed) == 2 and journaled == billed and journaled_calls == calls
    started = [e for e in events if isinstance(e, ev.SubagentStarted)]
    assert sorted(e.description for e in started) == ["Triage logs 1-4", "Triage logs 5-8"]
    assert all(e.background and e.depth == 1 and not e.nested for e in started)
    ends = [e for e in events if isinstance(e, ev.SubagentEnded)]
    assert sorted(e.how for e in ends) == [SubagentEnd.COMPLETED, SubagentEnd.COMPLETED]
    # The run's figures count every call: the main thread's and each subagent's.
    state = RunState().apply_all(events)
    session = state.sessions["task-1"]
    assert session.spend.calls == session.main_spend.calls + sum(calls.values())
    assert f"for {session.spend.calls} API calls" in out
    # ...and the estimate agrees with Claude Code's own figure, subagents included.
    cli, ours = session.cli_cost_usd, session.spend.cost_usd
    assert cli is not None and ours is not None and abs(ours - cli) <= 0.01 * cli
    assert "Claude Code says" in out
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    assert len(pids) == 1, "one agent process, never closed and resumed meanwhile"
    assert not any(alive(pid) for pid in pids)


async def test_a_mask_waits_while_background_subagents_run_and_none_is_killed(
    tmp_path: Path,
) -> None:
    """A mask closes the agent process, and the CLI's background work with it: with a soft
    threshold the main thread passes at once, the mask waits for the subagents."""
    low = (
        *("--set", "context.soft_threshold=0.05"),
        *("--set", "context.mask_target_threshold=0.04"),
        *("--set", "context.mask_min_batch_tokens=10"),
    )
    code, out, err, _ = await run_scenario_headless(tmp_path, "delegation", *low)
    assert code == 0, out + err
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    waited = [
        e
        for e in events
        if isinstance(e, ev.MaskSkipped) and "running in the background would end" in e.reason
    ]
    assert waited, "the soft zone was reached while the subagents ran"
    assert not [e for e in events if isinstance(e, ev.BackgroundStopped)]
    ends = [e.how for e in events if isinstance(e, ev.SubagentEnded)]
    assert ends == [SubagentEnd.COMPLETED, SubagentEnd.COMPLETED]
    (ended,) = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert ended.status is EndStatus.DONE


async def test_a_run_killed_while_subagents_work_resumes_and_the_agent_hears_they_were_lost(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("delegation")
    workspace, data = tmp_path / "project", tmp_path / "data"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    model = ("--set", "agent.model=claude-sonnet-4-5")

    def both_out() -> bool:
        runs = list_runs(data)
        if not runs:
            return False
        events = read_events(runs[0].directory / "events.jsonl").events
        return any(isinstance(e, ev.BackgroundListed) and len(e.tasks) == 2 for e in events)

    async with LoopbackServer(scenario, response_delay_s=0.4, keep_bodies=True) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "mala_tui", *model, "run", scenario.task),
            *("--cwd", str(workspace), "--headless"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            await eventually(both_out, timeout=120, what="both subagents at work", every=0.05)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
        killed_at = time.time()
        (run,) = list_runs(data)
        before = read_events(run.directory / "events.jsonl").events
        agents = [e.pid for e in before if isinstance(e, ev.ProcessStarted) and e.pid]
        await eventually(
            lambda: not any(alive(pid) for pid in agents), timeout=30, what="agents to end"
        )
        code, out, err = await run_cli(*model, "resume", "latest", "--headless", env=env)
        requests = server.request_log
    assert code == 0, out + err
    after = read_events(run.directory / "events.jsonl").events[len(before) :]
    lost = [e for e in after if isinstance(e, ev.BackgroundStopped)]
    assert lost and len(lost[0].tasks) == 2 and "lost when the run stopped" in lost[0].reason
    # The agent was told, in the prompt that carried its session on, naming each one.
    resumed = [r for r in requests if r.time >= killed_at and not r.agent_id and r.body]
    assert resumed, "the resumed session made a request"
    prompt = json.dumps(resumed[0].body)
    assert "Background work you had started was lost" in prompt
    assert "Triage logs 1-4" in prompt and "Triage logs 5-8" in prompt
    (ended,) = [e for e in after if isinstance(e, ev.SessionEnded)]
    assert ended.status is EndStatus.DONE
