"""A real CLI session's cost estimate equals the model's own count of every request it served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.core.pricing import DEFAULT_PRICES
from mala_tui.core.usage import CallUsage
from tests.integration.test_run_command import run_cli, run_scenario_headless

pytestmark = pytest.mark.integration


async def test_each_api_call_is_costed_once(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    code, out, err, env = await run_scenario_headless(tmp_path, "quickstart", log=log)
    assert code == 0, out + err
    code, shown, err = await run_cli("show", "latest", "--json", env=env)
    assert code == 0, err
    cost = json.loads(shown)["sessions"]["task-1"]["cost"]

    # What the model served, request by request (the CLI reported each one twice).
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    served = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [
        CallUsage(
            r["input_tokens"],
            r["cache_creation_input_tokens"],
            r["cache_read_input_tokens"],
            r["output_tokens"],
        )
        for r in served
        if r["status"] == 200
    ]
    assert len(calls) >= 7  # one request per step of the scenario, and the final answer
    assert cost["api_calls"] == len(calls)
    assert cost["output_tokens"] == sum(c.output_tokens for c in calls)
    assert cost["cache_read_tokens"] == sum(c.cache_read_input_tokens for c in calls)
    assert cost["estimated_cost_usd"] == pytest.approx(sum(price.call_cost(c) for c in calls))
    assert cost["basis"] == "estimate from list prices"
    total = f"${cost['estimated_cost_usd']:.{4 if cost['estimated_cost_usd'] < 0.01 else 2}f}"
    assert f"cost: {total} (estimate at list prices) for {len(calls)} API calls" in out


async def test_a_run_without_a_model_learns_it_from_the_first_answer_and_prices_it(
    tmp_path: Path,
) -> None:
    """No `--model`, no agent.model: Claude Code's own default model runs. Every API answer
    names its model; the session learns it from the first, journals it, and is priced."""
    import os

    from mala_tui.core import events as ev
    from mala_tui.loopback import (
        LoopbackServer,
        load_scenario,
        materialize_workspace,
        offline_cli_env,
    )
    from mala_tui.runtime.journal.writer import list_runs, read_events

    scenario = load_scenario("quickstart")
    workspace = tmp_path / "project"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    log = tmp_path / "requests.jsonl"
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        env.pop("MALA_TUI_AGENT__MODEL", None)
        code, out, err = await run_cli(
            "run", scenario.task, "--cwd", str(workspace), "--headless", env=env
        )
        server.write_log(log)
    assert code == 0, out + err
    served = [json.loads(line) for line in log.read_text().splitlines()]
    answered = {r["model"] for r in served if r["status"] == 200}
    (model,) = answered  # the model Claude Code chose, as the API answered with it
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    (started,) = [e for e in events if isinstance(e, ev.SessionStarted)]
    assert started.model is None
    (learned,) = [e for e in events if isinstance(e, ev.ModelLearned)]
    assert learned.model == model
    first_usage = next(i for i, e in enumerate(events) if isinstance(e, ev.UsageRecorded))
    assert events.index(learned) < first_usage  # every call is priced, the first one too
    code, shown, err = await run_cli("show", "latest", "--json", env=env)
    assert code == 0, err
    session = json.loads(shown)["sessions"]["task-1"]
    assert session["model"] == model
    assert session["cost"]["estimated_cost_usd"] is not None, session
    assert "no price" not in out
    assert "(estimate at list prices)" in out
