"""Landing and discarding a worktree session's work from the app, on real git.

The run is the fake live source (no agent runs), but its sessions' worktrees are real
ones of a real repository, and the app's landings do the real git work: what is
checked is the repository afterwards, the journaled event, and what the card says.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Static, TextArea

from mala_tui.config import Settings, UiSettings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.runtime.git.worktree import Worktree, commits_ahead, create, has_uncommitted
from mala_tui.runtime.git.worktree_diffs import changes
from mala_tui.ui.app import MalaApp
from mala_tui.ui.screens.confirm import ConfirmScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.land import LandScreen
from mala_tui.ui.widgets.session_card import state_text
from tests.support.usage_events import started

from .helpers import make_app, notifications, screen_text


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("VERSION = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def session_events(tree: Worktree, *, ended: bool, checkpoint: str = "") -> list[ev.Event]:
    """A session that worked in `tree`: started, maybe a checkpoint, maybe ended (with its
    changes measured as the run's tracker measures them)."""
    name = tree.session
    found: list[ev.Event] = [
        started(name, "claude-sonnet-4-5", cwd=str(tree.cwd)).model_copy(
            update={"task": TASKS.get(name, "t")}
        ),
        ev.WorktreeCreated(
            at=0.1,
            session=name,
            path=str(tree.path),
            branch=tree.branch,
            base_commit=tree.base_commit,
            repository=str(tree.repository),
            base_branch=tree.base_branch,
        ),
    ]
    if checkpoint:
        found.append(
            ev.CheckpointSaved(
                at=3.0, session=name, number=1, origin=CheckpointOrigin.TAGGED, text=checkpoint
            )
        )
    if ended:
        found += [
            ev.SessionEnded(at=5.0, session=name, status=EndStatus.DONE),
            ev.WorktreeChanged(
                at=5.0,
                session=name,
                files=tuple(
                    ev.ChangedFile(path=f.path, added=f.added, deleted=f.deleted)
                    for f in changes(tree.path, tree.base_commit)
                ),
                commits_ahead=commits_ahead(tree.path, tree.base_branch),
                uncommitted=has_uncommitted(tree.path),
            ),
        ]
    return found


TASKS = {"fixer": "Bump the version to 2", "writer": "Write two notes"}

CHECKPOINT = """\
## Goal
Bump the version.

## Completed Work
- Set VERSION to 2 in app.py
"""


def two_sessions(tmp_path: Path) -> tuple[Path, FakeLiveSource, Worktree, Worktree]:
    """`fixer` ended with uncommitted edits; `writer` ended with two commits of its own."""
    repo = repository(tmp_path)
    worktrees = tmp_path / "worktrees"
    fixer = create(repo, "run1", "fixer", worktrees)
    (fixer.path / "app.py").write_text("VERSION = 2\n")
    writer = create(repo, "run1", "writer", worktrees)
    for number in (1, 2):
        (writer.path / f"notes{number}.md").write_text(f"note {number}\n")
        git(writer.path, "add", "-A")
        git(writer.path, "commit", "-q", "-m", f"note {number}")
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id="run1", sessions=("fixer", "writer"), mode=ev.RunMode.RUN),
        *session_events(fixer, ended=True, checkpoint=CHECKPOINT),
        *session_events(writer, ended=True),
    ]
    return repo, FakeLiveSource(events), fixer, writer


async def settled(pilot: Pilot[int]) -> None:
    """Every worker done but the run's own (which lasts as long as the run), then a frame."""
    workers = [w for w in pilot.app.workers if w.group != "supervisor"]
    if workers:  # an empty list would mean every worker
        await pilot.app.workers.wait_for_complete(workers)
    await pilot.pause()


async def land_dialog(pilot: Pilot[int]) -> LandScreen:
    """The land dialog once it has read what is left to land (its worker may start only
    once the dialog is mounted, after the key press returns)."""
    for _ in range(500):
        await settled(pilot)
        screen = pilot.app.screen
        if isinstance(screen, LandScreen):
            said = str(screen.query_one("#status", Static).content)
            if not said.startswith("reading"):
                return screen
    raise AssertionError("the land dialog never said what is left to land")


async def focus(app_screen: object, name: str) -> None:
    assert isinstance(app_screen, DashboardScreen)
    card = app_screen.card(name)
    assert card is not None
    card.focus()


async def test_l_lands_with_the_drafted_message_edited_and_the_card_says_merged(
    tmp_path: Path,
) -> None:
    repo, source, _, _ = two_sessions(tmp_path)
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "fixer")
        await pilot.pause()
        assert "uncommitted edits to land" in screen_text(app)
        await pilot.press("L")
        dialog = await land_dialog(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "mala/run1/fixer into main" in text
        message = dialog.query_one("#message", TextArea)
        # Drafted from the task and the checkpoint's "Completed Work".
        assert message.text.startswith("Bump the version to 2\n\n- Set VERSION to 2 in app.py\n")
        message.text = "Bump the version to 2\n\nAs the task asked.\n"
        await pilot.press("ctrl+s")
        await settled(pilot)
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert (repo / "app.py").read_text() == "VERSION = 2\n"  # main's checkout followed
        assert git(repo, "log", "-1", "--format=%s", "main") == "Bump the version to 2"
        landed = [e for e in source.state.sessions["fixer"].log if isinstance(e, ev.WorktreeLanded)]
        assert len(landed) == 1 and landed[0].how == "fast-forward" and landed[0].in_checkout
        snapshot = source.state.sessions["fixer"].snapshot()
        assert state_text(snapshot).endswith("\u00b7 merged")
        assert "merged" in screen_text(app)
        assert any(note.startswith("Landed: fixer: landed 1 commit") for note in notifications(app))
        # Nothing is left to land: a second L is refused, and says why.
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("nothing to land (merged)" in note for note in notifications(app))


async def test_a_refused_landing_says_why_in_the_dialog_and_changes_nothing(
    tmp_path: Path,
) -> None:
    repo, source, _, _ = two_sessions(tmp_path)
    (repo / "README.md").write_text("edited by hand, not committed\n")
    git(repo, "add", "README.md")  # main's checkout holds a change not committed
    before = git(repo, "rev-parse", "main")
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "writer")
        await pilot.press("L")
        await land_dialog(pilot)
        assert "2 commits to land" in screen_text(app)
        await pilot.press("ctrl+s")
        await settled(pilot)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, LandScreen)  # still open, saying why
        said = str(dialog.query_one("#error", Static).content)
        assert said.startswith("writer: main is checked out at ")
        assert "with uncommitted changes" in said and "(nothing was changed)" in said
        assert git(repo, "rev-parse", "main") == before
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_d_asks_before_dropping_unmerged_commits_then_removes_worktree_and_branch(
    tmp_path: Path,
) -> None:
    repo, source, _, writer = two_sessions(tmp_path)
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "writer")
        await pilot.press("delete")
        await settled(pilot)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "2 commits not in main" in screen_text(app)
        await pilot.press("n")  # no: nothing goes
        await pilot.pause()
        assert writer.path.is_dir() and git(repo, "branch", "--list", writer.branch)
        await pilot.press("delete")
        await settled(pilot)
        await pilot.pause()
        await pilot.press("y")
        await settled(pilot)
        await pilot.pause()
        assert not writer.path.exists()
        assert git(repo, "branch", "--list", writer.branch) == ""
        discarded = [
            e for e in source.state.sessions["writer"].log if isinstance(e, ev.WorktreeDiscarded)
        ]
        assert len(discarded) == 1 and discarded[0].unmerged_commits == 2
        assert "discarded" in state_text(source.state.sessions["writer"].snapshot())


async def test_a_merged_session_is_discarded_only_once_asked_too(tmp_path: Path) -> None:
    repo, source, _, writer = two_sessions(tmp_path)
    git(repo, "merge", "-q", "--ff-only", writer.branch)
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "writer")
        await pilot.press("delete")
        await settled(pilot)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)  # nothing to lose, asked all the same
        said = str(dialog.query_one("#body", Static).content)
        assert said.startswith(f"Its branch {writer.branch}: merged, so no work is lost.")
        await pilot.press("n")
        await settled(pilot)
        assert writer.path.is_dir()
        await pilot.press("delete")
        await settled(pilot)
        await pilot.pause()
        await pilot.press("y")
        await settled(pilot)
        assert not writer.path.exists()


async def test_capital_d_detaches_on_an_ended_worktree_session_and_discards_nothing(
    tmp_path: Path,
) -> None:
    """D once discarded the focused session's worktree, without asking, when it had one;
    it detached elsewhere. Now it only detaches, and discarding is its own key."""
    repo, source, _, writer = two_sessions(tmp_path)
    git(repo, "merge", "-q", "--ff-only", writer.branch)  # nothing to lose: was not asked
    app = make_app(source)
    app.attached = True
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "writer")
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "D Detach" in footer and "del Discard" in footer
        await pilot.press("D")
        await settled(pilot)
    assert app.detached and app.return_code == 0
    assert writer.path.is_dir() and git(repo, "branch", "--list", writer.branch)
    assert not any(isinstance(e, ev.WorktreeDiscarded) for e in source.state.sessions["writer"].log)


async def test_land_and_discard_are_refused_while_the_session_runs(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    tree = create(repo, "run1", "busy", tmp_path / "worktrees")
    (tree.path / "app.py").write_text("VERSION = 3\n")
    source = FakeLiveSource(
        [
            ev.RunStarted(at=0.0, run_id="run1", sessions=("busy",), mode=ev.RunMode.RUN),
            *session_events(tree, ended=False),
        ]
    )
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "busy")
        for key in ("L", "delete"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, DashboardScreen)
        said = [note for note in notifications(app) if "still running" in note]
        assert len(said) == 2
        assert tree.path.is_dir() and (tree.path / "app.py").read_text() == "VERSION = 3\n"
        assert git(repo, "rev-parse", "main") == tree.base_commit
        # The runtime refuses too, whatever a console offers.
        try:
            await source.landings.land("busy", "x")
        except Exception as exc:
            assert "still running" in str(exc)
        else:
            raise AssertionError("a running session was landed")


async def test_sessions_without_a_worktree_are_not_offered_land_or_discard() -> None:
    app = make_app(FakeLiveSource())
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Land" not in text and "Discard" not in text
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_a_finished_run_shown_from_its_journal_lands_and_journals_it(
    tmp_path: Path,
) -> None:
    """`mala-tui show`'s app: the run is over, the journal is reopened for the event."""
    from mala_tui.core.run_view import RunState
    from mala_tui.runtime.journal.writer import RunJournal, read_events
    from mala_tui.runtime.run.landings import FinishedRun

    repo = repository(tmp_path)
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees")
    (tree.path / "app.py").write_text("VERSION = 2\n")
    events = [
        ev.RunStarted(at=0.0, run_id="run1", sessions=("fixer",), mode=ev.RunMode.RUN),
        *session_events(tree, ended=True, checkpoint=CHECKPOINT),
        ev.RunEnded(at=6.0, run_id="run1", ok=True),
    ]
    with RunJournal.create(tmp_path / "data", "run1", {}) as journal:
        for event in events:
            journal.write(event)
    folder = journal.directory
    state = RunState(run_id="run1").apply_all(events)
    app = MalaApp(
        state,
        settings=Settings(ui=UiSettings(theme="mala-dark")),
        finished=FinishedRun(folder, state),
    )
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "fixer")
        await pilot.press("L")
        await land_dialog(pilot)
        await pilot.press("ctrl+s")
        await settled(pilot)
        assert isinstance(app.screen, DashboardScreen)
        assert "merged" in screen_text(app)
    assert git(repo, "show", "main:app.py") == "VERSION = 2"
    journaled = read_events(folder / "events.jsonl").events
    assert isinstance(journaled[-1], ev.WorktreeLanded)
    assert journaled[-1].session == "fixer" and journaled[-1].into == "main"
