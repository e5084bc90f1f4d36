"""The economy's peers with the real CLI: the API's tool-result clearing, re-reads, [1m]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

from mala_tui.bench import economy
from mala_tui.bench.arms import run_cli_arm
from mala_tui.loopback import (
    FaultSpec,
    LoopbackServer,
    Scenario,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
    read_jsonl,
)

pytestmark = [pytest.mark.integration]

FACT = "def settle(batch_id: str, *, dry_run: bool = False) -> Settlement:"
# Six 80 KB reads (~24,000 tokens each with the CLI's line numbers): past the clearing
# trigger (100,000 input tokens) at the fifth; the final Write needs a line from the first.
NEEDS_THE_FIRST = Scenario.model_validate(
    {
        "name": "needs-the-first",
        "task": "Read the six modules, then write NOTES.md on how settle is called.",
        "final_answer": "NOTES.md explains how settle is called.",
        "workspace": {
            "files": [{"path": "src/m{i}.py", "count": 6, "size": 80_000, "kind": "python"}]
        },
        "facts": [{"id": "settle", "path": "src/m1.py", "text": FACT}],
        "steps": [
            {"tool": "Read", "path": "src/m{i}.py", "count": 6},
            {
                "tool": "Write",
                "path": "NOTES.md",
                "content": "settle takes a batch id and a dry_run flag.\n",
                "needs": ["settle"],
            },
        ],
    }
)


async def test_under_the_apis_clearing_the_cli_finishes_and_the_lost_fact_is_re_read(
    tmp_path: Path,
) -> None:
    result = await run_cli_arm("clearing", NEEDS_THE_FIRST, tmp_path)
    assert result.finished, result.ending
    assert result.cleared_results > 0
    assert result.rereads == 1
    # The client kept its whole transcript; the model saw the cleared one, under 100K + 3.
    assert result.peak_prompt_tokens < 100_000 + 3 * 25_000


async def test_under_server_side_compaction_the_cli_finishes_on_the_summary(
    tmp_path: Path,
) -> None:
    result = await run_cli_arm(
        "server-compaction", NEEDS_THE_FIRST, tmp_path, compact_trigger=100_000
    )
    assert result.finished, result.ending
    assert result.compactions >= 1 and result.compact_trigger == 100_000
    # The summary kept the steps done (nothing redone) but not the early detail the
    # Write needs: it is read again.
    assert (result.redone_steps, result.rereads) == (0, 1)
    # The CLI sent its whole transcript; the model read the summary and what followed it.
    records = read_jsonl(tmp_path / "loopback-requests.jsonl")
    compacting = [r for r in records if r.compacted]
    assert all(r.compaction_prompt_tokens > 100_000 for r in compacting)
    assert max(r.prompt_tokens for r in records[records.index(compacting[0]) :]) < 100_000


async def test_with_the_whole_window_nothing_is_re_read(tmp_path: Path) -> None:
    result = await run_cli_arm("raw", NEEDS_THE_FIRST, tmp_path)
    assert result.finished, result.ending
    assert (result.rereads, result.cleared_results) == (0, 0)
    assert result.peak_prompt_tokens > 140_000


async def test_a_1m_model_name_from_the_cli_gets_the_1m_window(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    async with LoopbackServer(scenario, workspace=workspace, response_delay_s=0) as server:
        options = ClaudeAgentOptions(
            cwd=str(workspace),
            model="claude-sonnet-4-5[1m]",
            allowed_tools=list(scenario.tools),
            permission_mode="acceptEdits",
            env=offline_cli_env(server.base_url, tmp_path / "home"),
            setting_sources=[],
        )
        client = ClaudeSDKClient(options)
        await client.connect()
        try:
            await client.query(scenario.task)
            results = [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
        finally:
            await client.disconnect()
    assert results and not results[-1].is_error
    answered = [r for r in server.request_log if r.status == 200]
    assert answered
    assert {r.window for r in answered} == {1_000_000}


async def test_an_arm_that_hangs_is_stopped_and_counted_as_not_finished(tmp_path: Path) -> None:
    stalls = load_scenario("quickstart").model_copy(
        update={"faults": [FaultSpec(kind="stall_before_bytes", at_request=2)]}
    )
    result = await run_cli_arm("unmanaged", stalls, tmp_path, timeout_s=5)
    assert (result.finished, result.ending) == (False, "timed out after 5 s")
    assert result.requests == 2


def test_the_economy_command_exits_1_when_a_scenario_misses_a_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # quickstart fits a 200K window: unmanaged finishes, so the scenario misses its point.
    out = tmp_path / "out"
    status = economy.main(
        ["--scenario", "quickstart", "--arms", "raw,unmanaged", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert status == 1
    for density in ("1x", "2x"):  # the set is judged at both densities by default
        assert (
            f"| quickstart | {density} | scenario: raw (1M) finishes, or is computed past its window | yes |"
            in printed
        )
        assert (
            f"| quickstart | {density} | scenario: an unmanaged 200K window does not finish | NO |"
            in printed
        )
        chart = out / density / "quickstart" / "context-over-time.svg"
        assert chart.read_text().startswith("<svg")
    results = json.loads((out / "results.json").read_text())
    assert [(m["name"], m["token_ratio"]) for m in results["missed"]] == [
        ("scenario: an unmanaged 200K window does not finish", 1.0),
        ("scenario: an unmanaged 200K window does not finish", 2.0),
    ]
    assert set(results["densities"]) == {"1x", "2x"}


async def test_a_cli_arms_stderr_is_kept_cleaned_never_passed_to_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A broken stream makes Claude Code print what it got (escapes and a key) on stderr;
    the benchmark keeps it, cleaned and redacted, as the runtime does: never on the
    terminal."""
    from mala_tui.loopback.faults import BROKEN_STREAM_KEY

    base = load_scenario("quickstart")
    broken = base.model_copy(update={"faults": [FaultSpec(kind="broken_stream", at_request=2)]})
    result = await run_cli_arm("unmanaged", broken, tmp_path)
    assert result.finished, result.ending
    terminal = capfd.readouterr()
    assert "\x1b" not in terminal.err + terminal.out
    assert BROKEN_STREAM_KEY not in terminal.err + terminal.out
    kept = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Could not parse message into JSON" in kept
    assert "\x1b" not in kept and BROKEN_STREAM_KEY not in kept
