"""`run --worktree` with a task whose name holds escapes and a newline: every line the run
prints shows it literally, on one line (its worktree's line too), never as an escape the
terminal would act on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.text import clean
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.cli.test_agent_text import CLIPBOARD, TITLE, controls
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


async def test_a_session_name_with_escapes_is_printed_literally(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    repo = tmp_path / "project"
    repo.mkdir()
    materialize_workspace(scenario, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    name = f"fix{TITLE}\nrun 1: forged line{CLIPBOARD}"
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"name": name, "task": scenario.task}]))
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("run", "--set", "agent.model=claude-sonnet-4-5", "--tasks", str(tasks)),
            *("--cwd", str(repo), "--worktree", "--headless"),
            env=env,
        )
    assert code == 0, out + err
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    (created,) = [e for e in events if isinstance(e, ev.WorktreeCreated)]
    assert created.session == name
    said = clean(f"{name}: worktree {created.path} on branch {created.branch}", one_line=True)
    assert said in out.splitlines()
    assert "fix\u241b]0;pwned\u2407 \u23ce run 1: forged line\u241b]52;c;aGVsbG8=\u2407" in said
    assert not any(controls(line) for line in out.splitlines()), out
    # `--set` after the command took: the model the session ran with.
    (started,) = [e for e in events if isinstance(e, ev.SessionStarted)]
    assert started.model == "claude-sonnet-4-5"
