"""A subagent near its window's limits is wound down, and a result that would overflow it
is withheld, with the real CLI on the loopback.

The PostToolUse hook fires inside the subagent (its input names it, `agent_id`) and the
CLI waits for its answer before the subagent's next request: what it answers is what the
subagent's model reads next. Thresholds made small here (`[context.subagents]` over a
200,000 window: wind down from 20,000, withhold past 40,000) so that three ~18,000-token
reads cross both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.loopback import LoopbackServer, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import big_reader
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration

READER = big_reader(3, "the big files read.")


async def test_a_subagent_is_wound_down_and_a_result_that_would_overflow_is_withheld(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "project"
    materialize_workspace(READER, workspace)
    async with LoopbackServer(READER, response_delay_s=0, keep_bodies=True) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            "--set",
            "agent.model=claude-sonnet-4-5",
            "--set",
            "context.subagents.soft_threshold=0.1",
            "--set",
            "context.subagents.hard_threshold=0.2",
            "run",
            READER.task,
            "--cwd",
            str(workspace),
            "--headless",
            env=env,
        )
        log = list(server.request_log)
    assert code == 0, out + err
    sub = [json.dumps(r.body) for r in log if r.agent_id is not None]
    # After its first read (~26,000 tokens with it): told to return its findings now.
    told = [i for i, body in enumerate(sub) if "Wrap up now: fetch nothing more" in body]
    assert told and told[0] == 1, "the request after the first read carries the wind-down"
    # Its second read would take it past 40,000: the model reads the note, not the file.
    withheld = [i for i, body in enumerate(sub) if "mala-tui withheld this Read result" in body]
    assert withheld and withheld[0] == 2
    assert "big/f02.txt line 00001" not in sub[withheld[0]]
    assert "big/f01.txt line 00001" in sub[withheld[0]], "the first read reached it whole"
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    (wound,) = [e for e in events if isinstance(e, ev.SubagentWoundDown)]
    kept = [e for e in events if isinstance(e, ev.SubagentResultWithheld)]
    assert wound.tool == "Read" and wound.window == 200_000 and wound.estimate >= 20_000
    assert kept and all(e.agent_id == wound.agent_id and e.tool == "Read" for e in kept)
    assert kept[0].tokens + kept[0].result_tokens > 40_000
    (gauge,) = RunState().apply_all(events).sessions["task-1"].snapshot().subagents
    assert (gauge.agent_id, gauge.wound_down, gauge.withheld) == (wound.agent_id, 1, len(kept))
