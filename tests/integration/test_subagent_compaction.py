"""A subagent whose window fills keeps the CLI's own compaction, with the real CLI.

mala-tui manages the main thread's window and blocks the CLI's compaction there (its
PreCompact hook). A subagent has a window of its own that mala-tui does not manage: with
`DISABLE_AUTO_COMPACT=1` (what mala-tui used to set, for the whole process) a subagent
that read past its window died "Prompt is too long" and its report was lost. Here a
foreground subagent reads twelve ~19,000-token files, past the 200,000-token window: the
loopback refuses its request, the CLI compacts the subagent, and it finishes and reports.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.run_view import RunState
from mala_tui.loopback import LoopbackServer, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import big_reader
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration

READER = big_reader(12, "all twelve big files read.")


async def test_a_foreground_subagent_past_its_window_compacts_and_reports(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "project"
    materialize_workspace(READER, workspace)
    async with LoopbackServer(READER, response_delay_s=0) as server:
        # The environment a user's own CLI would have: its compaction on (the default).
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            "--set",
            "agent.model=claude-sonnet-4-5",
            # mala-tui winds a subagent down before the API refuses it (context.subagents):
            # a window it believes larger than the loopback's lets the refusal come first.
            "--set",
            'context.model_windows={"claude-sonnet-4-5" = 300000}',
            "run",
            READER.task,
            "--cwd",
            str(workspace),
            "--headless",
            env=env,
        )
        log = list(server.request_log)
    assert code == 0, out + err
    assert "task-1: done - the agent finished its task" in out
    sub = [r for r in log if r.agent_id is not None]
    main = [r for r in log if r.agent_id is None]
    assert len({r.agent_id for r in sub}) == 1, "one subagent, never started again"
    # The subagent ran past the window, was refused, compacted and carried on.
    refused = [r for r in sub if r.status == 400]
    summaries = [r for r in sub if r.response_kind == "compaction_summary"]
    assert refused and summaries and summaries[0].time > refused[0].time
    assert sub[-1].response_kind == "final" and sub[-1].time > summaries[0].time
    # The main thread's window stays mala-tui's: never compacted by the CLI.
    assert not [r for r in main if r.response_kind == "compaction_summary"]
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    said = [
        e
        for e in events
        if isinstance(e, ev.MessageRecorded) and e.role == "assistant" and e.kind == "text"
    ]
    assert said and "REPORT S: all twelve big files read." in said[-1].excerpt
    ends = [e for e in events if isinstance(e, ev.SubagentEnded)]
    assert [e.how for e in ends] == [SubagentEnd.COMPLETED]
    # The subagent's compaction is not the session's: no compaction journaled for it...
    assert not [e for e in events if isinstance(e, ev.CompactionSeen)]
    # ...but the subagent's own, read from its transcript, on its gauge.
    compacted = [e for e in events if isinstance(e, ev.SubagentCompacted)]
    assert len(compacted) == 1 and (compacted[0].pre_tokens or 0) > 200_000
    state = RunState().apply_all(events)
    (gauge,) = state.sessions["task-1"].snapshot().subagents
    assert gauge.compactions == 1 and gauge.peak > 150_000
