"""The Claude backend with the real SDK and CLI against the loopback model.

Usage accounting against the CLI's own /context figure, masking by transcript
rewrite and resume, a real stall recovered within the disconnect bound, and a
prompt-too-long recovered from a harness-made checkpoint.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mala_tui.bench.model_faults import TIGHT, TIGHT_WINDOW
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import TurnEnded, UsageObserved
from mala_tui.loopback import FaultSpec, LoopbackServer, load_scenario
from mala_tui.runtime.backends.claude import ClaudeBackend
from tests.integration.harness import alive, runner, session_spec
from tests.support.factories import default_limits

pytestmark = pytest.mark.integration


async def test_usage_from_the_stream_matches_the_clis_own_context_figure(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        spec = session_spec("q", scenario, server, tmp_path)
        client = ClaudeBackend().create(spec, resume=None, clock=time.time)
        await client.connect()
        try:
            await client.query(scenario.task)
            finals = []
            async for item in client.stream():
                if isinstance(item, UsageObserved) and not item.starts_call:
                    finals.append(item.call)
                if isinstance(item, TurnEnded):
                    assert item.context_window == 200_000
                    break
            cli = await client.context_usage()
        finally:
            await client.disconnect()
        last = finals[-1]
        cli_figure = cli["totalTokens"] + cli["apiUsage"]["output_tokens"]
        assert abs(last.context_tokens - cli_figure) <= 0.02 * cli_figure
        # And the server computed the same numbers for that request.
        record = [r for r in server.request_log if r.response_kind != "error"][-1]
        assert last.prompt_tokens == record.prompt_tokens
        assert last.cache_read_input_tokens == record.cache_read_input_tokens
        # Left on for the process (a subagent's only protection); mala-tui's PreCompact hook
        # blocks the main thread's (tests/runtime/test_cli_env.py).
        assert cli["isAutoCompactEnabled"] is True


async def test_masking_rewrites_the_transcript_and_the_model_sees_placeholders(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    limits = default_limits(
        soft_threshold=0.08,
        hard_threshold=0.9,
        keep_recent_observations=1,
        mask_min_batch_tokens=500,
    )
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        spec = session_spec("q", scenario, server, tmp_path)
        run, recorded = runner(spec, limits, backup_dir=tmp_path / "backup")
        assert await run.run() is EndStatus.DONE
    masks = recorded.of(ev.MaskApplied)
    assert masks, "the session should have crossed the soft threshold"
    log = server.request_log
    first_masked = next(r for r in log if r.masked_placeholders > 0)
    before = log[first_masked.index - 2]  # the request just before it (indices count from 1)
    # Rewriting an old result is a prompt-cache miss from that block on: unmasked, the
    # whole of the request before would have been read from the cache.
    assert first_masked.cache_read_input_tokens < before.prompt_tokens
    assert first_masked.prompt_tokens < before.prompt_tokens
    measured = recorded.of(ev.MaskMeasured)[0]
    assert measured.reclaimed > 0
    assert not any(r.redone for r in log)
    # The turn was stopped after a tool's result (the PostToolUse hook), not interrupted
    # mid-request: no step was asked of the model twice.
    steps = [r.step_id for r in log if r.response_kind == "tool_use"]
    assert len(steps) == len(set(steps))
    assert list((tmp_path / "backup").glob("*.jsonl")), "the original transcript is kept"
    assert all(not alive(pid) for pid in run.pids)


async def test_a_real_stall_is_detected_disconnected_and_resumed(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        server.add_fault(FaultSpec(kind="stall_after_message_start", at_request=3))
        spec = session_spec("q", scenario, server, tmp_path)
        run, recorded = runner(spec, default_limits(disconnect_timeout=10.0), idle_timeout=3.0)
        started = time.monotonic()
        assert await run.run() is EndStatus.DONE
        elapsed = time.monotonic() - started
    (timeout,) = recorded.of(ev.IdleTimeoutSeen)
    assert timeout.decision == "resume" and timeout.idle_seconds >= 3.0
    stalled_pid = run.pids[0]
    ended = next(e for e in recorded.of(ev.ProcessEnded) if e.pid == stalled_pid)
    # Detection to process gone: bounded by the disconnect timeout.
    assert ended.at - timeout.at <= 10.0
    assert not alive(stalled_pid)
    assert len(run.pids) == 2 and all(not alive(pid) for pid in run.pids)
    assert elapsed < 60


async def test_prompt_too_long_recovers_from_a_harness_checkpoint(tmp_path: Path) -> None:
    # The CLI believes in a 200K window; the server refuses past 19,000 tokens, as the
    # real API does past its window, partway through the task.
    async with LoopbackServer(TIGHT, response_delay_s=0, window=TIGHT_WINDOW) as server:
        spec = session_spec("tight", TIGHT, server, tmp_path)
        run, recorded = runner(spec, default_limits(max_restarts=3))
        status = await run.run()
    refused = [r for r in server.request_log if r.response_kind == "error"]
    assert len(refused) == 1
    (restart,) = recorded.of(ev.Restarted)
    assert restart.reason == "emergency: the prompt is too long for the window"
    saved = recorded.of(ev.CheckpointSaved)[0]
    assert saved.origin == "harness"
    assert "- Read " in saved.text and "n_4.txt" in saved.text
    assert status is EndStatus.DONE
    assert (spec.cwd / "DIGEST.md").exists()
    assert not any(r.redone for r in server.request_log), "the harness checkpoint lost progress"
