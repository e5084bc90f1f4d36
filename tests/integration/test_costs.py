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
