"""A console's run after it has ended (its host gone with it), the keys' one meaning each,
the footer from 80 columns up, and the header's clock.

The console here is the real one (`RemoteRun`) on a real journal, and its run's host is
gone: its socket does not exist, as after `mala-tui demo` says "Run over". Every request
that would go to the host then fails as it does there (`ChannelError`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.app import App
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Input, Static

from mala_tui.config import Settings, UiSettings
from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0
from mala_tui.runtime.consoles.live_run import RemoteRun
from mala_tui.runtime.consoles.sockets import HostRecord
from mala_tui.runtime.git.worktree import Worktree, create
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.ui.app import MalaApp
from mala_tui.ui.format import run_status
from mala_tui.ui.screens.confirm import ConfirmScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.fork import ForkScreen
from mala_tui.ui.screens.help import HelpScreen
from mala_tui.ui.screens.leave import LeaveScreen
from mala_tui.ui.screens.message import MessageScreen
from tests.support.polling import eventually

from .helpers import notifications, open_session, screen_text
from .test_landing_keys import CHECKPOINT, git, repository, session_events, settled

GONE = "the run's host cannot be reached"


def journaled_run(tmp_path: Path, *, ended: bool) -> tuple[Path, Path, Worktree]:
    """A `--worktree` run's journal: `fixer` ended with an uncommitted edit, `writer` still
    running; with `ended`, both ended and the run too (its `run_ended`). The run's folder,
    the repository, and fixer's worktree."""
    repo = repository(tmp_path)
    fixer = create(repo, "run1", "fixer", tmp_path / "worktrees")
    (fixer.path / "app.py").write_text("VERSION = 2\n")
    writer = create(repo, "run1", "writer", tmp_path / "worktrees")
    events: list[ev.Event] = [
        ev.RunStarted(at=T0, run_id="run1", sessions=("fixer", "writer"), mode=ev.RunMode.RUN),
        *(e.model_copy(update={"at": T0 + e.at}) for e in session_events(fixer, ended=True)),
        *(e.model_copy(update={"at": T0 + e.at}) for e in session_events(writer, ended=ended)),
        ev.CheckpointSaved(
            at=T0 + 3, session="fixer", number=1, origin=CheckpointOrigin.TAGGED, text=CHECKPOINT
        ),
    ]
    if ended:
        events.append(ev.RunEnded(at=T0 + 74, run_id="run1", ok=True))
    with RunJournal.create(tmp_path / "data", "run1", {}) as journal:
        for event in events:
            journal.write(event)
    return journal.directory, repo, fixer


def console(folder: Path, tmp_path: Path, *, clock: float = T0 + 80) -> MalaApp:
    """The app as `mala-tui attach` (or a foreground run) opens it, on a run whose host's
    socket is gone."""
    remote = RemoteRun(folder, HostRecord(tmp_path / "gone.sock", pid=0, run_id="run1"))
    remote.replay()
    return MalaApp(
        remote,
        settings=Settings(ui=UiSettings(theme="mala-dark")),
        clock=lambda: clock,
        attached=True,
    )


def every_key() -> list[str]:
    """Every key of the app (Textual's own included) and of its main screen, each once."""
    bindings = [*App.BINDINGS, *MalaApp.BINDINGS, *DashboardScreen.BINDINGS]
    keys = {"ctrl+p"}  # the command palette's, which Textual adds itself
    for binding in bindings:
        assert isinstance(binding, Binding)
        keys.update(key.strip() for key in binding.key.split(","))
    return sorted(keys)


NEEDS_THE_RUN = {"a", "P", "n", "D", "t", "p", "x", "m", "r", "v", "V", "g", "o", "X", "f", "h"}
"""Keys that act through the run's host: hidden once it has ended."""
LEAVE = {"q", "ctrl+q"}


async def back_to_the_card(pilot: Pilot[int], name: str) -> None:
    """Close whatever a key opened, and focus the session's card again."""
    app = pilot.app
    for _ in range(10):
        if isinstance(app.screen, DashboardScreen):
            break
        await pilot.press("escape")
        await settled(pilot)
    dashboard = app.screen
    assert isinstance(dashboard, DashboardScreen)
    if isinstance(dashboard.focused, Input):
        await pilot.press("escape")
    card = dashboard.card(name)
    assert card is not None
    card.focus()
    await pilot.pause()


async def test_every_key_on_an_ended_run_works_is_hidden_or_says_why(tmp_path: Path) -> None:
    """`n` after "Run over" was a traceback (`GET /profiles` to a host that is gone) and
    exit status 1; p, x, m and t did nothing, silently."""
    folder, repo, fixer = journaled_run(tmp_path, ended=True)
    app = console(folder, tmp_path)
    keys = every_key()
    assert {"a", "n", "D", "delete", "L", "enter", "question_mark", "ctrl+c"} <= set(keys)
    async with app.run_test(size=(160, 44)) as pilot:
        await eventually(lambda: any("Run over" in n for n in notifications(app)))
        assert not app.controller.live
        for key in sorted(set(keys) - LEAVE):
            await back_to_the_card(pilot, "fixer")
            offered = app.screen.active_bindings.get(key)
            await pilot.press(key)
            await settled(pilot)
            assert app.is_running and app.return_code is None, key
            if key in NEEDS_THE_RUN:
                assert offered is None, f"{key} is offered on an ended run"
        assert fixer.path.is_dir()  # delete asked, and escape said no
        # What still works does, without the host: discarding, asked first.
        await back_to_the_card(pilot, "fixer")
        await pilot.press("delete")
        await settled(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settled(pilot)
        assert not fixer.path.exists()
        footer = screen_text(app).splitlines()[-1]
        assert "q Quit" in footer and "? Help" in footer
        assert "Detach" not in footer and "Message" not in footer and "New session" not in footer
        await pilot.press("q")  # every session done: it just leaves
        await settled(pilot)
    assert app.return_code == 0 and not app.detached
    journaled = read_events(folder / "events.jsonl").events
    assert isinstance(journaled[-1], ev.WorktreeDiscarded)
    assert git(repo, "branch", "--list", fixer.branch) == ""


@pytest.mark.parametrize("key", sorted(LEAVE))
async def test_quitting_an_ended_run_leaves_with_status_0(tmp_path: Path, key: str) -> None:
    folder, _, _ = journaled_run(tmp_path, ended=True)
    app = console(folder, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await eventually(lambda: not app.controller.live, what="the run seen over")
        await pilot.press(key)
        await settled(pilot)
    assert app.return_code == 0


async def test_a_host_gone_unnoticed_is_said_at_each_key_never_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment between the host going and the console seeing it (or a host killed that
    the stream has not noticed): every request fails, and each key says so. `f` then
    ctrl+s once crashed the app here."""
    folder, _, _ = journaled_run(tmp_path, ended=False)
    app = console(folder, tmp_path)
    remote = app.controller.supervisor
    assert isinstance(remote, RemoteRun)

    async def follows_forever() -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(remote, "run", follows_forever)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        assert app.controller.live
        for key in ("n", "p", "m", "v", "V", "g", "o", "r"):
            await back_to_the_card(pilot, "writer")
            app.clear_notifications()
            await pilot.press(key)
            await settled(pilot)
            assert app.is_running, key
            assert any(GONE in note for note in notifications(app)), key
        for key, dialog in (("x", ConfirmScreen), ("X", ConfirmScreen)):
            await back_to_the_card(pilot, "writer")
            app.clear_notifications()
            await pilot.press(key)
            await settled(pilot)
            assert isinstance(app.screen, dialog)
            await pilot.press("y")
            await settled(pilot)
            assert any(GONE in note for note in notifications(app)), key
        for key, box in (("t", MessageScreen), ("f", ForkScreen)):
            await back_to_the_card(pilot, "writer")
            await pilot.press(key)
            await settled(pilot)
            assert isinstance(app.screen, box)
            await pilot.press("h", "i", "ctrl+s")
            await settled(pilot)
            assert isinstance(app.screen, box)  # still open, saying why
            said = app.screen.query_one("#error", Static).content
            assert str(said).startswith(GONE)
        await back_to_the_card(pilot, "writer")
        await open_session(pilot, "writer", "b")
        await settled(pilot)
        assert app.is_running and any(GONE in note for note in notifications(app))
        await back_to_the_card(pilot, "writer")
        await pilot.press("q")  # writer still runs: a console asks
        await settled(pilot)
        assert isinstance(app.screen, LeaveScreen)
        await pilot.press("s")  # stop the run: nothing answers, so it just leaves
        await settled(pilot)
    assert app.return_code == 0


async def test_the_footer_keeps_the_keys_that_matter_from_80_columns(tmp_path: Path) -> None:
    """At 160 columns the footer was cut at "D De", hiding Detach and q."""
    for width in (80, 160):
        app = MalaApp(
            FakeLiveSource(), settings=Settings(ui=UiSettings(theme="mala-dark")), attached=True
        )
        async with app.run_test(size=(width, 40)) as pilot:
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            for shown in ("⏎ Open", "a Approvals", "? Help", "D Detach", "q Quit", "^p palette"):
                assert shown in footer, (width, shown, footer)
            assert "Permissions" not in footer  # none waits: `P` says so when pressed
            assert "Land" not in footer and "Discard" not in footer  # no worktrees
            if width == 160:
                for shown in ("t Message", "p Pause/resume", "x Stop", "m Mask now"):
                    assert shown in footer, (width, shown, footer)
            await open_session(pilot, "parser-fix")
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            for shown in ("esc Back", "a Approvals", "? Help", "D Detach", "q Quit"):
                assert shown in footer, (width, shown, footer)
            if width == 160:
                assert "l Event log" in footer
    folder, _, _ = journaled_run(tmp_path, ended=False)
    source = FakeLiveSource(list(read_events(folder / "events.jsonl").events))
    app = MalaApp(source, settings=Settings(ui=UiSettings(theme="mala-dark")), attached=True)
    async with app.run_test(size=(80, 40)) as pilot:
        await back_to_the_card(pilot, "fixer")
        footer = screen_text(app).splitlines()[-1]
        for shown in ("⏎ Open", "? Help", "D Detach", "q Quit", "L Land", "del Discard"):
            assert shown in footer, (shown, footer)


async def test_the_header_shows_the_runs_age_then_ended(tmp_path: Path) -> None:
    """It counted from when this console opened (`live · 0:03` for a run an hour old), and
    went on ticking, still `live`, after the run had ended."""
    now = [T0 + 3725.0]
    source = FakeLiveSource()
    app = MalaApp(
        source,
        settings=Settings(ui=UiSettings(theme="mala-dark")),
        clock=lambda: now[0],
        attached=True,
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()

        def header() -> str:
            return screen_text(app).splitlines()[0]

        await eventually(lambda: "· live · 1:02:05 " in header(), seen=header)
        now[0] += 10
        await eventually(lambda: "· live · 1:02:15 " in header(), seen=header)
        source.record(ev.RunEnded(at=T0 + 700, run_id="20250615-sample", ok=True))
        source.stop_all()  # its run() returns, as a console's does at the run's end
        await eventually(lambda: "· ended · 11:40 " in header(), seen=header)
        assert "live" not in header()
        assert "Detach" not in screen_text(app).splitlines()[-1]
        # It stops there: how long the run ran, whatever the time now.
        later = run_status(source.state, now[0] + 3600, live=app.controller.live)
        assert later == "ended · 11:40"
    # An ended run read back says so too.
    folder, _, _ = journaled_run(tmp_path, ended=True)
    app = console(folder, tmp_path, clock=T0 + 99_999)
    async with app.run_test(size=(140, 40)) as pilot:
        await eventually(lambda: "· ended · 1:14 " in screen_text(app).splitlines()[0])


async def test_help_says_what_ctrl_q_and_q_do(tmp_path: Path) -> None:
    app = MalaApp(FakeLiveSource(), settings=Settings(ui=UiSettings(theme="mala-dark")))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "Quit  the same as q" in text and "command prompt" not in text
        assert "Quit  leave; while sessions run" in text


async def test_a_console_whose_terminal_closes_after_the_run_ended_leaves(tmp_path: Path) -> None:
    """SIGHUP after the run's end: a detach, which an ended run no longer offers, did
    nothing, and the app spun on a terminal that was gone (seen at 25% CPU for an hour)."""
    folder, _, _ = journaled_run(tmp_path, ended=True)
    app = console(folder, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await eventually(lambda: not app.controller.live, what="the run seen over")
        app.close_console()  # what the console's SIGHUP handler asks of it
        await settled(pilot)
    assert app.return_code == 0 and not app.detached
