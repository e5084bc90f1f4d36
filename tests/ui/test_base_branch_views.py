"""A worktree session on a base branch (`run --worktree --base feature`) in the app, on real
git: `L` lands it into that branch, not the one checked out, and its diff is against the
merge-base with that branch."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import RichLog

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.runtime.git.worktree import Worktree, commits_ahead, create, has_uncommitted
from mala_tui.runtime.git.worktree_diffs import changes, compared_with
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.diff import DiffScreen
from tests.support.usage_events import started

from .helpers import make_app, open_session, screen_text
from .test_landing_keys import focus, git, land_dialog, settled


def on_feature(tmp_path: Path) -> tuple[Path, Worktree, FakeLiveSource]:
    """`main` checked out and moved on after `feature` branched; `fixer` ended with
    uncommitted edits in a worktree started from `feature`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("VERSION = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "branch", "feature")
    (repo / "MAIN.md").write_text("main\n")
    git(repo, "add", "MAIN.md")
    git(repo, "commit", "-q", "-m", "main moves on")
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees", "feature")
    (tree.path / "app.py").write_text("VERSION = 2\n")
    since = compared_with(tree.path, tree.base_commit, tree.base)
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id="run1", sessions=("fixer",), mode=ev.RunMode.RUN),
        started("fixer", "claude-sonnet-4-5", cwd=str(tree.cwd)).model_copy(
            update={"task": "Bump the version to 2"}
        ),
        ev.WorktreeCreated(
            at=0.1,
            session="fixer",
            path=str(tree.path),
            branch=tree.branch,
            base_commit=tree.base_commit,
            repository=str(repo),
            base_branch=tree.base_branch,
            base=tree.base,
        ),
        ev.SessionEnded(at=5.0, session="fixer", status=EndStatus.DONE),
        ev.WorktreeChanged(
            at=5.0,
            session="fixer",
            files=tuple(
                ev.ChangedFile(path=f.path, added=f.added, deleted=f.deleted)
                for f in changes(tree.path, since)
            ),
            commits_ahead=commits_ahead(tree.path, "refs/heads/feature"),
            uncommitted=has_uncommitted(tree.path),
        ),
    ]
    return repo, tree, FakeLiveSource(events)


async def test_l_lands_into_the_base_branch_and_leaves_main_alone(tmp_path: Path) -> None:
    repo, tree, source = on_feature(tmp_path)
    main = git(repo, "rev-parse", "main")
    app = make_app(source)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        await focus(app.screen, "fixer")
        await pilot.press("L")
        await land_dialog(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "mala/run1/fixer into feature" in text
        assert "uncommitted edits to land" in text
        await pilot.press("ctrl+s")
        await settled(pilot)
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        landed = [e for e in source.state.sessions["fixer"].log if isinstance(e, ev.WorktreeLanded)]
        assert len(landed) == 1 and landed[0].into == "feature"
    assert git(repo, "show", "feature:app.py") == "VERSION = 2"
    assert git(repo, "rev-parse", "main") == main
    assert (repo / "app.py").read_text() == "VERSION = 1\n"
    assert tree.path.is_dir()


async def test_the_diff_is_against_the_merge_base_with_the_base(tmp_path: Path) -> None:
    repo, tree, source = on_feature(tmp_path)
    # The agent merged main in: main's commit is in its branch, yet not its work.
    git(tree.path, "merge", "-q", "--no-edit", "main")
    git(repo, "branch", "-f", "feature", "main")  # and feature has it since, too
    app = make_app(source)
    async with app.run_test(size=(160, 44)) as pilot:
        await open_session(pilot, "fixer")
        await pilot.pause()
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await settled(pilot)  # the diff read (the run's own worker lasts as long as it)
        assert "against the merge-base with feature" in screen_text(app)
        lines = [strip.text for strip in screen.query_one(RichLog).lines]
        assert "-VERSION = 1" in lines and "+VERSION = 2" in lines
        assert not any("MAIN.md" in line for line in lines)
