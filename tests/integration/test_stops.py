"""Stops that stay resumable: Ctrl-C (once or twice), SIGTERM during start-up, real CLIs.

Each test runs `mala-tui` as its own process against the loopback model, signals it by
pid, then reads back what it left: the journal, the agent processes, git's worktrees,
and what `resume` makes of it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
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
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_demo import FOREGROUND
from tests.integration.test_resume import MODEL, both_under_way, journal_events
from tests.integration.test_resume_terminal import in_terminal
from tests.integration.test_run_command import run_cli
from tests.support.polling import eventually
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration


def two_tasks(root: Path) -> Path:
    """A tasks file of two quickstart sessions, a and b, each in its own folder."""
    scenario = load_scenario("quickstart")
    entries = []
    for name in ("a", "b"):
        materialize_workspace(scenario, root / name)
        entries.append(f'[[task]]\nname = "{name}"\ntask = "{scenario.task}"\ncwd = "{name}"\n')
    tasks = root / "tasks.toml"
    tasks.write_text("\n".join(entries))
    return tasks


async def start_foreground(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    """`mala-tui ARGS` with Ctrl-C live, as in a terminal's foreground job."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FOREGROUND,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


def agent_pids(events: list[ev.Event]) -> list[int]:
    return [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]


async def test_ctrl_c_stops_a_headless_run_resumably_and_resume_finishes_it(
    tmp_path: Path,
) -> None:
    tasks = two_tasks(tmp_path)
    data = tmp_path / "data"
    async with LoopbackServer(load_scenario("quickstart"), response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await start_foreground(
            *MODEL, "run", "--tasks", str(tasks), "--headless", env=env
        )
        try:
            await eventually(
                lambda: both_under_way(data),
                timeout=120,
                what="both sessions under way",
                every=0.05,
            )
            process.send_signal(signal.SIGINT)
            out, err = await asyncio.wait_for(process.communicate(), 90)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        events = journal_events(data)
        assert process.returncode == 130, out.decode() + err.decode()
        assert not [pid for pid in agent_pids(events) if alive(pid)]
        (run,) = list_runs(data)
        assert b"interrupted by Ctrl-C: every session was stopped" in out
        assert f"mala-tui resume {run.run_id}".encode() in out
        assert b"Traceback" not in err
        ended = [e for e in events if isinstance(e, ev.SessionEnded)]
        assert {(e.session, e.status.value, e.reason) for e in ended} == {
            ("a", "stopped", "interrupted by Ctrl-C"),
            ("b", "stopped", "interrupted by Ctrl-C"),
        }
        assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "interrupted by Ctrl-C"

        # Stopped with the run, not one by one: `resume` carries both on to the end.
        code, out_text, err_text = await run_cli(*MODEL, "resume", "latest", "--headless", env=env)
    assert code == 0, out_text + err_text
    assert "a: stopped with the run; resumes agent session" in out_text
    assert "b: stopped with the run; resumes agent session" in out_text
    after = read_events(run.directory / "events.jsonl").events
    resumed_at = next(i for i, e in enumerate(after) if isinstance(e, ev.RunResumed))
    done = {e.session for e in after[resumed_at:] if isinstance(e, ev.SessionEnded)}
    assert done == {"a", "b"} and isinstance(after[-1], ev.RunEnded) and after[-1].ok
    for name in ("a", "b"):
        assert "VERSION = 2" in (tmp_path / name / "src" / "app.py").read_text()


async def test_ctrl_c_twice_still_ends_every_agent_and_journals_it(tmp_path: Path) -> None:
    """The second Ctrl-C hurries the stop (the agents are killed at once), and the stop is
    seen to its end all the same: each agent's end journaled, none alive when mala-tui is
    gone, the run resumable."""
    tasks = two_tasks(tmp_path)
    data = tmp_path / "data"
    async with LoopbackServer(load_scenario("quickstart"), response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await start_foreground(
            *MODEL, "run", "--tasks", str(tasks), "--headless", env=env
        )
        try:
            await eventually(
                lambda: both_under_way(data),
                timeout=120,
                what="both sessions under way",
                every=0.05,
            )
            pids = agent_pids(journal_events(data))
            process.send_signal(signal.SIGINT)
            await asyncio.sleep(0.05)
            process.send_signal(signal.SIGINT)
            out, err = await asyncio.wait_for(process.communicate(), 90)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        # Checked the moment mala-tui is gone, by pid: no grace for a straggler.
        left = [pid for pid in pids if alive(pid)]
    assert left == []
    assert process.returncode == 130, out.decode() + err.decode()
    assert b"Traceback" not in err
    events = journal_events(data)
    started = agent_pids(events)
    ended = {e.pid for e in events if isinstance(e, ev.ProcessEnded)}
    assert started and set(started) <= ended
    assert not [pid for pid in started if alive(pid)]
    assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "interrupted by Ctrl-C"
    code, out_text, err_text = await run_cli("show", "latest", "--json", env=env)
    assert code == 0, err_text
    assert '"command": "mala-tui resume' in out_text


def slow_git(bin_dir: Path, marker: Path, seconds: float) -> dict[str, str]:
    """A `git` first on PATH that, for `worktree add`, leaves `marker` and takes `seconds`:
    long enough for a signal to arrive while worktrees are being made."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = worktree ] && [ "$2" = add ]; then\n'
        f"  touch '{marker}'; sleep {seconds}\n"
        "fi\n"
        f'exec {real.stdout.strip()} "$@"\n'
    )
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def test_sigterm_while_worktrees_are_made_leaves_a_resumable_run(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    repo = tmp_path / "project"
    repo.mkdir()
    materialize_workspace(scenario, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    data = tmp_path / "data"
    marker = tmp_path / "worktree-add-started"
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        slow = dict(env, **slow_git(tmp_path / "bin", marker, 1.5))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mala_tui",
            *MODEL,
            "run",
            scenario.task,
            scenario.task,
            scenario.task,
            "--cwd",
            str(repo),
            "--worktree",
            "--headless",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=slow,
        )
        try:
            await eventually(
                marker.exists, timeout=60, what="the first worktree under way", every=0.05
            )
            process.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 143, out.decode() + err.decode()
        assert b"Traceback" not in err
        (run,) = list_runs(data)
        assert run.ended, "the run's end is journaled"
        events = read_events(run.directory / "events.jsonl").events
        assert not agent_pids(events), "no agent was started after the signal"
        assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "stopped by SIGTERM"
        # Every worktree and branch git has for this run is in the journal.
        created = {e.branch: e.path for e in events if isinstance(e, ev.WorktreeCreated)}
        branches = git(
            repo, "branch", "--list", f"mala/{run.run_id}/*", "--format=%(refname:short)"
        )
        assert set(branches.split()) == set(created)
        listed = git(repo, "worktree", "list", "--porcelain")
        on_disk = {
            line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")
        }
        assert on_disk - {str(repo)} == set(created.values())
        assert 1 <= len(created) < 3

        code, shown, err_text = await run_cli("runs", env=env)
        assert code == 0 and "running?" not in shown, shown + err_text

        # Resumed, every session works in a worktree of its own: the one made, and new ones.
        code, out_text, err_text = await run_cli(*MODEL, "resume", "latest", "--headless", env=env)
    assert code == 0, out_text + err_text
    after = read_events(run.directory / "events.jsonl").events
    worktrees = {e.session: e for e in after if isinstance(e, ev.WorktreeCreated)}
    assert len(worktrees) == 3
    starts = {e.session: e.cwd for e in after if isinstance(e, ev.SessionStarted)}
    for session, worktree in worktrees.items():
        assert starts[session].startswith(worktree.path)
        assert "VERSION = 2" in (Path(worktree.path) / "src" / "app.py").read_text()
    assert "VERSION = 1" in (repo / "src" / "app.py").read_text()
    assert isinstance(after[-1], ev.RunEnded) and after[-1].ok


def test_sigterm_during_start_up_of_the_demo_closes_its_journal(tmp_path: Path) -> None:
    """The demo opens its journal inside the event loop; a signal then still ends it."""
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "mala_tui", "demo", "--headless"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("runs/*/events.jsonl")):
            time.sleep(0.01)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143, out.decode() + err.decode()
    (run,) = list_runs(tmp_path)
    assert run.ended
    events = read_events(run.directory / "events.jsonl").events
    assert not [pid for pid in agent_pids(events) if alive(pid)]


@pytest.mark.usefixtures("tmux_installed")
async def test_the_app_exits_1_after_a_session_failed(tmp_path: Path) -> None:
    """The app's status is the run's, as headless gives it: 1 when not every session
    finished (each one's end printed once the app has gone), here one that failed."""
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    materialize_workspace(scenario, workspace)
    data = tmp_path / "data"
    name = f"mala-tui-failed-{os.getpid()}"
    status = tmp_path / "status"
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48")
    try:
        async with LoopbackServer(scenario, response_delay_s=0) as server:
            # Silent at its second step for good: with no retry allowed, the session fails.
            server.add_fault(FaultSpec(kind="stall_before_bytes", at_step="s002", times=5))
            env = offline_cli_env(server.base_url, tmp_path / "claude-home")
            env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
            args = [*MODEL, "--set", "idle.idle_timeout_seconds=3"]
            args += ["--set", "idle.max_idle_retries=0", "run", scenario.task]
            in_terminal(name, env, [*args, "--cwd", str(workspace)], status)
            await eventually(
                lambda: "Every session has ended" in screen(name),
                timeout=120,
                what="the run to end",
                seen=lambda: screen(name),
                every=0.2,
            )
            tmux("send-keys", "-t", name, "q")
            await eventually(
                status.exists,
                timeout=60,
                what="the app to exit",
                seen=lambda: screen(name),
                every=0.2,
            )
            shown = screen(name)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
    assert status.read_text().strip() == "1", shown
    assert "task-1: failed - idle for" in shown
    ended = [e for e in journal_events(data) if isinstance(e, ev.SessionEnded)]
    assert [e.status.value for e in ended] == ["failed"]
