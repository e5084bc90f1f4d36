"""A count and its noun agree wherever mala-tui says one (`core.text.plural`): "1 session",
"2 sessions", in the app, the event log, the budgets, and the costs `runs` lists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.budget import BudgetState, Reading
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.describe import summary
from mala_tui.core.pricing import DEFAULT_PRICES, Spend, total_spend
from mala_tui.core.run_view import RunState
from mala_tui.core.text import plural
from mala_tui.core.usage import CallUsage
from tests.support.usage_events import reported_twice, started
from tests.ui.helpers import make_app, screen_text

CALL = CallUsage(3, 20_000, 0, 500)


def test_plural_agrees_with_whole_and_fractional_counts() -> None:
    assert [plural(n, "session") for n in (0, 1, 2)] == ["0 sessions", "1 session", "2 sessions"]
    assert [plural(n, "minute") for n in (0.5, 1.0, 30.0)] == [
        "0.5 minutes",
        "1 minute",
        "30 minutes",
    ]


def test_the_event_log_and_a_budget_say_one_in_the_singular() -> None:
    masked = ev.MaskApplied(
        at=1.0,
        session="a",
        count=1,
        tool_use_ids=("t1",),
        placeholders=("[masked]",),
        estimated_tokens=900,
        tokens_before=10_000,
        total_masked=1,
    )
    assert summary(masked).startswith("masked 1 result (~900, ")
    saved = ev.CheckpointSaved(
        at=1.0, session="a", number=1, origin=CheckpointOrigin.TAGGED, text="x", path="p"
    )
    assert summary(saved) == "#1 (tagged, 1 char) p"
    assert (
        Reading("max_minutes", 0.9, 1.0, BudgetState.NEAR).describe()
        == "time 0.9 of 1 minute (90%)"
    )


async def test_the_dashboard_counts_one_session() -> None:
    app = make_app(RunState().apply_all([started("only", "claude-sonnet-4-5", at=1.0)]))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        shown = screen_text(app)
    assert "1 session \u00b7 1 normal" in shown, shown


def test_a_session_without_calls_costs_nothing_even_unpriced() -> None:
    unpriced_idle = Spend(cost_usd=None)  # its model has no price, but it never called it
    priced = Spend(1, 10, 0, 0, 1, 0.5)
    assert total_spend([unpriced_idle]).cost_usd == 0.0
    assert total_spend([priced, unpriced_idle]).cost_usd == 0.5
    assert total_spend([priced, Spend(1, 10, 0, 0, 1, None)]).cost_usd is None  # a call unpriced


def test_runs_shows_no_cost_for_a_run_that_made_no_call(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "20261101-000000-aaaa"
    folder.mkdir(parents=True)
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id=folder.name, sessions=("idle", "busy"), mode=ev.RunMode.RUN),
        started("idle", None),  # never reached its model: it has none, so no price
        started("busy", "claude-sonnet-4-5"),
        *reported_twice("busy", 1.0, CALL),
        ev.RunEnded(at=3.0, run_id=folder.name, ok=True),
    ]
    (folder / "events.jsonl").write_text("".join(ev.event_json(e) + "\n" for e in events))
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "runs", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"${DEFAULT_PRICES['claude-sonnet-4-5'].call_cost(CALL):.2f}" in done.stdout.splitlines()[1]
    )
    assert "no price" not in done.stdout
