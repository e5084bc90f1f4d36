"""`mala-tui show RUN --json` gives each session's subagents with their figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.pricing import DEFAULT_PRICES
from mala_tui.core.usage import CallUsage
from tests.support.usage_events import reported_twice, started

MAIN = CallUsage(3, 20_000, 0, 500)
FIRST = CallUsage(3, 9_000, 0, 400)
SECOND = CallUsage(3, 1_000, 9_400, 600)
LABEL = "[b]map[/b] the \x1b[2J routes"


def write_run(data: Path) -> None:
    folder = data / "runs" / "20261101-000000-aaaa"
    folder.mkdir(parents=True)
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id=folder.name, sessions=("a", "b"), mode=ev.RunMode.RUN),
        started("a", "claude-sonnet-4-5"),
        started("b", "claude-sonnet-4-5"),
        *reported_twice("a", 1.0, MAIN),
        ev.SubagentStarted(
            at=2.0,
            session="a",
            agent_id="x1",
            agent_type="Explore",
            description=LABEL,
            background=False,
            model="claude-sonnet-4-5",
        ),
        ev.SubagentStarted(
            at=3.0,
            session="a",
            agent_id="x2",
            agent_type="general-purpose",
            depth=2,
            parent="x1",
            nested=True,
        ),
    ]
    for at, call in ((4.0, FIRST), (5.0, SECOND)):
        events.append(
            ev.SubagentCall(
                at=at,
                session="a",
                agent_id="x1",
                input_tokens=call.input_tokens,
                cache_creation_input_tokens=call.cache_creation_input_tokens,
                cache_read_input_tokens=call.cache_read_input_tokens,
                output_tokens=call.output_tokens,
                model="claude-sonnet-4-5",
                tool_uses=2,
            )
        )
    events += [
        ev.SubagentCompacted(
            at=6.0, session="a", agent_id="x1", pre_tokens=11_006, post_tokens=3_000
        ),
        ev.SubagentEnded(
            at=9.5, session="a", agent_id="x1", how=SubagentEnd.FAILED, reason="API error"
        ),
        ev.RunEnded(at=10.0, run_id=folder.name, ok=True),
    ]
    (folder / "events.jsonl").write_text("".join(ev.event_json(e) + "\n" for e in events))


def test_show_json_lists_each_sessions_subagents(tmp_path: Path) -> None:
    write_run(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "show", "latest", "--json", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    sessions = json.loads(done.stdout)["sessions"]
    assert sessions["b"]["subagents"] == []
    first, nested = sessions["a"]["subagents"]
    sonnet = DEFAULT_PRICES["claude-sonnet-4-5"]
    assert first == {
        "agent_id": "x1",
        "label": LABEL,  # as the agent gave it: JSON escapes it, nothing is lost
        "type": "Explore",
        "depth": 1,
        "parent": None,
        "background": False,
        "nested": False,
        "tokens": 3_000,
        "peak_tokens": SECOND.context_tokens,
        "api_calls": 2,
        "tool_uses": 4,
        "compactions": 1,
        "started_at": 2.0,
        "ended_at": 9.5,
        "duration_seconds": 7.5,
        "ended": "failed",
        "reason": "API error",
        "cost": first["cost"],
    }
    assert first["cost"]["estimated_cost_usd"] == pytest.approx(
        sonnet.call_cost(FIRST) + sonnet.call_cost(SECOND)
    )
    assert first["cost"]["basis"] == "estimate from list prices"
    assert nested["depth"] == 2 and nested["parent"] == "x1" and nested["nested"] is True
    assert nested["ended"] is None and nested["duration_seconds"] is None
    # The session's cost counts its subagents' calls (the main thread's and theirs).
    assert sessions["a"]["cost"]["api_calls"] == 3
