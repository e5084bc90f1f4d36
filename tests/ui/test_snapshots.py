"""How the main screens look, in two themes, on the fixed sample run (pytest-textual-snapshot).

Regenerate after a deliberate change with `pytest tests/ui/test_snapshots.py --snapshot-update`
and look at the report before committing the new SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.ui.screens.dashboard import DashboardScreen

from .helpers import SIZE, make_app, permission_events, read_only_sample
from .test_landing_keys import land_dialog, two_sessions

THEMES = ("mala-dark", "mala-light")
SnapCompare = Callable[..., bool]


def steps(*keys: str, session: str = "") -> Callable[[Pilot[int]], Awaitable[None]]:
    """Focus the session's card (if any), press these keys, drop the notifications.

    The notifications go because their toasts would cover the screen.
    """

    async def run(pilot: Pilot[int]) -> None:
        await pilot.pause()
        screen = pilot.app.screen
        if session and isinstance(screen, DashboardScreen) and (card := screen.card(session)):
            card.focus()
            await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    return run


@pytest.mark.parametrize("theme", THEMES)
def test_dashboard_with_a_session_in_each_zone(snap_compare: SnapCompare, theme: str) -> None:
    app = make_app(FakeLiveSource(), theme=theme)
    assert snap_compare(app, terminal_size=SIZE, run_before=steps())


@pytest.mark.parametrize("theme", THEMES)
def test_approval_modal(snap_compare: SnapCompare, theme: str) -> None:
    app = make_app(FakeLiveSource(), theme=theme)
    assert snap_compare(app, terminal_size=SIZE, run_before=steps("a"))


@pytest.mark.parametrize("theme", THEMES)
def test_session_detail(snap_compare: SnapCompare, theme: str) -> None:
    app = make_app(read_only_sample(), theme=theme)
    run_before = steps("enter", session="settings-form")
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_checkpoint_viewer(snap_compare: SnapCompare, theme: str) -> None:
    app = make_app(read_only_sample(), theme=theme)
    run_before = steps("c", session="settings-form")
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_permission_request(snap_compare: SnapCompare, theme: str) -> None:
    app = make_app(FakeLiveSource(permission_events("Bash")), theme=theme)
    assert snap_compare(app, terminal_size=SIZE, run_before=steps("P"))


def test_land_dialog_over_a_card_with_work_to_land(
    snap_compare: SnapCompare, tmp_path: Path
) -> None:
    """The commit message drafted from the checkpoint, what is left to land read from git,
    and behind it the cards saying what each session has left to land."""
    _, source, _, _ = two_sessions(tmp_path)
    app = make_app(source)

    async def run_before(pilot: Pilot[int]) -> None:
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, DashboardScreen)
        card = screen.card("fixer")
        assert card is not None
        card.focus()
        await pilot.press("L")
        await land_dialog(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
