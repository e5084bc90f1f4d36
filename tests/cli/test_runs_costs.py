"""`mala-tui runs` and `show --json` give each run's cost estimate and cache-hit rate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.pricing import DEFAULT_PRICES
from mala_tui.core.usage import CallUsage
from tests.support.usage_events import reported_twice, started

FIRST = CallUsage(3, 20_000, 0, 500)
SECOND = CallUsage(5, 1_000, 20_000, 300)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mala_tui", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )


def write_run(data: Path, run_id: str, models: dict[str, str | None]) -> None:
    folder = data / "runs" / run_id
    folder.mkdir(parents=True)
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id=run_id, sessions=tuple(models), mode=ev.RunMode.RUN)
    ]
    for name, model in models.items():
        events.append(started(name, model))
        events += reported_twice(name, 1.0, FIRST)
        events += reported_twice(name, 2.0, SECOND)
    events.append(ev.RunEnded(at=3.0, run_id=run_id, ok=True))
    (folder / "events.jsonl").write_text("".join(ev.event_json(e) + "\n" for e in events))


def test_show_json_gives_cost_and_cache_hit_rate(tmp_path: Path) -> None:
    write_run(tmp_path, "20261101-000000-aaaa", {"a": "claude-sonnet-4-5", "b": "claude-opus-4-5"})
    done = run("show", "latest", "--json", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    sonnet, opus = DEFAULT_PRICES["claude-sonnet-4-5"], DEFAULT_PRICES["claude-opus-4-5"]
    a, b = shown["sessions"]["a"]["cost"], shown["sessions"]["b"]["cost"]
    assert a["api_calls"] == 2 and a["output_tokens"] == 800
    assert a["estimated_cost_usd"] == pytest.approx(
        sonnet.call_cost(FIRST) + sonnet.call_cost(SECOND)
    )
    assert b["estimated_cost_usd"] == pytest.approx(opus.call_cost(FIRST) + opus.call_cost(SECOND))
    assert a["basis"] == "estimate from list prices"
    assert a["cache_hit_rate"] == pytest.approx(20_000 / 41_008)
    run_cost = shown["cost"]
    assert run_cost["estimated_cost_usd"] == pytest.approx(
        a["estimated_cost_usd"] + b["estimated_cost_usd"]
    )
    assert run_cost["api_calls"] == 4


def test_runs_lists_cost_and_cache_columns(tmp_path: Path) -> None:
    write_run(tmp_path, "20261101-000000-aaaa", {"a": "claude-sonnet-4-5"})
    write_run(tmp_path, "20261102-000000-bbbb", {"a": "someone-elses-model"})
    done = run("runs", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "COST (EST.)" in lines[0] and "CACHE" in lines[0]
    sonnet = DEFAULT_PRICES["claude-sonnet-4-5"]
    expected = f"${sonnet.call_cost(FIRST) + sonnet.call_cost(SECOND):.2f}"
    newest, oldest = lines[1], lines[2]
    assert "no price" in newest and "49%" in newest
    assert expected in oldest and "49%" in oldest
    assert "estimates from list prices" in lines[-1]
