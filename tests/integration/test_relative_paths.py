"""Relative paths in the CLI's environment mean mala-tui's working folder, not the agent's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal import list_runs, read_events
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
