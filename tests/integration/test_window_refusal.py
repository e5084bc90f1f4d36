"""A model with a smaller window than Claude Code believes, on the real CLI.

The loopback refuses past 60,000 tokens while the CLI, for a Claude model name,
believes and reports 200,000. The soft-zone reader reads twelve 21,500-token
modules: two fit before the first refusal. Claude Code passes that refusal on as a
bare "Prompt is too long"; the session must learn the window from it, restart once,
and mask inside the real window from then on, never refused again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.window import WindowSource
from mala_tui.loopback import LoopbackServer, load_scenario
from tests.integration.harness import runner, session_spec
from tests.support.factories import default_limits

pytestmark = pytest.mark.integration

REAL_WINDOW = 60_000


async def test_a_window_refused_below_the_clis_belief_is_learnt_and_kept(tmp_path: Path) -> None:
    scenario = load_scenario("soft-zone-reader")
    async with LoopbackServer(scenario, response_delay_s=0, window=REAL_WINDOW) as server:
        spec = session_spec("gateway", scenario, server, tmp_path)
        # Masking late and in large batches, the session comes near the real window.
        limits = default_limits(max_restarts=3, soft_threshold=0.3, mask_min_batch_tokens=30_000)
        run, recorded = runner(spec, limits)
        status = await run.run()
    refused = [r for r in server.request_log if r.response_kind == "error"]
    assert status is EndStatus.DONE
    assert len(refused) == 1, "refused again after the window was learnt"
    assert len(recorded.of(ev.Restarted)) == 1
    (learnt,) = recorded.of(ev.WindowLearned)
    assert (learnt.believed, learnt.believed_source) == (200_000, WindowSource.CLI)
    accepted = max(r.prompt_tokens for r in server.request_log if r.time < refused[0].time)
    # What the manager measured and projected brackets what the model took and refused.
    assert learnt.accepted >= accepted and learnt.refused <= refused[0].prompt_tokens * 1.05
    after = [u for u in recorded.of(ev.UsageRecorded) if u.at >= learnt.at]
    assert after and all(u.window_source is WindowSource.REFUSAL for u in after)
    assert accepted < after[-1].window <= refused[0].prompt_tokens
    assert recorded.of(ev.MaskApplied), "it masked inside the learnt window"
    sent_after = [r for r in server.request_log if r.time >= refused[0].time and r.status == 200]
    assert sent_after and max(r.prompt_tokens for r in sent_after) <= REAL_WINDOW
    # Claude Code's "Prompt is too long" is not quoted as the agent's own words.
    (checkpoint,) = recorded.of(ev.CheckpointSaved)
    assert "Prompt is too long" not in checkpoint.text.split("## Key Decisions", 1)[1]
