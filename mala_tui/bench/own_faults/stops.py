"""Stops that must stay resumable: Ctrl-C mid-run, and SIGTERM during start-up.

A headless ``run`` of real CLIs interrupted mid-run (once, or twice to hurry the stop) must
exit 130 with its journal ended and no agent left. A ``run --worktree`` signalled while its
worktrees are made must exit 143 with every worktree and branch it made journaled. Either way
``resume`` must then finish every session.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mala_tui.bench.fault_harness import TrialRow, journal_complete
from mala_tui.bench.own_faults.headless_cli import (
    PLANTED_KEY,
    QUICKSTART_DONE,
    TRIAL_MODEL,
    exposure,
    journal_of,
    left_under,
    lines_lost,
    resume_and_count,
    start_mala,
    under_way,
    wait_until,
)
from mala_tui.core import events as ev
from mala_tui.loopback import (
    LoopbackServer,
    Scenario,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.runtime.journal.writer import read_events


async def ctrl_c_then_resume_trial(
    folder: Path, sessions: int, *, presses: int = 1, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """A headless `run` of `sessions` real CLIs gets Ctrl-C (`presses` times, the later
    ones while it stops) once each is under way; then `resume` must finish every one.

    Recovered: done after the resume, its folder edited. The stop itself must exit 130,
    end the journal, leave no agent process, and say how to resume."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    names = [f"ctrl-c-{index:02d}" for index in range(sessions)]
    entries = []
    for name in names:
        materialize_workspace(scenario, folder / name)
        task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
        entries.append(f"[[task]]\nname = {json.dumps(name)}\ntask = {json.dumps(task)}\n")
        entries[-1] += f"cwd = {json.dumps(name)}\n"
    tasks = folder / "tasks.toml"
    tasks.write_text("\n".join(entries))
    data = folder / "data"
    problems: list[str] = []
    started = time.monotonic()
    async with LoopbackServer(scenario, response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = str(folder / "none.toml")
        args = [*TRIAL_MODEL, "run", "--tasks", str(tasks), "--headless"]
        process = await start_mala(command, *args, env=env)
        try:
            await wait_until(lambda: under_way(data, names), 180, "every session under way")
            for press in range(presses):
                if press:
                    await asyncio.sleep(0.05)
                process.send_signal(signal.SIGINT)
            out, err = await asyncio.wait_for(process.communicate(), 120)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        left = left_under(folder)
        journal = journal_of(data)
        assert journal is not None
        if process.returncode != 130:
            problems.append(f"exit status {process.returncode}, expected 130")
        if b"mala-tui resume" not in out:
            problems.append("the stop did not say how to resume")
        stopped = read_events(journal).events
        lost_lines = lines_lost(journal)
        complete = journal_complete(stopped, names)
        ended = {e.pid for e in stopped if isinstance(e, ev.ProcessEnded)}
        unended = [
            e.pid for e in stopped if isinstance(e, ev.ProcessStarted) and e.pid not in ended
        ]
        if unended:
            problems.append(f"{len(unended)} agent processes with no process_ended")
        done, printed, _, resume_problems = await resume_and_count(command, env, journal, names)
        problems += resume_problems
        left += left_under(folder)
    edited = sum(
        1 for name in names if QUICKSTART_DONE in (folder / name / "src" / "app.py").read_text()
    )
    recovered = min(done, edited)
    problems += exposure(out + err + printed, data)
    return TrialRow(
        fault=f"Ctrl-C{' x' + str(presses) if presses > 1 else ''} mid-run, then resume "
        "(headless run)",
        sessions=sessions,
        injected=presses,
        recovered=recovered,
        failed_fast=0,
        lost=sessions - recovered,
        reasons=(),
        processes_left=len(left),
        journal_lines_lost=lost_lines + lines_lost(journal),
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=complete and journal_complete(read_events(journal).events, names),
        problems=tuple(problems),
    )


#: How long the trial's `git worktree add` takes: the window the signal arrives in.
SLOW_WORKTREE_S = 1.0


def slow_git(folder: Path, marker: Path, seconds: float = SLOW_WORKTREE_S) -> str:
    """A folder to put first on PATH whose `git`, for `worktree add`, leaves `marker` and
    takes `seconds` first: a start-up slow enough for a signal to land inside it."""
    real = shutil.which("git")
    if real is None:
        raise RuntimeError("the start-up trial needs git")
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = worktree ] && [ "$2" = add ]; then\n'
        f"  touch {shlex.quote(str(marker))}; sleep {seconds}\n"
        "fi\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(folder)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=trial", "-c", "user.email=trial@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _project(repo: Path, scenario: Scenario) -> Path:
    """The scenario's workspace as a git repository with one commit: what `--worktree` needs."""
    repo.mkdir(parents=True)
    materialize_workspace(scenario, repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    return repo


def _not_journaled(repo: Path, run_id: str, created: dict[str, str]) -> set[str]:
    """The run's branches and the repository's worktrees that no `worktree_created` names
    (`created` maps each journaled branch to its worktree's path)."""
    listing = _git(repo, "branch", "--list", f"mala/{run_id}/*", "--format=%(refname)")
    branches = {ref.removeprefix("refs/heads/") for ref in listing.split()}
    listed = _git(repo, "worktree", "list", "--porcelain").splitlines()
    trees = {line[len("worktree ") :] for line in listed if line.startswith("worktree ")}
    return (branches - set(created)) | (trees - {str(repo)} - set(created.values()))


def _edited_in_worktrees(events: Sequence[ev.Event], names: Sequence[str]) -> int:
    """How many of the sessions made the quickstart's edit in a worktree of their own."""
    worktrees = {e.session: e.path for e in events if isinstance(e, ev.WorktreeCreated)}
    return sum(
        1
        for name in names
        if name in worktrees
        and QUICKSTART_DONE in (Path(worktrees[name]) / "src" / "app.py").read_text()
    )


async def sigterm_during_start_up_trial(
    folder: Path, sessions: int, *, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """`run --worktree` of `sessions` tasks gets SIGTERM while its first worktree is being
    made. It must exit 143 with its journal ended, every worktree and branch it made
    journaled, no agent started; then `resume` must finish every session, each in a
    worktree of its own (the ones not made yet are made by the resume)."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    repo = _project(folder / "project", scenario)
    data = folder / "data"
    marker = folder / "worktree-add-started"
    problems: list[str] = []
    task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
    names = [f"task-{index}" for index in range(1, sessions + 1)]
    started = time.monotonic()
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = str(folder / "none.toml")
        slow = dict(env, PATH=f"{slow_git(folder / 'bin', marker)}{os.pathsep}{env['PATH']}")
        args = [*TRIAL_MODEL, "run", *[task] * sessions, "--cwd", str(repo), "--worktree"]
        process = await start_mala(command, *args, "--headless", env=slow)
        try:
            await wait_until(marker.exists, 60, "the first worktree under way")
            process.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if process.returncode != 143:
            problems.append(f"exit status {process.returncode}, expected 143")
        journal = journal_of(data)
        if journal is None:
            raise RuntimeError("the run left no journal")
        run_id = journal.parent.name
        events = read_events(journal).events
        complete = journal_complete(events, names)
        if any(isinstance(e, ev.ProcessStarted) for e in events):
            problems.append("an agent started after the signal")
        created = {e.branch: e.path for e in events if isinstance(e, ev.WorktreeCreated)}
        unrecorded = _not_journaled(repo, run_id, created)
        if unrecorded:
            problems.append(f"{len(unrecorded)} worktrees or branches not in the journal")
        runs = await start_mala(command, "runs", env=env)
        shown, _ = await runs.communicate()
        if runs.returncode != 0 or b"running?" in shown:
            problems.append("`runs` does not show the run as ended")
        lost_lines = lines_lost(journal)
        done, printed, _, resume_problems = await resume_and_count(command, env, journal, names)
        problems += resume_problems
        left = left_under(folder)
    after = read_events(journal).events
    edited = _edited_in_worktrees(after, names)
    if QUICKSTART_DONE in (repo / "src" / "app.py").read_text():
        problems.append("an agent edited the repository's own checkout, not its worktree")
    recovered = min(done, edited)
    problems += exposure(out + err + printed, data)
    return TrialRow(
        fault=f"SIGTERM during start-up (run --worktree, {len(created)} of {sessions} "
        "worktrees made), then resume",
        sessions=sessions,
        injected=1,
        recovered=recovered,
        failed_fast=0,
        lost=sessions - recovered,
        reasons=(),
        processes_left=len(left),
        journal_lines_lost=lost_lines + lines_lost(journal),
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=complete and journal_complete(after, names),
        problems=tuple(problems),
    )
