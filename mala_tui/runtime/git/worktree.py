"""One git worktree per agent: each session edits its own checkout, on its own branch.

Agents given the same folder edit the same files. With `--worktree` each session
gets `git worktree add` of the repository's current commit, on a branch named
after the run and the session, under the run's folder; the worktrees and
branches are kept after the run, for the person to review, merge or delete.

With a base branch (`--base`) the worktree starts from that branch's tip, landing
merges into it, and what changed is measured against the merge-base with it; else
against the commit the worktree started from. Either way with a throwaway index
(`GIT_INDEX_FILE`) so files the agent created count too and the worktree's own index is
never touched.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mala_tui.core.text import clean

BRANCH_PREFIX: Final = "mala"
GIT_TIMEOUT_SECONDS: Final = 60
_UNSAFE_REF = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
NAME_CHARS: Final = 60
"""A session's part of its branch and folder names is at most this long (a hash aside)."""


class WorktreeError(Exception):
    """A worktree that cannot be made or read; the message says which folder and why."""


@dataclass(frozen=True)
class Worktree:
    session: str
    repository: Path
    """The top level of the repository it was made from."""
    path: Path
    """The worktree's top level."""
    cwd: Path
    """Where the agent works: the same place inside the worktree as `--cwd` in the repository."""
    branch: str
    base_commit: str
    base_branch: str = ""
    """The branch checked out where the run started, or the one named by `base` (what
    landing merges into); "" when that checkout was on a detached HEAD."""
    base: str = ""
    """The branch the session was told to start from (`--base`); "" when none was."""


def run_git(
    args: Sequence[str], cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run git, whatever its exit status; only a git that cannot run at all raises.

    Raises:
        WorktreeError: git is not on PATH, cannot be started, or timed out.
    """
    if shutil.which("git") is None:
        raise WorktreeError("--worktree needs git, and git is not on PATH")
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=env,
            input=stdin,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git {' '.join(args)} in {cwd}: {exc}") from None


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    """What a failed git said last (its reason), or "failed"."""
    message = done.stderr.strip().splitlines()
    return message[-1] if message else "failed"


def said(done: subprocess.CompletedProcess[str]) -> str:
    """Everything a failed git said, on one line (its reason may span several)."""
    return " ".join(line.strip() for line in done.stderr.splitlines() if line.strip()) or "failed"


def _git(
    args: Sequence[str], cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> str:
    """Run git and return its output; every failure becomes a WorktreeError naming the folder."""
    done = run_git(args, cwd, env, stdin)
    if done.returncode != 0:
        raise WorktreeError(f"git {' '.join(args)} in {cwd}: {last_line(done)}")
    return done.stdout


def repository_root(cwd: Path) -> tuple[Path, str]:
    """The repository `cwd` is in and its current commit.

    Raises:
        WorktreeError: no git, `cwd` is not a folder or not in a repository, or the
            repository has no commit yet to start from.
    """
    if not cwd.is_dir():
        raise WorktreeError(f"--worktree: {cwd} is not a folder")
    try:
        top = _git(["rev-parse", "--show-toplevel"], cwd).strip()
    except WorktreeError:
        if shutil.which("git") is None:
            raise
        raise WorktreeError(
            f"--worktree: {cwd} is not in a git repository (each agent gets a worktree of "
            "the repository; run without --worktree, or `git init` and commit first)"
        ) from None
    try:
        commit = _git(["rev-parse", "--verify", "HEAD^{commit}"], cwd).strip()
    except WorktreeError:
        raise WorktreeError(
            f"--worktree: the repository at {top} has no commit yet; commit once first"
        ) from None
    return Path(top), commit


def current_branch(cwd: Path) -> str:
    """The branch checked out at `cwd` (short name), or "" on a detached HEAD."""
    try:
        return _git(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd).strip()
    except WorktreeError:
        return ""  # detached: symbolic-ref exits 1 with nothing to say


def safe_name(session: str) -> str:
    """The session's name as a branch's last part and a folder's name: safe, bounded, unique.

    What a ref or a file name cannot hold (a slash, a space, `..`, a leading dot or dash,
    a trailing `.lock`) becomes '-', and it is cut at NAME_CHARS. A name that had to
    change gains a short hash of the original, so `a/b` and `a-b`, or `.` and `..`, never
    share a branch or a folder, and none is `.`, `..` or past a file name's length.
    """
    cleaned = _DOTS.sub("-", _UNSAFE_REF.sub("-", session))[:NAME_CHARS].strip(".-")
    if cleaned.lower().endswith(".lock"):
        cleaned = cleaned[: -len(".lock")] + "-lock"
    if cleaned and cleaned == session:
        return cleaned
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned or 'session'}-{digest}"


def branch_name(run_id: str, session: str) -> str:
    """`mala/<run id>/<session's safe name>` (see `safe_name`)."""
    return f"{BRANCH_PREFIX}/{run_id}/{safe_name(session)}"


def base_tip(cwd: Path, base: str) -> str:
    """The commit at the tip of the branch `base` in `cwd`'s repository, once it is sure the
    session can start there: the branch exists and has the folder `cwd` is (the agent works
    in the same place inside the worktree).

    Raises:
        WorktreeError: as `repository_root`, or no such branch, or no such folder on it.
    """
    repository, _ = repository_root(cwd)
    shown = clean(base, one_line=True)
    ref = f"refs/heads/{base}"
    done = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repository)
    if done.returncode != 0 or not done.stdout.strip():
        raise WorktreeError(f"base {shown}: no branch {shown} in {repository}")
    tip = done.stdout.strip()
    inside = cwd.resolve().relative_to(repository.resolve()).as_posix()
    if inside != ".":
        folder = f"{tip}:{inside}^{{tree}}"
        there = run_git(["rev-parse", "--verify", "--quiet", folder], repository)
        if there.returncode != 0:
            raise WorktreeError(
                f"base {shown}: branch {shown} has no folder {clean(inside, one_line=True)} "
                f"(where the agent would work, as in {cwd})"
            )
    return tip


def create(cwd: Path, run_id: str, session: str, parent: Path, base: str = "") -> Worktree:
    """A new worktree of `cwd`'s repository in `parent/<session>`: at its current commit, or
    with `base`, at that branch's tip (and landing on it).

    Raises:
        WorktreeError: as `repository_root` and `base_tip`, or the branch or folder already
            exists.
    """
    repository, commit = repository_root(cwd)
    into = current_branch(cwd)
    if base:
        commit, into = base_tip(cwd, base), base
    branch = branch_name(run_id, session)
    path = parent / safe_name(session)
    parent.mkdir(parents=True, exist_ok=True)
    _git(["worktree", "add", "--quiet", "-b", branch, str(path), commit], repository)
    inside = cwd.resolve().relative_to(repository.resolve())
    return Worktree(session, repository, path, path / inside, branch, commit, into, base)


def fork(parent: Worktree, run_id: str, session: str, folder: Path) -> Worktree:
    """A new worktree for a session forked from `parent`'s: on a branch of its own from
    `parent`'s HEAD, with `parent`'s uncommitted edits (new files included, ignored ones
    not) left uncommitted in it too, in `folder/<session>`. Its changes and what it has to
    land are counted from where the run started, as `parent`'s are.

    Raises:
        WorktreeError: `parent` is gone, or the branch or folder already exists.
    """
    head = _git(["rev-parse", "--verify", "HEAD^{commit}"], parent.path).strip()
    edits = working_tree(parent.path)
    branch = branch_name(run_id, session)
    path = folder / safe_name(session)
    folder.mkdir(parents=True, exist_ok=True)
    _git(["worktree", "add", "--quiet", "-b", branch, str(path), head], parent.repository)
    if edits != _git(["rev-parse", f"{head}^{{tree}}"], path).strip():
        # From HEAD's files to the edited ones (deletions too), then the index back to
        # HEAD: the edits are in the files, not staged, as they were in `parent`.
        _git(["read-tree", "-m", "-u", "HEAD", edits], path)
        _git(["read-tree", "HEAD"], path)
    inside = parent.cwd.relative_to(parent.path)
    return Worktree(
        session,
        parent.repository,
        path,
        path / inside,
        branch,
        parent.base_commit,
        parent.base_branch,
        parent.base,
    )


def working_tree(path: Path) -> str:
    """The tree of everything in the worktree at `path` now, untracked files included
    (ignored ones not), written to the object store without touching its index.

    Raises:
        WorktreeError: the worktree is gone or git cannot read it.
    """
    return scratch_index_git(path, ["write-tree"]).strip()


def commits_ahead(path: Path, base: str) -> int:
    """Commits of the worktree's HEAD that `base` (a branch or a commit) does not have.

    Raises:
        WorktreeError: the worktree is gone or git cannot read it.
    """
    return int(_git(["rev-list", "--count", f"{base}..HEAD"], path).strip() or 0)


def has_uncommitted(path: Path, *, untracked: bool = True) -> bool:
    """Whether the checkout at `path` holds edits not committed: new files included (ignored
    ones not), unless `untracked` is False (then only changes to files git tracks count).

    Raises:
        WorktreeError: the folder is gone or git cannot read it.
    """
    if not path.is_dir():
        raise WorktreeError(f"worktree {path} is gone")
    which = "--untracked-files=all" if untracked else "--untracked-files=no"
    return bool(_git(["status", "--porcelain", which], path).strip())


def base_of(worktree: Worktree) -> str:
    """What the worktree's commits are counted against: its base branch, else its start."""
    return f"refs/heads/{worktree.base_branch}" if worktree.base_branch else worktree.base_commit


def scratch_index_git(path: Path, args: Sequence[str]) -> str:
    """Stage everything into a throwaway index, run `args` against it, drop it."""
    if not path.is_dir():
        raise WorktreeError(f"worktree {path} is gone")
    with tempfile.TemporaryDirectory(prefix="mala-index-") as scratch:
        env = dict(os.environ, GIT_INDEX_FILE=str(Path(scratch) / "index"))
        _git(["read-tree", "HEAD"], path, env)
        _git(["add", "--all", "--", "."], path, env)
        return _git(["-c", "diff.renames=false", *args], path, env)


def create_all(
    plans: Sequence[tuple[str, Path]],
    run_id: str,
    parent: Path,
    *,
    until: Callable[[], bool] = lambda: False,
    bases: Mapping[str, str] | None = None,
) -> dict[str, Worktree]:
    """A worktree per (session, cwd), from the session's branch in `bases` when it has one;
    on a failure the ones already made are removed again.

    Once `until()` is true (the run was stopped meanwhile) no more are made, and the ones
    made are returned: the run journals them.

    Raises:
        WorktreeError: as `create`.
    """
    made: dict[str, Worktree] = {}
    try:
        for session, cwd in plans:
            if until():
                break
            made[session] = create(cwd, run_id, session, parent, (bases or {}).get(session, ""))
    except WorktreeError:
        for worktree in made.values():
            remove(worktree)
        raise
    return made


def remove(worktree: Worktree) -> None:
    """Remove a worktree and its branch (only for ones a failed start left behind)."""
    try:
        _git(["worktree", "remove", "--force", str(worktree.path)], worktree.repository)
        _git(["branch", "-D", worktree.branch], worktree.repository)
    except WorktreeError:
        pass  # best effort: the start is failing anyway, and says why
