"""A mask that cannot be applied is said on the session's card and in headless output."""

from __future__ import annotations

import io

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.dev.sample_session import T0, WINDOW
from mala_tui.ui.headless import printer

from .helpers import make_app, screen_text

NAME = "reader"
WHY = "no transcript for session abc under cfg/projects"


def failed_masks(count: int) -> list[ev.Event]:
    started = ev.SessionStarted(
        at=T0,
        session=NAME,
        task="read everything",
        cwd="/w",
        window=WINDOW,
        soft_threshold=0.3,
        hard_threshold=0.8,
        max_restarts=3,
        require_approval=False,
    )
    errors = [
        ev.ErrorRecorded(at=T0 + i, session=NAME, where=ev.Where.MASKING, message=WHY)
        for i in range(1, count + 1)
    ]
    return [
        ev.RunStarted(at=T0, run_id="r", sessions=(NAME,), mode=ev.RunMode.RUN),
        started,
        *errors,
    ]


async def test_the_card_says_the_mask_failed_and_why() -> None:
    app = make_app(RunState().apply_all(failed_masks(2)))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        # The card is narrow: the reason is cut there, whole in the session's event log.
        assert "\u25cf running \u00b7 mask failed 2x: no transcript for" in screen_text(app)


def test_a_mask_applied_since_clears_the_card_and_the_log_line_says_so() -> None:
    events = failed_masks(1)
    state = RunState().apply_all(events).sessions[NAME].snapshot()
    assert (state.mask_failures, state.mask_problem) == (1, WHY)
    applied = ev.MaskApplied(
        at=T0 + 9,
        session=NAME,
        count=3,
        tool_use_ids=("t1", "t2", "t3"),
        placeholders=("[Read result masked]",) * 3,
        tokens_before=70_000,
        estimated_tokens=40_000,
        total_masked=3,
    )
    after = RunState().apply_all([*events, applied]).sessions[NAME].snapshot()
    assert (after.mask_failures, after.mask_problem) == (0, "")
    out = io.StringIO()
    listen = printer(out)
    for event in events:
        listen(event)
    assert f"error                mask not applied, the window stays as it is: {WHY}" in (
        out.getvalue()
    )
