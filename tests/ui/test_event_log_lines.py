"""The event log says each API call's usage once, with its output."""

from __future__ import annotations

from mala_tui.core.usage import CallUsage
from mala_tui.ui.describe import matches
from tests.support.usage_events import reported_twice


def test_a_call_reported_as_it_opened_and_as_it_closed_is_one_line() -> None:
    opened, closed = reported_twice("s1", 1.0, CallUsage(input_tokens=100, output_tokens=40))
    opened = opened.model_copy(update={"call_started": True})
    assert [matches(event, None, "") for event in (opened, closed)] == [False, True]
    assert not matches(opened, "usage", "")
