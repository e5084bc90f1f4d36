"""A worktree's base branch (`--base`, or `base` on a task or a profile), on real git: the
worktree starts from its tip, its changes are measured against the merge-base with it,
landing merges into it, and a base that cannot be had is refused in one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.run_view import RunState
from mala_tui.runtime.git.landing import LandingError, Target, land, status
from mala_tui.runtime.git.worktree import Worktree, WorktreeError, base_tip, create, create_all
from mala_tui.runtime.git.worktree_diffs import changes, compared_with
from mala_tui.runtime.git.worktree_journal import WorktreeTracker
from mala_tui.runtime.run.profiles import Profile, ProfileError, parse_profile
from mala_tui.runtime.run.task_plans import TaskFileError, plan_run, with_base
from tests.support.usage_events import started


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit_file(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


def repository(tmp_path: Path) -> Path:
    """`main` checked out, with a commit `feature` (branched before it) lacks."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("VERSION = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "branch", "feature")
    git(repo, "checkout", "-q", "feature")
    commit_file(repo, "FEATURE.md", "feature\n")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "MAIN.md", "main\n")
    return repo


def test_a_missing_base_branch_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    with pytest.raises(WorktreeError) as refused:
        base_tip(repo, "nope")
    assert str(refused.value) == f"base nope: no branch nope in {repo}"
    # A tag or a commit is not a branch to land on.
    git(repo, "tag", "v1")
    with pytest.raises(WorktreeError, match="no branch v1"):
        base_tip(repo, "v1")
    # The agent works where --cwd is: a base without that folder is refused too.
    (repo / "docs").mkdir()
    commit_file(repo, "docs/index.md", "docs\n")
    with pytest.raises(WorktreeError) as refused:
        base_tip(repo / "docs", "feature")
    assert str(refused.value).startswith("base feature: branch feature has no folder docs ")
    assert "\n" not in str(refused.value)
    # Nothing was made by any of it.
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_worktree_on_a_base_starts_from_its_tip_and_lands_into_it(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    main = git(repo, "rev-parse", "main")
    tip = git(repo, "rev-parse", "feature")
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees", "feature")
    assert (tree.base_commit, tree.base_branch, tree.base) == (tip, "feature", "feature")
    assert (tree.path / "FEATURE.md").is_file() and not (tree.path / "MAIN.md").exists()
    (tree.path / "src" / "app.py").write_text("VERSION = 2\n")
    record = RunState().apply_all(journaled(tree, []))
    worktree = record.sessions["fixer"].worktree
    assert worktree is not None and (worktree.base, worktree.base_branch) == ("feature", "feature")
    target = Target.of("fixer", worktree)
    left = status(target)
    assert left is not None and left.label == "uncommitted edits to land"

    landed = land(target, "Bump the version")
    assert (landed.into, landed.how, landed.in_checkout) == ("feature", "fast-forward", False)
    assert git(repo, "show", "feature:src/app.py") == "VERSION = 2"
    assert git(repo, "rev-parse", "main") == main  # the checked-out branch is left alone
    assert (repo / "src" / "app.py").read_text() == "VERSION = 1\n"
    assert git(repo, "status", "--porcelain") == ""


def test_landing_into_a_base_that_moved_to_a_conflict_is_refused(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees", "feature")
    (tree.path / "src" / "app.py").write_text("VERSION = 2\n")
    # Feature, checked out in a worktree of its own, moves on the same line meanwhile.
    other = tmp_path / "feature-checkout"
    git(repo, "worktree", "add", "-q", str(other), "feature")
    (other / "src" / "app.py").write_text("VERSION = 3\n")
    git(other, "commit", "-q", "-am", "three")
    refs = git(repo, "for-each-ref")
    worktree = RunState().apply_all(journaled(tree, [])).sessions["fixer"].worktree
    assert worktree is not None
    with pytest.raises(LandingError) as refused:
        land(Target.of("fixer", worktree), "Bump the version")
    assert str(refused.value) == (
        f"fixer: {tree.branch} conflicts with feature in src/app.py; nothing was changed "
        "(merge it by hand, or discard it)"
    )
    assert git(repo, "for-each-ref") == refs
    assert (other / "src" / "app.py").read_text() == "VERSION = 3\n"


def test_a_base_that_moved_cleanly_is_merged_in_its_own_checkout(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees", "feature")
    (tree.path / "src" / "app.py").write_text("VERSION = 2\n")
    other = tmp_path / "feature-checkout"
    git(repo, "worktree", "add", "-q", str(other), "feature")
    commit_file(other, "LATER.md", "later\n")
    worktree = RunState().apply_all(journaled(tree, [])).sessions["fixer"].worktree
    assert worktree is not None
    landed = land(Target.of("fixer", worktree), "Bump the version")
    assert (landed.into, landed.how, landed.in_checkout) == ("feature", "merge commit", True)
    assert (other / "src" / "app.py").read_text() == "VERSION = 2\n"  # its files followed
    assert (other / "LATER.md").is_file()


def test_changes_are_measured_against_the_merge_base_with_the_base(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    tree = create(repo, "run1", "fixer", tmp_path / "worktrees", "feature")
    (tree.path / "src" / "app.py").write_text("VERSION = 2\n")
    # Feature moves on, and the agent merges it into its branch: that commit is feature's
    # work, not the session's.
    git(repo, "checkout", "-q", "feature")
    later = commit_file(repo, "LATER.md", "later\n")
    git(repo, "checkout", "-q", "main")
    git(tree.path, "merge", "-q", "--ff-only", "feature")
    assert compared_with(tree.path, tree.base_commit, "feature") == later
    measured = {
        f.path for f in changes(tree.path, compared_with(tree.path, tree.base_commit, "feature"))
    }
    assert measured == {"src/app.py"}
    # Against the starting commit (a journal without a base), LATER.md would count too.
    assert compared_with(tree.path, tree.base_commit, "") == tree.base_commit
    assert {f.path for f in changes(tree.path, tree.base_commit)} == {"src/app.py", "LATER.md"}
    # The base branch gone: back to the starting commit.
    git(repo, "branch", "-D", "feature")
    assert compared_with(tree.path, tree.base_commit, "feature") == tree.base_commit

    recorded: list[ev.Event] = []
    tracker = WorktreeTracker({"fixer": tree}, recorded.append)
    git(repo, "branch", "feature", later)
    tracker(ev.SessionEnded(at=5.0, session="fixer", status=EndStatus.DONE))
    created, changed = recorded
    assert isinstance(created, ev.WorktreeCreated) and created.base == "feature"
    assert isinstance(changed, ev.WorktreeChanged)
    assert [f.path for f in changed.files] == ["src/app.py"]


def test_create_all_gives_each_session_its_own_base(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    made = create_all(
        [("on-feature", repo), ("on-main", repo)],
        "run1",
        tmp_path / "worktrees",
        bases={"on-feature": "feature"},
    )
    assert made["on-feature"].base_branch == "feature" and made["on-feature"].base == "feature"
    assert (made["on-main"].base_branch, made["on-main"].base) == ("main", "")
    assert made["on-main"].base_commit == git(repo, "rev-parse", "main")
    # One missing base: none is left made.
    with pytest.raises(WorktreeError, match="no branch nope"):
        create_all([("a", repo), ("b", repo)], "run2", tmp_path / "w2", bases={"b": "nope"})
    assert "run2" not in git(repo, "branch", "--list", "mala/*")


def test_an_old_journal_without_a_base_reads_as_before() -> None:
    line = {
        "type": "worktree_created",
        "at": 0.1,
        "session": "fixer",
        "path": "/w/fixer",
        "branch": "mala/run1/fixer",
        "base_commit": "a" * 40,
        "repository": "/repo",
        "base_branch": "main",
    }
    event = ev.parse_event(line)
    assert isinstance(event, ev.WorktreeCreated) and event.base == ""
    worktree = RunState().apply_all([event]).sessions["fixer"].worktree
    assert worktree is not None and (worktree.base, worktree.base_branch) == ("", "main")


def test_base_is_a_task_and_profile_key_and_the_command_lines_is_the_default(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(
        '[profile.release]\nbase = "release"\n\n'
        '[[task]]\nname = "a"\ntask = "t"\nprofile = "release"\n\n'
        '[[task]]\nname = "b"\ntask = "t"\nprofile = "release"\nbase = "hotfix"\n\n'
        '[[task]]\nname = "c"\ntask = "t"\n'
    )
    plans, profiles = plan_run([], path, tmp_path)
    assert profiles["release"].base == "release"
    assert [p.profile.base for p in plans] == ["release", "hotfix", ""]
    given = with_base(plans, "feature", worktree=True)
    assert [p.profile.base for p in given] == ["release", "hotfix", "feature"]
    # run.json keeps it in the task's profile: a resume makes a missing worktree there too.
    assert Profile.from_json(given[2].profile.to_json()).base == "feature"

    with pytest.raises(TaskFileError) as refused:
        with_base(plans, None, worktree=False)
    assert str(refused.value) == (
        "task a: base = 'release' needs --worktree (the base is where each worktree starts)"
    )
    with pytest.raises(TaskFileError, match=r"^--base needs --worktree"):
        with_base(plans[2:], "feature", worktree=False)
    assert with_base(plans[2:], None, worktree=False) == plans[2:]


@pytest.mark.parametrize("value", ["", "a b", "-x", "a\x1b[2Jb", 3, ["main"]])
def test_a_base_that_is_no_branch_name_is_refused(value: object) -> None:
    with pytest.raises(ProfileError, match=r"^base = .*: must be the name of a branch"):
        parse_profile({"base": value}, Path())


def test_a_bad_base_on_the_command_line_is_one_line() -> None:
    with pytest.raises(TaskFileError) as refused:
        with_base([], "a\nb", worktree=True)
    assert (
        str(refused.value) == "--base: base = 'a\\nb': must be the name of a branch, e.g. \"main\""
    )


def journaled(tree: Worktree, rest: list[ev.Event]) -> list[ev.Event]:
    """The events a worktree run journals for `tree` (as the tracker writes them)."""
    begun = started(tree.session, "claude-sonnet-4-5", cwd=str(tree.cwd))
    recorded: list[ev.Event] = [begun]
    WorktreeTracker({tree.session: tree}, recorded.append)(begun)
    return [*recorded, *rest]
