"""Shared by the UI tests: apps on fixed data, and the screen as the user would read it."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TypeVar

from rich.console import Console
from textual import events as textual_events
from textual.app import App
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot

from mala_tui.config import Settings, UiSettings
from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.run_view import RunState
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_run import sample_events
from mala_tui.dev.sample_session import T0
from mala_tui.ui.app import MalaApp
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.source import Source
from tests.support.polling import eventually

SIZE = (140, 44)

ReturnT = TypeVar("ReturnT")
"""Whatever the app under test returns: these helpers work on any app."""


def make_app(source: Source | None = None, *, theme: str = "mala-dark") -> MalaApp:
    """The app on `source` (the live sample run by default) with a frozen clock."""
    return MalaApp(
        source if source is not None else FakeLiveSource(),
        settings=Settings(ui=UiSettings(theme=theme)),
        clock=lambda: 0.0,
    )


def screen_text(app: MalaApp) -> str:
    """What the terminal would show, as plain text (styles dropped, characters kept)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, force_terminal=True
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text(styles=False)


async def open_session(pilot: Pilot[int], name: str, *keys: str) -> None:
    """Focus the session's card, press enter (its detail screen), then these keys."""
    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    card = screen.card(name)
    assert card is not None
    card.focus()
    await pilot.pause()
    await pilot.press("enter", *keys)


def notifications(app: MalaApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def second_approval_events() -> list[ev.Event]:
    """The sample run, with a second session (migrate-db) waiting for approval after the first."""
    return [
        *sample_events(),
        ev.CheckpointSaved(
            at=T0 + 640,
            session="migrate-db",
            number=1,
            origin=CheckpointOrigin.TAGGED,
            text="## Goal\nMigrate the orders tables.\n## Remaining Tasks\n- Backfill",
        ),
        ev.PhaseChanged(
            at=T0 + 641,
            session="migrate-db",
            before=Phase.CHECKPOINTING,
            after=Phase.AWAITING_APPROVAL,
            trigger=Trigger.CHECKPOINT_FOR_APPROVAL,
        ),
        ev.ApprovalRequested(
            at=T0 + 641,
            session="migrate-db",
            checkpoint_number=1,
            reason="hard threshold reached (93%)",
        ),
    ]


def read_only_sample() -> RunState:
    return RunState().apply_all(sample_events())


BASH_INPUT = (
    '{\n  "command": "rm -rf build/ && make [bold]release[/bold]\x1b[2J",\n'
    '  "description": "clean and build"\n}'
)
"""A tool input with markup and an escape in it: shown literally, never interpreted."""


def permission_events(*tools: str) -> list[ev.Event]:
    """The sample run with parser-fix asking for these tools, one request each, in order."""
    return [
        *sample_events(),
        *(
            ev.PermissionRequested(
                at=T0 + 700 + number,
                session="parser-fix",
                request_id=str(number),
                tool=tool,
                summary="rm -rf build/ && make [bold]release[/bold]",
                input_text=BASH_INPUT,
            )
            for number, tool in enumerate(tools, start=1)
        ),
    ]


def burst(app: App[ReturnT], keys: str, then: str) -> None:
    """Keys as a terminal delivers a burst of typing or a paste: all queued before any is
    handled (Pilot's `press` waits for each key, so it cannot show an ordering fault)."""
    for char in keys:
        app.post_message(textual_events.Key(char, char))
    app.post_message(textual_events.Key(then, None))


async def settle(pilot: Pilot[ReturnT], rounds: int = 20) -> None:
    """Let queued keys and what they set off run to the end."""
    for _ in range(rounds):
        await pilot.pause()


async def palette_highlights(pilot: Pilot[ReturnT], text: str) -> None:
    """Until the open command palette highlights a command reading `text`: it searches as
    the person types, in a worker, so the wait is for its list, not for a guessed delay."""
    palette = pilot.app.screen
    assert isinstance(palette, CommandPalette)
    commands = palette.query_one(CommandList)

    def highlighted() -> str:
        option = commands.highlighted_option
        return "" if option is None else str(option.prompt)

    await eventually(lambda: text in highlighted(), what=f"the palette to offer {text!r}")


async def published(app: MalaApp, shown: Callable[[], object], what: str) -> None:
    """Publish what the run recorded now (the bridge would at the next frame), then wait
    until the app shows it: subscribers run on their screens' queues, not at once."""
    app.bridge.flush()
    await eventually(shown, what=what)
