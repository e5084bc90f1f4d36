"""Text from agents is shown literally on every screen: no markup, no escape sequences."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.run_view import RunState
from mala_tui.core.transcript import Role
from mala_tui.core.usage import UsageSource
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0, WINDOW
from mala_tui.ui.screens.approval import ApprovalScreen
from tests.support.polling import eventually

from .helpers import make_app, screen_text

TASK = "[bold red]x[/] \x1b[2J"
CHECKPOINT = (
    "## Goal\nSee [link=https://example.com/x]the docs[/link] and [b]this[/b]\x1b]0;owned\x07\n"
    "## Completed Work\n- ran `printf '\\x1b[31m'`\n"
)
ERROR = "[red]Traceback[/red]: \x1b[1mboom\x1b[0m"


def hostile_events() -> list[ev.Event]:
    name = "[i]evil[/i]"
    return [
        ev.RunStarted(at=T0, run_id="r", sessions=(name,), mode=ev.RunMode.RUN),
        ev.SessionStarted(
            at=T0,
            session=name,
            task=TASK,
            cwd="/w",
            window=WINDOW,
            soft_threshold=0.7,
            hard_threshold=0.9,
            max_restarts=3,
            require_approval=True,
        ),
        ev.UsageRecorded(
            at=T0 + 1, session=name, tokens=185_000, window=WINDOW, source=UsageSource.PER_CALL
        ),
        ev.MessageRecorded(
            at=T0 + 2,
            session=name,
            role=Role.USER,
            kind="tool_result",
            tool="Bash",
            excerpt="\x1b[2J[blink]output[/blink]",
            is_error=True,
        ),
        ev.ErrorRecorded(at=T0 + 3, session=name, where=ev.Where.AGENT, message=ERROR),
        ev.CheckpointSaved(
            at=T0 + 4, session=name, number=1, origin=CheckpointOrigin.TAGGED, text=CHECKPOINT
        ),
        ev.PhaseChanged(
            at=T0 + 5,
            session=name,
            before=Phase.CHECKPOINTING,
            after=Phase.AWAITING_APPROVAL,
            trigger=Trigger.CHECKPOINT_FOR_APPROVAL,
        ),
        ev.ApprovalRequested(at=T0 + 5, session=name, checkpoint_number=1, reason="[u]hard[/u]"),
    ]


def assert_literal(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text


async def test_the_dashboard_shows_names_and_tasks_literally() -> None:
    app = make_app(RunState().apply_all(hostile_events()))
    async with app.run_test(size=(140, 30)):
        text = screen_text(app)
        assert "[i]evil[/i]" in text
        assert "[bold red]x[/] \u241b[2J" in text
        assert_literal(text)


async def test_the_approval_modal_shows_the_checkpoint_literally() -> None:
    app = make_app(FakeLiveSource(hostile_events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, ApprovalScreen)
        text = screen_text(app)
        assert (
            "See [link=https://example.com/x]the docs[/link] and [b]this[/b]\u241b]0;owned\u2407"
            in text
        )
        assert "[u]hard[/u]" in text
        assert "Restart [i]evil[/i] from checkpoint #1?" in text
        assert_literal(text)


async def test_the_detail_screen_and_its_log_show_agent_output_literally() -> None:
    app = make_app(RunState().apply_all(hostile_events()))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("enter", "l")
        text = screen_text(app)
        assert "[bold red]x[/] \u241b[2J" in text  # the task
        assert "\u241b[2J[blink]output[/blink]" in text  # a tool result excerpt
        assert "[red]Traceback[/red]: \u241b[1mboom\u241b[0m" in text  # an error
        assert_literal(text)


async def test_the_checkpoint_viewer_shows_the_checkpoint_literally() -> None:
    app = make_app(RunState().apply_all(hostile_events()))
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.press("enter", "c")
        # The viewer draws after the key is handled; on a busy machine the
        # first frame can come late, so wait for its text rather than read once.
        await eventually(
            lambda: "[link=https://example.com/x]the docs[/link]" in screen_text(app),
            what="the checkpoint viewer's text",
            seen=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "[link=https://example.com/x]the docs[/link]" in text
        assert "- ran `printf '\\x1b[31m'`" in text
        assert_literal(text)
