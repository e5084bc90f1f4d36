"""A finished run whose sessions had not all ended offers to resume: R, or the palette."""

from __future__ import annotations

from mala_tui.config import Settings, UiSettings
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.ui.app import MalaApp
from mala_tui.ui.source import Source

from .helpers import palette_highlights, read_only_sample

COMMAND = "mala-tui resume 20260101-000000-abcd"


def app_with(resume_command: str | None, source: Source | None = None) -> MalaApp:
    return MalaApp(
        source if source is not None else read_only_sample(),
        settings=Settings(ui=UiSettings()),
        clock=lambda: 0.0,
        resume_command=resume_command,
    )


async def test_r_leaves_the_read_only_view_asking_for_the_resume() -> None:
    app = app_with(COMMAND)
    async with app.run_test(notifications=True) as pilot:
        assert any(COMMAND in n.message for n in app._notifications)
        assert app.check_action("resume_run", ()) is True
        await pilot.press("R")
        await pilot.pause()
    assert app.resume_requested and app.return_code == 0


async def test_the_palette_offers_the_resume_too() -> None:
    app = app_with(COMMAND)
    async with app.run_test() as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"resume this run")
        await palette_highlights(pilot, "Resume this run")
        await pilot.press("enter")
        await pilot.pause()
    assert app.resume_requested


async def test_nothing_to_resume_and_a_live_run_offer_nothing() -> None:
    for app in (app_with(None), app_with(COMMAND, FakeLiveSource())):
        async with app.run_test() as pilot:
            assert app.check_action("resume_run", ()) is False
            await pilot.press("R")
            await pilot.pause()
            assert app.is_running and not app.resume_requested
