"""The real Claude Code CLI delegating to subagents the loopback server plays."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeSDKClient, ResultMessage

from mala_tui.loopback.request_log import RequestRecord
from tests.loopback.delegation import cli_options, delegation_server, read_until

pytestmark = pytest.mark.integration

TIMEOUT_S = 120.0
DISCONNECT_TIMEOUT_S = 15.0


def has_reports(*names: str) -> Callable[[ResultMessage], bool]:
    return lambda result: all(f"REPORT {name}:" in (result.result or "") for name in names)


async def run(name: str, tmp_path: Path, *reports: str) -> tuple[list[ResultMessage], list[str]]:
    """One session on the scenario until a result names every report; its results, and
    the main agent's answers as the server logged them."""
    results, kinds, _ = await run_logged(name, tmp_path, *reports)
    return results, kinds


async def run_logged(
    name: str, tmp_path: Path, *reports: str, nested: int = 0
) -> tuple[list[ResultMessage], list[str], list[RequestRecord]]:
    """``run``, with the server's request log; ``nested`` subagents beside the reports."""
    async with delegation_server(name) as server:
        scenario = server.scenario(server.routes[0])
        client = ClaudeSDKClient(cli_options(server, scenario, tmp_path))
        await asyncio.wait_for(client.connect(), TIMEOUT_S)
        try:
            await client.query(scenario.task)
            messages = await read_until(client, has_reports(*reports), TIMEOUT_S)
        finally:
            await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT_S)
        log = server.request_log
    assert all(record.status == 200 for record in log)
    # Each subagent made its own requests, under an agent id of its own.
    subagents = {record.agent_id: record.subagent for record in log if record.from_subagent}
    assert len(subagents) == len(reports) + nested
    assert set(reports) <= set(subagents.values())
    results = [message for message in messages if isinstance(message, ResultMessage)]
    kinds = [record.response_kind for record in log if not record.from_subagent]
    return results, kinds, log


async def test_two_background_subagents_report_and_the_final_answer_uses_both(
    tmp_path: Path,
) -> None:
    results, kinds = await run("delegation", tmp_path, "A", "B")
    final = results[-1].result or ""
    assert final.startswith("Summary: both helpers reported; logs 1-8 are triaged.")
    assert final.splitlines()[-2:] == [
        "REPORT A: logs 1-4 read (app-1.log to app-4.log); nothing fatal.",
        "REPORT B: logs 5-8 read (app-5.log to app-8.log); nothing fatal.",
    ]
    # The main agent started both, then had nothing to do but wait: its turn ended
    # before the reports, and the CLI started the next one when they came.
    assert kinds[:4] == ["tool_use"] * 4
    assert "waiting" in kinds
    assert kinds[-1] == "final"
    waited = [r.result for r in results if (r.result or "").startswith("Waiting for ")]
    assert waited
    assert waited[-1] != final


async def test_a_foreground_subagents_report_is_its_calls_result(tmp_path: Path) -> None:
    results, kinds = await run("delegation-foreground", tmp_path, "C")
    assert kinds == ["tool_use", "tool_use", "final"]
    assert len(results) == 1
    assert (results[0].result or "").endswith(
        "\n\nREPORT C: logs 1-2 read (app-1.log and app-2.log); nothing fatal."
    )


async def test_subagents_one_after_another_each_starts_once_the_one_before_reported(
    tmp_path: Path,
) -> None:
    results, kinds, log = await run_logged("delegation-sequential", tmp_path, "A", "B", "C")
    assert (results[-1].result or "").splitlines()[-3:] == [
        "REPORT A: logs 1-2 read (app-1.log and app-2.log); nothing fatal.",
        "REPORT B: logs 3-4 read (app-3.log and app-4.log); nothing fatal.",
        "REPORT C: logs 5-6 read (app-5.log and app-6.log); nothing fatal.",
    ]
    # The main agent waited twice (for A, then for B); C, in the foreground, needed no wait.
    assert kinds == ["tool_use", "tool_use", "waiting", "tool_use", "waiting", "tool_use", "final"]
    # Never two at once: each subagent's requests all come after the one before answered.
    spans: dict[str, tuple[int, int]] = {}
    for index, record in enumerate(log):
        if record.subagent is not None:
            first, _ = spans.get(record.subagent, (index, index))
            spans[record.subagent] = (first, index)
    assert spans["A"][1] < spans["B"][0] and spans["B"][1] < spans["C"][0]


async def test_a_failing_subagent_reports_its_failure_and_the_other_still_counts(
    tmp_path: Path,
) -> None:
    results, kinds, _ = await run_logged("delegation-fails", tmp_path, "A", "B")
    final = results[-1].result or ""
    assert final.startswith("Summary: both helpers reported; logs 1-2 are triaged, logs 3-4")
    assert "REPORT B: FAILED: could not triage logs 3-4: both end mid-line (truncated)." in final
    assert kinds[-1] == "final"


async def test_a_subagent_starts_a_nested_one_which_the_cli_names_by_its_parent(
    tmp_path: Path,
) -> None:
    results, _, log = await run_logged("delegation-nested", tmp_path, "A", nested=1)
    assert (results[-1].result or "").endswith(
        "REPORT A: logs 1-2 read (app-1.log and app-2.log); nothing fatal; N read logs 3-4."
    )
    agents = {record.subagent: record for record in log if record.from_subagent}
    assert set(agents) == {"A", "N"}
    assert agents["A"].parent_agent_id is None
    assert agents["N"].parent_agent_id == agents["A"].agent_id
    # A delegated in the foreground: its report came after N's, with N's in its request.
    a_kinds = [r.response_kind for r in log if r.subagent == "A"]
    assert a_kinds == ["tool_use", "tool_use", "tool_use", "final"]
