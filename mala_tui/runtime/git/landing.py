"""Finishing a worktree session's work in git: land it, push it for review, or discard it.

*Land*: what the agent left uncommitted becomes a commit on its branch, then the branch
is merged into the branch the run started from: a fast-forward when it can be, else a
merge commit. Where that branch is checked out cleanly, the merge happens there (its
files follow); where it is checked out nowhere, the branch moves without a checkout
(`git merge-tree --write-tree`, `commit-tree`, `update-ref`). Everything that can refuse
is tried first on objects alone (the commit of the edits, the merged tree), so a
conflict, a detached base or a checkout with uncommitted changes is refused with one
line and nothing changed: no branch moved, no file written.

*Push*: the branch goes to a remote for review, and a draft pull request is opened
(`runtime.git.pushing`, on the helpers here).

*Discard*: the worktree and its branch are removed; refused, unless forced, while the
branch has commits its base branch lacks or the worktree holds uncommitted edits.

Each returns the event to journal; recording it is the caller's (the command line
appends it to the run's journal, the app records it through its supervisor).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import BranchStatus, WorktreeRecord
from mala_tui.core.text import clean, for_git, plural
from mala_tui.runtime.git.worktree import (
    WorktreeError,
    has_uncommitted,
    last_line,
    run_git,
    said,
    working_tree,
)

#: git's exit status for an option it does not know (an older git's merge-tree).
GIT_USAGE_ERROR = 129


class LandingError(Exception):
    """Refused, or git failed: one line says why (and what, if anything, was done)."""


@dataclass(frozen=True)
class Target:
    """A worktree session's work, as its run journaled it."""

    session: str
    repository: Path
    path: Path
    branch: str
    base_branch: str
    """"" when the run started on a detached HEAD."""
    base_commit: str

    @classmethod
    def of(cls, session: str, record: WorktreeRecord) -> Target:
        return cls(
            session,
            Path(record.repository),
            Path(record.path),
            record.branch,
            record.base_branch,
            record.base_commit,
        )

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def base_ref(self) -> str:
        return f"refs/heads/{self.base_branch}"


def git_run(
    args: list[str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """git, whatever its exit status; a git that cannot run at all is a LandingError."""
    try:
        return run_git(args, cwd, stdin=stdin)
    except WorktreeError as exc:
        raise LandingError(str(exc)) from None


def git_output(
    target: Target, *args: str, cwd: Path | None = None, stdin: str | None = None
) -> str:
    """git in the repository (or `cwd`); a failure is a LandingError with git's reason.

    `stdin` (a commit message) has its control characters removed first: it is the agent's
    text, and `git log` would print an escape in it to whoever reads the history."""
    where = cwd or target.repository
    done = git_run(list(args), where, None if stdin is None else for_git(stdin))
    if done.returncode != 0:
        raise LandingError(f"git {args[0]} in {where}: {last_line(done)}")
    return done.stdout.strip()


def resolve(target: Target, ref: str) -> str | None:
    """The commit `ref` names, or None when there is no such ref."""
    done = git_run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], target.repository)
    return done.stdout.strip() if done.returncode == 0 else None


def _is_ancestor(target: Target, older: str, newer: str) -> bool:
    done = git_run(["merge-base", "--is-ancestor", older, newer], target.repository)
    if done.returncode > 1:
        raise LandingError(f"git merge-base in {target.repository}: {last_line(done)}")
    return done.returncode == 0


def _count(target: Target, since: str, until: str) -> int:
    return int(git_output(target, "rev-list", "--count", f"{since}..{until}") or 0)


def _worktree_there(target: Target) -> bool:
    return target.path.is_dir()


def _uncommitted(target: Target) -> bool:
    if not _worktree_there(target):
        return False
    try:
        return has_uncommitted(target.path)
    except WorktreeError as exc:
        raise LandingError(str(exc)) from None


def status(target: Target) -> BranchStatus | None:
    """Where the session's work stands now; None when its branch is gone.

    Raises:
        LandingError: git cannot read the repository.
    """
    tip = resolve(target, target.branch_ref)
    if tip is None:
        return None
    base = resolve(target, target.base_ref) if target.base_branch else None
    ahead = _count(target, base or target.base_commit, tip)
    uncommitted = _uncommitted(target)
    merged = base is not None and ahead == 0 and tip != target.base_commit
    return BranchStatus(ahead, uncommitted, merged=merged)


def refresh_statuses(run: RunState) -> None:
    """Read each worktree session's branch status from git into the view (what `show` and
    the cards say); a session whose repository cannot be read keeps what the journal said."""
    for session in run.sessions.values():
        record = session.worktree
        if record is None or (record.status is not None and record.status.discarded):
            continue
        try:
            now = status(Target.of(session.name, record))
        except LandingError:
            continue
        if now is not None:
            session.set_branch_status(now)


def _checkouts(target: Target) -> dict[str, Path]:
    """Where each branch is checked out, by ref (`git worktree list`)."""
    found: dict[str, Path] = {}
    path: Path | None = None
    for line in git_output(target, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line.startswith("branch ") and path is not None:
            found[line.removeprefix("branch ")] = path
    return found


def edits_commit(target: Target, message: str) -> str | None:
    """A commit of the worktree as it is, on top of its branch, not yet on any branch;
    None when nothing is uncommitted. Only objects are written: nothing moves yet."""
    if not _uncommitted(target):
        return None
    head = resolve(target, target.branch_ref)
    if head is None:
        raise LandingError(f"branch {target.branch} is gone")
    try:
        tree = working_tree(target.path)
    except WorktreeError as exc:
        raise LandingError(str(exc)) from None
    return git_output(target, "commit-tree", tree, "-p", head, "-F", "-", stdin=message)


def adopt(target: Target, commit: str) -> None:
    """Move the session's branch to the commit of its edits, and its index with it (the
    files already match: the commit was made of them)."""
    head = resolve(target, target.branch_ref) or ""
    reason = "mala-tui: commit the agent's edits"
    git_output(target, "update-ref", "-m", reason, target.branch_ref, commit, head)
    git_output(target, "read-tree", "HEAD", cwd=target.path)


@dataclass(frozen=True)
class _Merge:
    tip: str
    how: Literal["fast-forward", "merge commit"]


def _plan_merge(target: Target, base: str, head: str, message: str) -> _Merge:
    """The base branch's new tip, made as objects only; a conflict is refused here."""
    if _is_ancestor(target, base, head):
        return _Merge(head, "fast-forward")
    done = git_run(
        ["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", base, head],
        target.repository,
    )
    parts = [part for part in done.stdout.split("\0") if part]
    if done.returncode == GIT_USAGE_ERROR:
        raise LandingError(
            f"{target.session}: merging {target.branch} into {target.base_branch} needs "
            "git 2.38 or newer (git merge-tree --write-tree); nothing was changed"
        )
    if done.returncode == 1:
        # The file names are the agent's choice: shown literally, on the one line.
        files = [clean(name, one_line=True) for name in dict.fromkeys(parts[1:])]
        raise LandingError(
            f"{target.session}: {target.branch} conflicts with {target.base_branch} in "
            f"{', '.join(files) or 'its files'}; nothing was changed (merge it by hand, or "
            f"discard it)"
        )
    if done.returncode != 0 or not parts:
        raise LandingError(f"git merge-tree in {target.repository}: {last_line(done)}")
    merged = git_output(
        target, "commit-tree", parts[0], "-p", base, "-p", head, "-F", "-", stdin=message
    )
    return _Merge(merged, "merge commit")


def land(target: Target, message: str, *, now: float | None = None) -> ev.WorktreeLanded:
    """Commit the agent's uncommitted edits with `message`, then merge its branch into the
    base branch (see the module's docstring).

    Raises:
        LandingError: refused (detached base, base branch or session branch gone, nothing
            to land, a conflict, the base checked out with uncommitted changes), nothing
            changed; or git failed (the line says what was done before).
    """
    if not target.base_branch:
        raise LandingError(
            f"{target.session}: the run started on a detached HEAD (at {target.base_commit[:10]}), "
            f"so there is no branch to land on; merge {target.branch} by hand, or push it with --pr"
        )
    base = resolve(target, target.base_ref)
    if base is None:
        raise LandingError(f"{target.session}: the base branch {target.base_branch} is gone")
    if resolve(target, target.branch_ref) is None:
        raise LandingError(f"{target.session}: branch {target.branch} is gone")
    edits = edits_commit(target, message)
    head = edits or resolve(target, target.branch_ref) or ""
    if _is_ancestor(target, head, base):
        raise LandingError(
            f"{target.session}: nothing to land: {target.branch} is already in {target.base_branch}"
        )
    commits = _count(target, base, head)
    merge_message = f"Merge branch '{target.branch}' into {target.base_branch}\n\n{message}"
    merge = _plan_merge(target, base, head, merge_message)
    checkout = _checkouts(target).get(target.base_ref)
    if checkout is not None:
        try:
            dirty = has_uncommitted(checkout, untracked=False)
        except WorktreeError as exc:
            raise LandingError(str(exc)) from None
        if dirty:
            raise LandingError(
                f"{target.session}: {target.base_branch} is checked out at {checkout} with "
                "uncommitted changes; commit or stash them, then land again (nothing was changed)"
            )
    # Nothing has moved so far. The base branch moves first: if git refuses that, the
    # session's branch is left as it was too.
    if checkout is not None:
        _merge_in(target, checkout, merge.tip)
    else:
        reason = f"mala-tui: land {target.branch}"
        git_output(target, "update-ref", "-m", reason, target.base_ref, merge.tip, base)
    if edits is not None:
        adopt(target, edits)
    return ev.WorktreeLanded(
        at=time.time() if now is None else now,
        session=target.session,
        branch=target.branch,
        into=target.base_branch,
        how=merge.how,
        commit=merge.tip,
        commits=commits,
        committed=edits or "",
        in_checkout=checkout is not None,
    )


def _merge_in(target: Target, checkout: Path, tip: str) -> None:
    """Fast-forward the clean checkout of the base branch to its new tip (its files follow)."""
    done = git_run(["merge", "--ff-only", "--quiet", tip], checkout)
    if done.returncode != 0:
        raise LandingError(
            f"{target.session}: git merge in {checkout} refused: {said(done)} (nothing was changed)"
        )


def discard(target: Target, *, force: bool, now: float | None = None) -> ev.WorktreeDiscarded:
    """Remove the session's worktree and branch.

    Raises:
        LandingError: unless `force`, the branch has commits the base branch lacks or the
            worktree holds uncommitted edits (nothing is removed then); the worktree's
            folder holds another branch; or git failed.
    """
    state = status(target)
    unmerged = state.ahead if state is not None else 0
    uncommitted = _uncommitted(target)
    if not force and (unmerged or uncommitted):
        left = []
        if unmerged:
            where = (
                target.base_branch or f"the commit the run started from ({target.base_commit[:10]})"
            )
            left.append(f"{plural(unmerged, 'commit')} not in {where}")
        if uncommitted:
            left.append("uncommitted edits")
        raise LandingError(
            f"{target.session}: {target.branch} has {' and '.join(left)}; land it first, "
            "or discard --force to drop them (nothing was removed)"
        )
    checked_out = {path.resolve(): ref for ref, path in _checkouts(target).items()}
    other = checked_out.get(target.path.resolve()) if _worktree_there(target) else None
    if other is not None and other != target.branch_ref:
        raise LandingError(
            f"{target.session}: {target.path} holds {other.removeprefix('refs/heads/')}, "
            f"not {target.branch}; nothing was removed"
        )
    if _worktree_there(target):
        git_output(target, "worktree", "remove", "--force", str(target.path))
    else:
        git_output(target, "worktree", "prune")
    if state is not None:
        git_output(target, "branch", "-D", target.branch)
    return ev.WorktreeDiscarded(
        at=time.time() if now is None else now,
        session=target.session,
        branch=target.branch,
        path=str(target.path),
        unmerged_commits=unmerged,
        uncommitted=uncommitted,
    )
