"""On a real CLI session, the window's parts add up to the measured figure within 2%."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.breakdown import WindowBreakdown, WindowContents, breakdown_of
from mala_tui.loopback import LoopbackServer, load_scenario
from mala_tui.runtime.session.runner import SessionRunner
from tests.integration.harness import Recorded, runner, session_spec
from tests.support.factories import default_limits

pytestmark = pytest.mark.integration


async def test_breakdown_at_the_peak_adds_up_to_the_gauge(tmp_path: Path) -> None:
    # Twelve large Reads: past the soft threshold, masked, going on. At every measured
    # call the breakdown is taken as the app would take it; the one at the peak is judged.
    scenario = load_scenario("soft-zone-reader")
    taken: list[WindowBreakdown] = []
    holder: list[SessionRunner] = []
    recorded = Recorded()

    def sink(event: ev.Event) -> ev.Event:
        recorded(event)
        if isinstance(event, ev.UsageRecorded) and event.source == "per_call" and holder:
            manager = holder[0].manager
            contents = WindowContents(manager.transcript, manager.density, str(spec.cwd))
            masks = recorded.of(ev.MaskApplied)
            taken.append(
                breakdown_of(
                    contents,
                    measured=event.tokens,
                    window=event.window,
                    masked_would_cost=sum(m.estimated_tokens for m in masks),
                )
            )
        return event

    async with LoopbackServer(scenario, response_delay_s=0) as server:
        spec = session_spec("reader", scenario, server, tmp_path)
        run, _ = runner(spec, default_limits(), sink=sink)
        holder.append(run)
        await run.run()
    assert recorded.of(ev.MaskApplied), "the scenario should have been masked"
    fitted = [b for b in taken if b.density_measured]
    assert fitted, "the session's density should have been fitted"
    peak = max(fitted, key=lambda b: b.measured)
    if os.environ.get("SHOW_BREAKDOWN"):
        for part in peak.parts():
            print(f"{part.label:<22} {part.tokens:>8,} {part.count or ''}")
        print(
            f"unattributed {peak.unattributed:+,} ({peak.error_fraction:.2%}) of {peak.measured:,}"
        )
        print(f"masked would cost {peak.masked_would_cost:,}; density {peak.density:.3f}")
        print("by tool", [(s.label, s.tokens, s.count) for s in peak.by_tool])
        print("by file", [(s.label, s.tokens, s.count) for s in peak.by_file[:6]])
    assert peak.error_fraction <= 0.02
    assert peak.results_shown > 0 and peak.system_and_tools > 0
