"""Landing, pushing and discarding a worktree session's work, on real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mala_tui.runtime.git.landing import LandingError, Target, discard, land, status
from mala_tui.runtime.git.pushing import push
from mala_tui.runtime.git.worktree import Worktree, create


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(path: Path) -> str:
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("VERSION = 1\nprint('hi')\n")
    (path / "README.md").write_text("# demo\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Landing Test")
    git(path, "config", "user.email", "landing@example.com")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return git(path, "rev-parse", "HEAD")


def target_of(worktree: Worktree) -> Target:
    return Target(
        worktree.session,
        worktree.repository,
        worktree.path,
        worktree.branch,
        worktree.base_branch,
        worktree.base_commit,
    )


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    make_repo(path)
    return path


def session(repo: Path, name: str) -> Target:
    return target_of(create(repo, "run1", name, repo.parent / "worktrees"))


def test_uncommitted_edits_are_committed_then_fast_forwarded_in_the_clean_checkout(
    repo: Path,
) -> None:
    target = session(repo, "a")
    (target.path / "NOTES.md").write_text("notes\n")
    (target.path / "src" / "app.py").write_text("VERSION = 2\nprint('hi')\n")
    before = status(target)
    assert before is not None and before.label == "uncommitted edits to land"

    landed = land(target, "Bump the version\n\nAnd take notes.\n", now=5.0)

    assert (landed.how, landed.into, landed.commits, landed.in_checkout) == (
        "fast-forward",
        "main",
        1,
        True,
    )
    assert landed.commit == landed.committed == git(repo, "rev-parse", "main")
    assert git(repo, "log", "-1", "--format=%B", "main") == "Bump the version\n\nAnd take notes."
    assert git(repo, "log", "-1", "--format=%an", "main") == "Landing Test"
    # The checkout's files followed, and both it and the session's worktree are clean.
    assert (repo / "NOTES.md").read_text() == "notes\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(target.path, "status", "--porcelain") == ""
    assert git(target.path, "rev-parse", "HEAD") == landed.committed
    after = status(target)
    assert after is not None and after.merged and after.label == "merged"


def test_a_second_session_lands_as_a_merge_commit_on_the_moved_branch(repo: Path) -> None:
    first, second = session(repo, "a"), session(repo, "b")
    (first.path / "A.md").write_text("a\n")
    (second.path / "B.md").write_text("b\n")
    git(second.path, "add", "-A")
    git(second.path, "commit", "-q", "-m", "the agent's own commit")
    (second.path / "src" / "app.py").write_text("VERSION = 1\nprint('bye')\n")
    land(first, "First\n")
    landed = land(second, "Second\n")
    assert (landed.how, landed.commits) == ("merge commit", 2)
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    assert parents == [git(repo, "rev-parse", "main~1"), landed.committed]
    assert git(repo, "log", "-1", "--format=%s", "main") == (
        f"Merge branch '{second.branch}' into main"
    )
    assert (repo / "A.md").is_file() and (repo / "B.md").is_file()
    assert "bye" in (repo / "src" / "app.py").read_text()
    assert git(repo, "status", "--porcelain") == ""


def test_without_a_checkout_of_the_base_branch_it_moves_by_update_ref(repo: Path) -> None:
    target = session(repo, "a")
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "MINE.md").write_text("the person's own work, untouched\n")
    (target.path / "A.md").write_text("a\n")
    landed = land(target, "Land it\n")
    assert not landed.in_checkout
    assert git(repo, "rev-parse", "main") == landed.commit
    assert git(repo, "branch", "--show-current") == "elsewhere"
    assert not (repo / "A.md").exists()  # the checkout on the other branch was left alone
    assert git(repo, "status", "--porcelain") == "?? MINE.md"


def test_a_conflict_is_refused_naming_the_files_and_nothing_changes(repo: Path) -> None:
    first, second = session(repo, "a"), session(repo, "b")
    (first.path / "src" / "app.py").write_text("VERSION = 2\nprint('hi')\n")
    (second.path / "src" / "app.py").write_text("VERSION = 3\nprint('hi')\n")
    (second.path / "README.md").write_text("# changed too, without a conflict\n")
    land(first, "First\n")
    before = refs(repo)
    worktree_before = git(second.path, "status", "--porcelain")

    with pytest.raises(LandingError) as refused:
        land(second, "Second\n")

    assert str(refused.value) == (
        f"b: {second.branch} conflicts with main in src/app.py; nothing was changed "
        "(merge it by hand, or discard it)"
    )
    assert refs(repo) == before
    assert git(second.path, "status", "--porcelain") == worktree_before
    assert "VERSION = 3" in (second.path / "src" / "app.py").read_text()
    assert git(repo, "status", "--porcelain") == ""


def test_a_run_started_on_a_detached_head_is_refused(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    with pytest.raises(LandingError, match="the run started on a detached HEAD"):
        land(target, "x\n")
    assert git(target.path, "status", "--porcelain") == "?? A.md"


def test_a_base_checkout_with_uncommitted_changes_is_refused(repo: Path) -> None:
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    (repo / "README.md").write_text("# the person's edit\n")
    before = refs(repo)
    with pytest.raises(LandingError, match=r"main is checked out at .* with uncommitted changes"):
        land(target, "x\n")
    assert refs(repo) == before
    assert git(target.path, "status", "--porcelain") == "?? A.md"


def test_landing_what_is_already_in_the_base_branch_is_refused(repo: Path) -> None:
    target = session(repo, "a")
    with pytest.raises(LandingError, match=r"nothing to land: .* is already in main"):
        land(target, "x\n")
    (target.path / "A.md").write_text("a\n")
    land(target, "x\n")
    with pytest.raises(LandingError, match="nothing to land"):
        land(target, "again\n")


def test_discard_refuses_unmerged_work_without_force(repo: Path) -> None:
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    git(target.path, "add", "-A")
    git(target.path, "commit", "-q", "-m", "work")
    (target.path / "B.md").write_text("b\n")
    with pytest.raises(LandingError) as refused:
        discard(target, force=False)
    assert str(refused.value) == (
        f"a: {target.branch} has 1 commit not in main and uncommitted edits; land it first, "
        "or discard --force to drop them (nothing was removed)"
    )
    assert target.path.is_dir() and (target.path / "B.md").is_file()

    dropped = discard(target, force=True, now=9.0)

    assert (dropped.unmerged_commits, dropped.uncommitted, dropped.at) == (1, True, 9.0)
    assert not target.path.exists()
    assert git(repo, "branch", "--list", target.branch) == ""
    assert str(target.path) not in git(repo, "worktree", "list")


def test_a_landed_session_is_discarded_without_force(repo: Path) -> None:
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    land(target, "x\n")
    dropped = discard(target, force=False)
    assert (dropped.unmerged_commits, dropped.uncommitted) == (0, False)
    assert not target.path.exists() and (repo / "A.md").is_file()


def test_discard_of_a_worktree_removed_by_hand_drops_its_branch(repo: Path) -> None:
    target = session(repo, "a")
    git(repo, "worktree", "remove", str(target.path))
    discard(target, force=False)
    assert git(repo, "branch", "--list", target.branch) == ""
    assert status(target) is None


def bare_remote(repo: Path) -> Path:
    remote = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    return remote


def path_without_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding git and nothing else (so no gh)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "git").symlink_to(real_git)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def test_push_without_gh_verifies_the_remote_and_gives_the_command(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = bare_remote(repo)
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    path_without_gh(tmp_path, monkeypatch)
    body_file = tmp_path / "run" / "pr" / "a.md"

    event = push(target, "Add A\n\nbody\n", "## Completed Work\n- A\n", body_file)

    assert event.commit == event.committed == git(remote, "rev-parse", target.branch)
    assert (event.remote, event.pr_url) == ("origin", "")
    assert event.pr_command == (
        f"gh pr create --draft --head {target.branch} --title 'Add A' --base main "
        f"--body-file {body_file}"
    )
    assert body_file.read_text() == "## Completed Work\n- A\n"
    assert git(repo, "rev-parse", "main") == target.base_commit  # nothing merged here
    assert git(target.path, "status", "--porcelain") == ""


def test_push_with_gh_opens_a_draft_pr_with_the_body(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare_remote(repo)
    target = session(repo, "a")
    git(target.path, "commit", "-q", "--allow-empty", "-m", "work")
    bin_dir = path_without_gh(tmp_path, monkeypatch)
    asked = tmp_path / "gh-args"
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\nfor a in "$@"; do echo "$a"; done > {asked}\n'
        "echo https://github.com/o/r/pull/7\n"
    )
    gh.chmod(0o755)

    pushed = push(target, "Work\n", "the checkpoint\n", tmp_path / "pr.md")

    assert (pushed.pr_url, pushed.pr_command, pushed.committed) == (
        "https://github.com/o/r/pull/7",
        "",
        "",
    )
    args = asked.read_text().splitlines()
    assert args[:4] == ["pr", "create", "--draft", "--head"]
    assert args[args.index("--body-file") + 1] == str(tmp_path / "pr.md")


def test_push_without_a_remote_is_refused_before_anything(repo: Path, tmp_path: Path) -> None:
    target = session(repo, "a")
    (target.path / "A.md").write_text("a\n")
    with pytest.raises(LandingError, match="has no remote to push to"):
        push(target, "x\n", "b\n", tmp_path / "pr.md")
    assert git(target.path, "status", "--porcelain") == "?? A.md"


def test_a_git_too_old_for_merge_tree_is_named(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = session(repo, "a"), session(repo, "b")
    (first.path / "A.md").write_text("a\n")
    (second.path / "B.md").write_text("b\n")
    land(first, "First\n")
    bin_dir = path_without_gh(tmp_path, monkeypatch)
    real = (bin_dir / "git").resolve()
    (bin_dir / "git").unlink()
    (bin_dir / "git").write_text(  # as git 2.37 answers `merge-tree --write-tree`
        f'#!/bin/sh\nif [ "$1" = merge-tree ]; then echo "usage: git merge-tree" >&2; exit 129; fi\n'
        f'exec {real} "$@"\n'
    )
    (bin_dir / "git").chmod(0o755)
    before = refs(repo)
    with pytest.raises(LandingError, match=r"needs git 2\.38 or newer"):
        land(second, "Second\n")
    assert refs(repo) == before
