"""The run's closing cost line, checked against Claude Code's own figure."""

from __future__ import annotations

from mala_tui.commands.running import cost_line
from mala_tui.core.pricing import Spend


def test_the_cost_line_says_how_far_the_estimate_is_from_claude_codes_figure() -> None:
    spend = Spend(3, 100, 0, 0, 10, 0.202)
    assert cost_line(spend).startswith("cost: $0.20 (estimate at list prices) for 3 API calls")
    assert "Claude Code" not in cost_line(spend)
    assert cost_line(spend, 0.202).endswith("; Claude Code says $0.20 (the same)\n")
    assert cost_line(spend, 0.2).endswith("; Claude Code says $0.20 (1.0% apart)\n")
    assert cost_line(Spend(), 0.5) == ""
