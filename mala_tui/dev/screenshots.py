"""`python -m mala_tui.dev.screenshots [DIR]`: render the main screens of the real app to SVG.

Like Harlequin's export_screenshots.py: the app runs headless on the fixed
sample run (`dev.sample_run`), each screen is reached with the keys a person would
press, and `save_screenshot` writes it. The README shows the results, which are
committed in `screenshots/`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from mala_tui.config import Settings, UiSettings
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_run import sample_permission_request, sample_state
from mala_tui.ui.app import MalaApp

SIZE = (140, 44)
THEMES = ("mala-dark", "mala-light")
FIXED_CLOCK = 0.0

Steps = Callable[[Pilot[int]], Awaitable[None]]


async def _dashboard(pilot: Pilot[int]) -> None:
    await pilot.pause()


async def _approval(pilot: Pilot[int]) -> None:
    await pilot.press("a")
    await pilot.pause()


async def _detail(pilot: Pilot[int]) -> None:
    # Filter down to the session with a restart behind it, open it.
    await pilot.press("slash", *"settings", "enter", "enter")
    await pilot.pause()


async def _checkpoints(pilot: Pilot[int]) -> None:
    await _detail(pilot)
    await pilot.press("c")
    await pilot.pause()


async def _subagents(pilot: Pilot[int]) -> None:
    # The session that delegates (its card shows its live subagents), opened on its list.
    await pilot.press("slash", *"api-docs", "enter", "enter")
    await pilot.pause()
    await pilot.press("u")
    await pilot.pause()


async def _message(pilot: Pilot[int]) -> None:
    # The message box on the session in the soft zone, a message typed.
    await pilot.press("slash", *"parser", "enter", "t")
    await pilot.pause()
    await pilot.press(*"Use the tokenizer's new Span type; run pytest -q tests/tokenizer after.")
    await pilot.pause()


async def _permission(pilot: Pilot[int]) -> None:
    # A tool use waiting for permission, as the run would record it, then its screen.
    app = pilot.app
    assert isinstance(app, MalaApp)
    source = app.controller.supervisor
    assert isinstance(source, FakeLiveSource)
    source.record(sample_permission_request())
    await pilot.pause()
    await pilot.press("P")
    await pilot.pause()
    pilot.app.clear_notifications()
    await pilot.pause()


SHOTS: dict[str, tuple[bool, Steps]] = {
    "dashboard": (True, _dashboard),
    "approval": (True, _approval),
    "detail": (False, _detail),
    "checkpoints": (False, _checkpoints),
    "message": (True, _message),
    "permission": (True, _permission),
    "subagents": (False, _subagents),
}
"""Screenshot name -> (live sample run or read-only, the keys that reach the screen)."""


def sample_app(*, live: bool, theme: str) -> MalaApp:
    """The app on the sample run, with a frozen clock so every rendering is the same."""
    settings = Settings(ui=UiSettings(theme=theme))
    source = FakeLiveSource() if live else sample_state()
    return MalaApp(source, settings=settings, clock=lambda: FIXED_CLOCK)


async def render(name: str, theme: str, folder: Path) -> Path:
    live, steps = SHOTS[name]
    app = sample_app(live=live, theme=theme)
    async with app.run_test(size=SIZE) as pilot:
        await steps(pilot)
        path = Path(app.save_screenshot(f"{name}-{theme}.svg", str(folder)))
        await pilot.press("q")
    return path


async def render_all(folder: Path) -> list[Path]:
    return [await render(name, theme, folder) for theme in THEMES for name in SHOTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.dev.screenshots")
    parser.add_argument("folder", nargs="?", default="screenshots", type=Path)
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(render_all(args.folder)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
