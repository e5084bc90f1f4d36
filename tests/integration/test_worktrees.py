"""Two agents on one repository with `--worktree`: each edits its own checkout, never the other's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def test_two_agents_on_one_repository_never_touch_each_others_files(
    tmp_path: Path,
) -> None:
    # Both agents get the same task: bump VERSION in src/app.py and write REPORT.md. In one
    # shared folder the second Edit would find VERSION = 2 already; in worktrees each agent
    # does the whole task on its own copy, and the repository's checkout is left alone.
    scenario = load_scenario("quickstart")
    repo = tmp_path / "project"
    repo.mkdir()
    materialize_workspace(scenario, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    base = git(repo, "rev-parse", "HEAD").strip()
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            "--set",
            "agent.model=claude-sonnet-4-5",
            "run",
            scenario.task,
            scenario.task,
            "--cwd",
            str(repo),
            "--worktree",
            "--headless",
            env=env,
        )
    assert code == 0, out + err
    assert "task-1: done" in out and "task-2: done" in out
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events

    # The repository's own checkout: untouched.
    assert git(repo, "status", "--porcelain") == ""
    assert "VERSION = 1" in (repo / "src" / "app.py").read_text()
    assert not (repo / "REPORT.md").exists()

    created = {e.session: e for e in events if isinstance(e, ev.WorktreeCreated)}
    changed = {e.session: e for e in events if isinstance(e, ev.WorktreeChanged)}
    assert set(created) == set(changed) == {"task-1", "task-2"}
    paths = {name: Path(e.path) for name, e in created.items()}
    assert paths["task-1"] != paths["task-2"]
    for name, path in paths.items():
        assert created[name].base_commit == base
        assert created[name].branch == f"mala/{run.run_id}/{name}"
        assert path.is_relative_to(run.directory)  # kept with the run, after it
        assert "VERSION = 2" in (path / "src" / "app.py").read_text()
        assert (path / "REPORT.md").is_file()
        assert {(f.path, f.added, f.deleted) for f in changed[name].files} == {
            ("src/app.py", 1, 1),
            ("REPORT.md", 3, 0),
        }
        assert git(path, "branch", "--show-current").strip() == created[name].branch
        # Every file the agent named in a tool call is inside its own worktree.
        calls = [
            e
            for e in events
            if isinstance(e, ev.MessageRecorded) and e.session == name and e.kind == "tool_call"
        ]
        assert {c.tool for c in calls} >= {"Read", "Edit", "Write"}
        other = paths["task-2" if name == "task-1" else "task-1"]
        for call in calls:
            assert str(other) not in call.excerpt and f"{repo}/" not in call.excerpt
            if call.tool in {"Read", "Edit", "Write"}:
                assert f"file_path={path}/" in call.excerpt
    started = {e.session: e for e in events if isinstance(e, ev.SessionStarted)}
    assert {name: Path(e.cwd) for name, e in started.items()} == paths
    assert "mala" in git(repo, "branch", "--list", "mala/*")  # both branches kept

    code, shown, err = await run_cli("show", run.run_id, "--json", env=env)
    assert code == 0, err
    worktree = json.loads(shown)["sessions"]["task-1"]["worktree"]
    assert worktree["path"] == str(paths["task-1"])
    assert (worktree["lines_added"], worktree["lines_deleted"]) == (4, 1)
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    assert pids and not any(alive(pid) for pid in pids)


async def test_worktree_outside_a_repository_exits_2_before_anything_starts(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path / "data"))
    code, out, err = await run_cli(
        "run", "a task", "--cwd", str(plain), "--worktree", "--headless", env=env
    )
    assert code == 2
    assert out == ""
    assert err.startswith(f"mala-tui run: --worktree: {plain} is not in a git repository")
    assert not (tmp_path / "data").exists()  # no run was journaled
