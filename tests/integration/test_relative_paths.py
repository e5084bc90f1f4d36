"""Relative paths in the CLI's environment mean mala-tui's working folder, not the agent's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration


async def test_a_relative_config_dir_is_where_masking_finds_the_transcript(tmp_path: Path) -> None:
    # `CLAUDE_CONFIG_DIR=cfg mala-tui run ... --cwd project`, from the folder that holds cfg:
    # the agent works in project/, and its transcripts must still land in ./cfg.
    scenario = load_scenario("soft-zone-reader")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "tmp").mkdir()
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "unused"))
        env.update(CLAUDE_CONFIG_DIR="cfg", TMPDIR="tmp", MALA_TUI_STORAGE__DATA_DIR="data")
        code, out, err = await run_cli(
            "--set",
            "agent.model=claude-sonnet-4-5",
            "run",
            scenario.task,
            "--cwd",
            "project",
            "--headless",
            env=env,
            cwd=tmp_path,
        )
    assert code == 0, out + err
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    errors = [e.message for e in events if isinstance(e, ev.ErrorRecorded)]
    assert errors == []
    assert [e for e in events if isinstance(e, ev.MaskApplied)], out
    assert " mask_applied " in out
    assert list((tmp_path / "cfg" / "projects").glob("*/*.jsonl"))
    assert not (workspace / "cfg").exists() and not (workspace / "tmp").exists()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def test_a_relative_data_dir_with_worktrees_stays_out_of_the_repository(
    tmp_path: Path,
) -> None:
    # `mala-tui run --worktree --cwd /abs/repo --data-dir data`, from tmp_path: the run and
    # its worktrees go in tmp_path/data, never in repo/data (git would make them there).
    scenario = load_scenario("quickstart")
    repo = tmp_path / "repo"
    repo.mkdir()
    materialize_workspace(scenario, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", "run", scenario.task),
            *("--worktree", "--cwd", str(repo), "--data-dir", "data", "--headless"),
            env=env,
            cwd=tmp_path,
        )
    assert code == 0, out + err
    assert "task-1: done" in out
    assert not (repo / "data").exists()
    assert git(repo, "status", "--porcelain") == ""
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    (created,) = [e for e in events if isinstance(e, ev.WorktreeCreated)]
    assert Path(created.path) == run.directory / "worktrees" / "task-1"
    assert (Path(created.path) / "REPORT.md").is_file()
