"""`mala-tui resume` after a `kill -9` of mala-tui mid-run, with real Claude Code sessions."""

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
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_run_command import run_cli
from tests.integration.test_worktrees import git
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

MODEL = ("--set", "agent.model=claude-sonnet-4-5")


def journal_events(data: Path) -> list[ev.Event]:
    runs = list_runs(data)
    return read_events(runs[0].directory / "events.jsonl").events if runs else []


def both_under_way(data: Path) -> bool:
    """Each session has named its agent session and seen a tool result; neither has ended."""
    events = journal_events(data)
    named = {e.session for e in events if isinstance(e, ev.AgentSessionNamed)}
    results: dict[str, int] = {}
    for e in events:
        if isinstance(e, ev.MessageRecorded) and e.kind == "tool_result":
            results[e.session] = results.get(e.session, 0) + 1
    ended = {e.session for e in events if isinstance(e, ev.SessionEnded)}
    under_way = all(results.get(name, 0) >= 2 for name in ("a", "b"))
    return named >= {"a", "b"} and under_way and not ended


async def test_a_run_killed_mid_way_resumes_every_session_in_the_same_journal(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    tasks = tmp_path / "tasks.toml"
    entries = []
    for name in ("a", "b"):
        materialize_workspace(scenario, tmp_path / name)
        entries.append(f'[[task]]\nname = "{name}"\ntask = "{scenario.task}"\ncwd = "{name}"\n')
    tasks.write_text("\n".join(entries))
    data, home = tmp_path / "data", tmp_path / "claude-home"
    async with LoopbackServer(scenario, response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, home))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mala_tui",
            *MODEL,
            "run",
            "--tasks",
            str(tasks),
            "--headless",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            await eventually(
                lambda: both_under_way(data),
                timeout=120,
                what="both sessions under way",
                every=0.05,
            )
        finally:
            os.kill(process.pid, signal.SIGKILL)
            killed_at = time.time()
            await process.wait()
        before = journal_events(data)
        agents = [e.pid for e in before if isinstance(e, ev.ProcessStarted) and e.pid]
        await eventually(
            lambda: not any(alive(pid) for pid in agents),
            timeout=30,
            what="agents to end",
            every=0.05,
        )
        (run,) = list_runs(data)
        journal = run.directory / "events.jsonl"
        raw_before = journal.read_bytes()
        assert not any(isinstance(e, ev.RunEnded) for e in before)

        # `show` says the run can be resumed, and how.
        code, out, err = await run_cli("show", run.run_id, "--json", env=env)
        assert code == 0, err
        hint = json.loads(out)["resume"]
        assert hint["command"] == f"mala-tui resume {run.run_id} --data-dir {data}"
        assert hint["sessions"] == {"a": "session_id", "b": "session_id"}

        # b's agent transcript is lost: b starts again from its task; a goes on by its id.
        b_id = [e for e in before if isinstance(e, ev.AgentSessionNamed) and e.session == "b"]
        (b_transcript,) = home.rglob(f"{b_id[-1].session_id}.jsonl")
        b_transcript.unlink()
        a_id = [e for e in before if isinstance(e, ev.AgentSessionNamed) and e.session == "a"]

        code, out, err = await run_cli(*MODEL, "resume", "latest", "--headless", env=env)
        assert code == 0, out + err
        requests = server.request_log
    # a went on in its own agent session: its earlier steps stayed done. Only the latest
    # ones may be played again: Claude Code writes its transcript behind the conversation,
    # and what it had not written when it was killed is gone from the agent's memory.
    a_calls = [
        r for r in requests if r.session_id == a_id[-1].session_id and r.response_kind == "tool_use"
    ]
    before_kill = [r.step_id for r in a_calls if r.time < killed_at]
    after_resume = [r.step_id for r in a_calls if r.time >= killed_at]
    again = [step for step in after_resume if step in before_kill]
    assert again == before_kill[len(before_kill) - len(again) :], (before_kill, after_resume)
    assert len(again) < len(before_kill)
    assert len(set(before_kill + after_resume)) == len(load_scenario("quickstart").steps)
    assert f"run {run.run_id} resumed after " in out
    assert f"a: had not ended; resumes agent session {a_id[-1].session_id}" in out
    assert "b: had not ended; the transcript of agent session" in out
    assert "no checkpoint: from its task" in out
    assert "a: done - the agent finished its task" in out
    assert "b: done - the agent finished its task" in out

    # The same journal, nothing earlier lost: the old bytes are its beginning.
    raw_after = journal.read_bytes()
    assert raw_after.startswith(raw_before)
    contents = read_events(journal)
    events = contents.events
    assert events[: len(before)] == before
    resumed = [e for e in events if isinstance(e, ev.RunResumed)]
    assert len(resumed) == 1 and len([e for e in events if isinstance(e, ev.RunStarted)]) == 1
    assert resumed[0].resumed == {"a": "session_id", "b": "task"}
    assert resumed[0].gap_seconds > 0 and resumed[0].pid not in (None, process.pid)
    after = events[events.index(resumed[0]) :]
    assert {e.session: e.status.value for e in after if isinstance(e, ev.SessionEnded)} == {
        "a": "done",
        "b": "done",
    }
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
    a_again = [e for e in after if isinstance(e, ev.AgentSessionNamed) and e.session == "a"]
    assert a_again and a_again[0].session_id == a_id[-1].session_id
    for name in ("a", "b"):
        assert "VERSION = 2" in (tmp_path / name / "src" / "app.py").read_text()

    # Finished: nothing left to resume, and `resume` says so; `show` gives the gap.
    code, out, err = await run_cli("show", run.run_id, "--json", env=env)
    shown = json.loads(out)
    assert shown["resume"] is None
    assert shown["resumed"] == [
        {"at": resumed[0].at, "gap_seconds": resumed[0].gap_seconds, "sessions": resumed[0].resumed}
    ]
    code, out, err = await run_cli("resume", run.run_id, "--headless", env=env)
    assert code == 2 and "has nothing to resume" in err and "ended done" in err


def restarted_and_going_on(data: Path) -> bool:
    """The session restarted from a checkpoint and its fresh agent session is at work."""
    events = journal_events(data)
    restarts = [i for i, e in enumerate(events) if isinstance(e, ev.Restarted)]
    if not restarts or any(isinstance(e, ev.SessionEnded) for e in events):
        return False
    after = events[restarts[0] :]
    named = any(isinstance(e, ev.AgentSessionNamed) for e in after)
    results = [e for e in after if isinstance(e, ev.MessageRecorded) and e.kind == "tool_result"]
    return named and len(results) >= 1


async def test_a_session_whose_transcript_is_gone_resumes_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("hard-zone-long-task")
    workspace = tmp_path / "project"
    materialize_workspace(scenario, workspace)
    data, home = tmp_path / "data", tmp_path / "claude-home"
    window = ("--set", "context.context_limit=100000")
    async with LoopbackServer(scenario, response_delay_s=0.2) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, home))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mala_tui",
            *MODEL,
            *window,
            "run",
            scenario.task,
            "--cwd",
            str(workspace),
            "--headless",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            await eventually(
                lambda: restarted_and_going_on(data),
                timeout=240,
                what="a restart under way",
                every=0.05,
            )
        finally:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
        before = journal_events(data)
        agents = [e.pid for e in before if isinstance(e, ev.ProcessStarted) and e.pid]
        await eventually(
            lambda: not any(alive(pid) for pid in agents),
            timeout=30,
            what="agents to end",
            every=0.05,
        )
        (run,) = list_runs(data)
        raw_before = (run.directory / "events.jsonl").read_bytes()
        (checkpoint,) = [e for e in before if isinstance(e, ev.CheckpointSaved)]
        first_file = Path(checkpoint.path).read_text()
        current = [e for e in before if isinstance(e, ev.AgentSessionNamed)][-1].session_id
        for transcript in home.rglob(f"{current}.jsonl"):
            transcript.unlink()

        code, out, err = await run_cli(*MODEL, *window, "resume", run.run_id, "--headless", env=env)
        assert code == 0, out + err
    assert f"the transcript of agent session {current} is gone" in out
    assert "a fresh session from checkpoint #1" in out
    assert "task-1: done - the agent finished its task" in out
    contents = read_events(run.directory / "events.jsonl")
    assert (run.directory / "events.jsonl").read_bytes().startswith(raw_before)
    events = contents.events
    (resumed,) = [e for e in events if isinstance(e, ev.RunResumed)]
    assert resumed.resumed == {"task-1": "checkpoint"}
    after = events[events.index(resumed) :]
    # The fresh session is the next restart, from checkpoint #1; the counts go on from there.
    restarts = [e for e in events if isinstance(e, ev.Restarted)]
    assert [r.continuation for r in restarts] == list(range(1, len(restarts) + 1))
    resumed_restart = next(e for e in after if isinstance(e, ev.Restarted))
    assert (resumed_restart.continuation, resumed_restart.checkpoint_number) == (2, 1)
    assert resumed_restart.trigger == "resume"
    numbers = [e.number for e in events if isinstance(e, ev.CheckpointSaved)]
    assert numbers == list(range(1, len(numbers) + 1))
    paths = [e.path for e in events if isinstance(e, ev.CheckpointSaved)]
    assert len(set(paths)) == len(paths) and Path(paths[0]).read_text() == first_file
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
    reports = sorted((workspace / "reports").glob("region_*.md"))
    assert len(reports) == 30


async def test_a_worktree_run_resumes_in_its_worktrees_and_measures_their_changes(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    repo = tmp_path / "project"
    repo.mkdir()
    materialize_workspace(scenario, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    data = tmp_path / "data"
    async with LoopbackServer(scenario, response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        names = ("--tasks", str(tmp_path / "tasks.toml"))
        (tmp_path / "tasks.toml").write_text(
            "\n".join(
                f'[[task]]\nname = "{n}"\ntask = "{scenario.task}"\ncwd = "project"\n'
                for n in ("a", "b")
            )
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mala_tui",
            *MODEL,
            "run",
            *names,
            "--worktree",
            "--headless",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            await eventually(
                lambda: both_under_way(data),
                timeout=120,
                what="both sessions under way",
                every=0.05,
            )
        finally:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
        before = journal_events(data)
        agents = [e.pid for e in before if isinstance(e, ev.ProcessStarted) and e.pid]
        await eventually(
            lambda: not any(alive(pid) for pid in agents),
            timeout=30,
            what="agents to end",
            every=0.05,
        )
        code, out, err = await run_cli(*MODEL, "resume", "latest", "--headless", env=env)
        assert code == 0, out + err
    events = journal_events(data)
    made = {e.session: e.path for e in events if isinstance(e, ev.WorktreeCreated)}
    (resumed,) = [e for e in events if isinstance(e, ev.RunResumed)]
    after = events[events.index(resumed) :]
    started = {e.session: e.cwd for e in after if isinstance(e, ev.SessionStarted)}
    assert started == {name: made[name] for name in ("a", "b")}  # each in its own worktree
    changed = {e.session: e.files for e in after if isinstance(e, ev.WorktreeChanged)}
    assert set(changed) == {"a", "b"}
    for name in ("a", "b"):
        assert {f.path for f in changed[name]} == {"src/app.py", "REPORT.md"}
        assert "VERSION = 2" in (Path(made[name]) / "src" / "app.py").read_text()
    assert "VERSION = 1" in (repo / "src" / "app.py").read_text()  # the checkout untouched
