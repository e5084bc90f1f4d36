"""A git worktree per agent, on real repositories: made, measured, and refused clearly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.git.worktree import (
    WorktreeError,
    base_of,
    branch_name,
    commits_ahead,
    create,
    create_all,
    has_uncommitted,
    repository_root,
)
from mala_tui.runtime.git.worktree_diffs import FileChange, changes, diff_text
from mala_tui.runtime.git.worktree_journal import WorktreeTracker


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def make_repo(path: Path) -> str:
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("VERSION = 1\nprint('hi')\n")
    (path / "README.md").write_text("# demo\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return git(path, "rev-parse", "HEAD").strip()


def test_not_a_repository_is_refused_with_the_folder_named(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError, match=rf"{tmp_path} is not in a git repository"):
        repository_root(tmp_path)


def test_a_repository_without_a_commit_is_refused(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(WorktreeError, match="has no commit yet"):
        repository_root(tmp_path)


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError, match="is not a folder"):
        repository_root(tmp_path / "nope")


def test_without_git_on_path_the_error_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(WorktreeError, match="needs git, and git is not on PATH"):
        repository_root(tmp_path)


def test_branch_names_are_safe_refs() -> None:
    assert branch_name("20261123-1-ab", "task-1") == "mala/20261123-1-ab/task-1"
    # A name that had to change keeps a short hash of the original: never two alike.
    assert branch_name("r", "fix: the ~parser^").startswith("mala/r/fix-the-parser-")
    assert branch_name("r", "..").startswith("mala/r/session-")
    assert branch_name("r", "..") != branch_name("r", ".")


#: Names that read alike once made safe, or that no folder or ref can take as they are.
HOSTILE_NAMES = (
    ["a/b", "a-b", "a b", "a:b"],
    [".", "..", "...", "-", ""],
    ["x" * 300, "x" * 301, "é" * 200],
    ["a..b", "b.lock", "-lead", "@{x}", "c.", "d/", "HEAD", "a\\b", "tab\there"],
)


@pytest.mark.parametrize("names", HOSTILE_NAMES, ids=["alike", "dots", "long", "ref-rules"])
def test_every_name_gets_its_own_safe_bounded_branch_and_folder(
    tmp_path: Path, names: list[str]
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    parent = tmp_path / "run" / "worktrees"
    made = create_all([(name, repo) for name in names], "20261123-1-ab", parent)
    assert set(made) == set(names)
    branches = {worktree.branch for worktree in made.values()}
    folders = {worktree.path for worktree in made.values()}
    assert len(branches) == len(folders) == len(names)
    listed = git(repo, "branch", "--list", "mala/*", "--format=%(refname:short)").split()
    assert set(listed) == branches
    for worktree in made.values():
        assert worktree.path.parent == parent  # inside the run's folder, never above it
        assert len(worktree.path.name) <= 80 and len(worktree.branch) <= 120
        assert (worktree.path / "src" / "app.py").is_file()


def test_create_checks_out_the_current_commit_on_a_new_branch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    worktree = create(repo / "src", "run1", "task-1", tmp_path / "worktrees")
    assert worktree.base_commit == base
    assert worktree.branch == "mala/run1/task-1"
    assert worktree.path == tmp_path / "worktrees" / "task-1"
    assert worktree.cwd == worktree.path / "src"  # the same place inside the repository
    assert (worktree.cwd / "app.py").read_text().startswith("VERSION = 1")
    assert git(worktree.path, "branch", "--show-current").strip() == "mala/run1/task-1"
    assert "mala/run1/task-1" in git(repo, "branch", "--list", "mala/*")


def test_changes_count_edits_new_deleted_and_binary_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    worktree = create(repo, "run1", "a", tmp_path / "wt")
    (worktree.path / "src" / "app.py").write_text("VERSION = 2\nprint('hi')\nprint('bye')\n")
    (worktree.path / "NOTES.md").write_text("one\ntwo\nthree\n")
    (worktree.path / "README.md").unlink()
    (worktree.path / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    found = {change.path: change for change in changes(worktree.path, base)}
    assert found == {
        "src/app.py": FileChange("src/app.py", 2, 1),
        "NOTES.md": FileChange("NOTES.md", 3, 0),
        "README.md": FileChange("README.md", 0, 1),
        "blob.bin": FileChange("blob.bin", None, None),
    }
    # Measuring staged nothing in the worktree's own index.
    assert git(worktree.path, "diff", "--cached", "--name-only") == ""
    assert "?? NOTES.md" in git(worktree.path, "status", "--porcelain")
    text = diff_text(worktree.path, base)
    assert "+VERSION = 2" in text and "-VERSION = 1" in text and "+three" in text
    # Commits the agent made count too: the base is the starting commit, not HEAD.
    git(worktree.path, "add", "-A")
    git(worktree.path, "commit", "-q", "-m", "agent's work")
    assert {c.path for c in changes(worktree.path, base)} == set(found)
    assert changes(repo, base) == ()  # the original checkout is untouched


def test_changes_of_a_removed_worktree_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError, match="is gone"):
        changes(tmp_path / "gone", "HEAD")


def test_create_all_removes_what_it_made_when_one_fails(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError, match="not in a git repository"):
        create_all([("a", repo), ("b", plain)], "run1", tmp_path / "wt")
    assert not (tmp_path / "wt" / "a").exists()
    assert git(repo, "branch", "--list", "mala/*") == ""


def test_an_existing_branch_is_an_error_not_a_reuse(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    create(repo, "run1", "a", tmp_path / "wt")
    with pytest.raises(WorktreeError, match="mala/run1/a"):
        create(repo, "run1", "a", tmp_path / "wt2")


def test_tracker_journals_the_worktree_and_its_changes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    worktree = create(repo, "run1", "a", tmp_path / "wt")
    recorded: list[ev.Event] = []
    tracker = WorktreeTracker({"a": worktree}, recorded.append)
    tracker(
        ev.SessionStarted(
            at=1.0,
            session="a",
            task="t",
            cwd=str(worktree.cwd),
            window=200_000,
            soft_threshold=0.4,
            hard_threshold=0.8,
            max_restarts=1,
            require_approval=False,
        )
    )
    (worktree.path / "NEW.md").write_text("x\n")
    tracker(ev.SessionEnded(at=2.0, session="a", status=EndStatus.DONE))
    tracker(ev.SessionEnded(at=2.0, session="other", status=EndStatus.DONE))
    created, changed = recorded
    assert isinstance(created, ev.WorktreeCreated) and created.base_commit == base
    assert created.path == str(worktree.path) and created.branch == "mala/run1/a"
    assert isinstance(changed, ev.WorktreeChanged)
    assert changed.files == (ev.ChangedFile(path="NEW.md", added=1, deleted=0),)
    assert (changed.commits_ahead, changed.uncommitted) == (0, True)
    assert created.base_branch == "main"


def test_create_records_the_branch_the_run_started_from(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    assert create(repo, "run1", "a", tmp_path / "wt").base_branch == "feature"
    git(repo, "checkout", "-q", "--detach")
    assert create(repo, "run1", "b", tmp_path / "wt").base_branch == ""


def test_commits_ahead_count_against_the_base_branch_as_it_is_now(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    worktree = create(repo, "run1", "a", tmp_path / "wt")
    assert commits_ahead(worktree.path, base_of(worktree)) == 0
    assert not has_uncommitted(worktree.path)
    (worktree.path / "NEW.md").write_text("x\n")
    assert has_uncommitted(worktree.path)  # a new file is work too
    git(worktree.path, "add", "-A")
    git(worktree.path, "commit", "-q", "-m", "one")
    assert not has_uncommitted(worktree.path)
    assert commits_ahead(worktree.path, base_of(worktree)) == 1
    git(repo, "merge", "-q", "--ff-only", worktree.branch)  # landed by hand
    assert commits_ahead(worktree.path, base_of(worktree)) == 0


def test_the_tracker_keeps_the_files_when_the_base_branch_is_gone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    worktree = create(repo, "run1", "a", tmp_path / "wt")
    git(repo, "checkout", "-q", "--detach")
    git(repo, "branch", "-D", "main")
    recorded: list[ev.Event] = []
    (worktree.path / "NEW.md").write_text("x\n")
    WorktreeTracker({"a": worktree}, recorded.append)(
        ev.SessionEnded(at=2.0, session="a", status=EndStatus.DONE)
    )
    # It ended without having started (queued, or the run stopped during its start-up):
    # its worktree is journaled all the same, as it ends.
    created, changed = recorded
    assert isinstance(created, ev.WorktreeCreated) and created.branch == worktree.branch
    assert isinstance(changed, ev.WorktreeChanged)
    assert [f.path for f in changed.files] == ["NEW.md"] and changed.error == ""
    assert changed.commits_ahead is None and changed.uncommitted is None


def test_a_fork_starts_from_the_parents_commits_and_uncommitted_edits(tmp_path: Path) -> None:
    from mala_tui.runtime.git.worktree import fork

    repo = tmp_path / "repo"
    start = make_repo(repo)
    parent = create(repo / "src", "run1", "parent", tmp_path / "trees")
    (parent.path / "NOTES.md").write_text("committed\n")
    git(parent.path, "add", "-A")
    git(parent.path, "commit", "-q", "-m", "notes")
    # Uncommitted: an edit, a new file, a deletion; and an ignored file, which stays.
    (parent.path / "src" / "app.py").write_text("VERSION = 2\n")
    (parent.path / "NEW.md").write_text("new\n")
    (parent.path / "README.md").unlink()
    (parent.path / ".gitignore").write_text("*.log\n")
    (parent.path / "debug.log").write_text("noise\n")

    child = fork(parent, "run1", "parent-fork1", tmp_path / "trees")
    assert child.path == tmp_path / "trees" / "parent-fork1"
    assert child.cwd == child.path / "src"  # where the parent's agent works, in the fork
    assert child.branch == "mala/run1/parent-fork1"
    assert (child.base_commit, child.base_branch) == (start, "main")
    assert git(child.path, "log", "-1", "--format=%s").strip() == "notes"
    assert (child.path / "src" / "app.py").read_text() == "VERSION = 2\n"
    assert (child.path / "NEW.md").read_text() == "new\n"
    assert not (child.path / "README.md").exists()
    assert not (child.path / "debug.log").exists()
    # The edits are the fork's to commit or land, as they were the parent's.
    status = sorted(git(child.path, "status", "--porcelain").splitlines())
    assert status == sorted([" D README.md", " M src/app.py", "?? .gitignore", "?? NEW.md"])
    assert commits_ahead(child.path, base_of(child)) == 1
    # The parent is as it was.
    assert (parent.path / "README.md").exists() is False
    assert (parent.path / "debug.log").exists()
    with pytest.raises(WorktreeError, match="already exists"):
        fork(parent, "run1", "parent-fork1", tmp_path / "trees")
