"""`mala-tui run` on a user's own task, with the model behind ANTHROPIC_BASE_URL (here, loopback)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
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

pytestmark = pytest.mark.integration


async def run_cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mala_tui",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out, err = await asyncio.wait_for(process.communicate(), 180)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def run_scenario_headless(
    tmp_path: Path,
    name: str,
    *options: str,
    log: Path | None = None,
    faults: Sequence[FaultSpec] = (),
) -> tuple[int, str, str, dict[str, str]]:
    """`mala-tui run --headless` on a shipped scenario's task, in its workspace, against the
    loopback serving it (with these faults); the run is journaled under tmp_path/data.
    Returns the exit status, stdout, stderr and the environment (for `show` and `runs`
    afterwards)."""
    scenario = load_scenario(name)
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        for fault in faults:
            server.add_fault(fault)
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            "--set",
            "agent.model=claude-sonnet-4-5",
            "run",
            scenario.task,
            "--cwd",
            str(workspace),
            *options,
            "--headless",
            env=env,
        )
        if log is not None:
            server.write_log(log)
    return code, out, err, env


async def test_run_headless_supervises_a_task_and_journals_it(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"  # where run_scenario_headless puts the workspace
    code, out, err, _ = await run_scenario_headless(tmp_path, "quickstart")
    assert code == 0, out + err
    assert "task-1: done - the agent finished its task" in out
    assert "VERSION = 2" in (workspace / "src" / "app.py").read_text()
    (run,) = list_runs(tmp_path / "data")
    assert run.mode == "run" and run.ok
    meta = json.loads((run.directory / "run.json").read_text())
    assert meta["tasks"] == [{"name": "task-1", "task": scenario.task, "cwd": str(workspace)}]
    assert "sk-ant" not in (run.directory / "run.json").read_text()
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    assert pids and not any(alive(pid) for pid in pids)


async def test_run_with_a_bad_tasks_file_exits_2_naming_the_entry(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nname = "a"\ntask = "x"\nmodle = "y"\n')
    code, out, err = await run_cli("run", "--tasks", str(tasks), "--headless", env=dict(os.environ))
    assert code == 2
    assert out == ""
    assert err.startswith(
        f"mala-tui run: tasks file {tasks}, task 1: unknown key 'modle' (did you mean 'model'?); "
        "allowed: task, name, cwd, profile, model, permission_mode,"
    )
    assert err.count("\n") == 1


async def test_a_tasks_files_task_works_in_cwd_not_the_files_folder(tmp_path: Path) -> None:
    """`--cwd` with `--tasks`: a task that names no folder works in `--cwd`; the agent's
    edit lands there, and nothing is written next to the tasks file."""
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    folder = tmp_path / "tasks"
    folder.mkdir()
    tasks = folder / "tasks.toml"
    tasks.write_text(f"[[task]]\nname = 'edit'\ntask = {json.dumps(scenario.task)}\n")
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", "run", "--tasks", str(tasks)),
            *("--cwd", "project", "--headless"),
            env=env,
            cwd=tmp_path,  # a relative --cwd is the caller's, not the tasks file's
        )
    assert code == 0, out + err
    assert "VERSION = 2" in (workspace / "src" / "app.py").read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["tasks.toml"]
    (run,) = list_runs(tmp_path / "data")
    (started,) = [
        e
        for e in read_events(run.directory / "events.jsonl").events
        if isinstance(e, ev.SessionStarted)
    ]
    assert started.cwd == str(workspace)


async def test_a_task_the_model_refuses_as_too_long_fails_and_is_never_done(tmp_path: Path) -> None:
    """A task under its estimate but over the model's real window (a gateway's smaller one
    here): its first request is refused, and the session ends failed, saying the task does
    not fit, instead of running on an emergency checkpoint holding part of the task."""
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    task = scenario.task + "\n" + "lorem ipsum dolor " * 8_000 + "\nLAST: also say banana."
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"name": "big", "task": task}]))
    async with LoopbackServer(scenario, response_delay_s=0, window=20_000) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", "run", "--tasks", str(tasks)),
            *("--cwd", str(workspace), "--headless"),
            env=env,
        )
    assert code == 1, out + err
    assert f"big: failed - the task ({len(task):,} characters" in out
    assert "does not fit the window: its first request was refused as too long" in out
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    assert not [e for e in events if isinstance(e, ev.CheckpointSaved | ev.Restarted)]
    assert "VERSION = 1" in (workspace / "src" / "app.py").read_text()


async def test_output_piped_into_head_does_not_turn_success_into_failure(tmp_path: Path) -> None:
    """`mala-tui run ... | head -1`: the reader goes after one line, the run goes on to its
    end, journaled, and its exit status is still the run's own."""
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "mala_tui", "--set", "agent.model=claude-sonnet-4-5"),
            *("run", scenario.task, "--cwd", str(workspace), "--headless"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        assert process.stdout is not None and process.stderr is not None
        first = await asyncio.wait_for(process.stdout.readline(), 60)
        assert first.startswith(b"run ")
        # What `head -1` does once it has its line: it exits, and the pipe closes.
        transport = process._transport  # type: ignore[attr-defined]
        transport.get_pipe_transport(1).close()
        err = await asyncio.wait_for(process.stderr.read(), 180)
        code = await process.wait()
    assert code == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    (run,) = list_runs(tmp_path / "data")
    assert run.ended and run.ok
    assert "VERSION = 2" in (workspace / "src" / "app.py").read_text()
