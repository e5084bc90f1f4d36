"""A session's worktree in the detail view, and its diff one key away."""

from __future__ import annotations

import subprocess
from pathlib import Path

from textual.widgets import RichLog

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.run_view import RunState
from mala_tui.runtime.git.worktree import create
from mala_tui.runtime.git.worktree_diffs import changes
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.screens.diff import DiffScreen
from tests.support.usage_events import started

from .helpers import make_app, open_session, screen_text


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def worktree_run(tmp_path: Path) -> RunState:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("VERSION = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees")
    (tree.path / "app.py").write_text("VERSION = 2\n")
    # Agent text is shown literally: markup and an escape sequence in a new file.
    (tree.path / "NOTES.md").write_text("[bold]not markup[/bold]\n\x1b[2Jstill here\n")
    files = tuple(
        ev.ChangedFile(path=f.path, added=f.added, deleted=f.deleted)
        for f in changes(tree.path, tree.base_commit)
    )
    return RunState().apply_all(
        [
            ev.RunStarted(at=0.0, run_id="run1", sessions=("fixer", "plain"), mode=ev.RunMode.RUN),
            started("fixer", "claude-sonnet-4-5", cwd=str(tree.cwd)),
            started("plain", "claude-sonnet-4-5"),
            ev.WorktreeCreated(
                at=0.1,
                session="fixer",
                path=str(tree.path),
                branch=tree.branch,
                base_commit=tree.base_commit,
                repository=str(repo),
            ),
            ev.SessionEnded(at=5.0, session="fixer", status=EndStatus.DONE),
            ev.WorktreeChanged(at=5.0, session="fixer", files=files),
        ]
    )


async def test_detail_says_where_and_what_changed_and_d_shows_the_diff(tmp_path: Path) -> None:
    state = worktree_run(tmp_path)
    tree = state.sessions["fixer"].worktree
    assert tree is not None
    app = make_app(state)
    async with app.run_test(size=(160, 44)) as pilot:
        await open_session(pilot, "fixer")
        await pilot.pause()
        text = screen_text(app)
        assert f"worktree {tree.path}" in text
        assert "branch mala/run1/fixer" in text
        assert "2 files changed, +3 -1 (d: diff)" in text
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        lines = [strip.text for strip in screen.query_one(RichLog).lines]
        assert "-VERSION = 1" in lines and "+VERSION = 2" in lines
        assert "+[bold]not markup[/bold]" in lines
        assert "+\u241b[2Jstill here" in lines  # ESC shown, not sent
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)


async def test_a_session_without_a_worktree_has_no_diff_key(tmp_path: Path) -> None:
    app = make_app(worktree_run(tmp_path))
    async with app.run_test(size=(160, 44)) as pilot:
        await open_session(pilot, "plain")
        await pilot.pause()
        assert "Worktree diff" not in screen_text(app)
        assert "worktree" not in screen_text(app).split("Event log")[0].lower()
        await pilot.press("d")
        assert isinstance(app.screen, DetailScreen)
