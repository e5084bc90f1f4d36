"""Work in progress kept aside: a snapshot of a session's worktree after every turn.

A session on a cluster's host works in a worktree on that host's own disk
(runtime.cluster.mirror). So that a lost host loses at most one turn of file changes, the host
commits the whole working tree (untracked files included, ignored ones not) after each
turn to a side ref, `refs/mala/wip/<run>/<session>`, and pushes it to the repository:
never a commit on the agent's branch, never its index (a throwaway index is used), its
parent the branch's tip. When the session restarts on another host, its worktree is made
again from the snapshot: the agent's commits as they were, its edits since as edits not
yet committed (`restore`; the driver makes its own the same way once the session ends).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from mala_tui.core.text import for_git
from mala_tui.runtime.git.worktree import (
    _git,
    run_git,
    safe_name,
    working_tree,
)

WIP_PREFIX: Final = "refs/mala/wip"
_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "mala-tui",
    "GIT_AUTHOR_EMAIL": "mala-tui@localhost",
    "GIT_COMMITTER_NAME": "mala-tui",
    "GIT_COMMITTER_EMAIL": "mala-tui@localhost",
}


def wip_ref(run_id: str, session: str) -> str:
    """`refs/mala/wip/<run id>/<session's safe name>`."""
    return f"{WIP_PREFIX}/{run_id}/{safe_name(session)}"


def snapshot(cwd: Path, ref: str, message: str) -> str | None:
    """Commit the working tree `cwd` is in to `ref` (parent: its HEAD); the commit, or None
    when `cwd` is in no repository, or nothing changed since the last snapshot.

    Raises:
        WorktreeError: git failed on a repository that is there.
    """
    found = run_git(["rev-parse", "--show-toplevel"], cwd) if cwd.is_dir() else None
    if found is None or found.returncode != 0:
        return None
    top = Path(found.stdout.strip())
    head = run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], top)
    if head.returncode != 0:
        return None  # no commit to hang a snapshot on
    tree = working_tree(top)
    before = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{tree}}"], top)
    parent = head.stdout.strip()
    if before.returncode == 0 and before.stdout.strip() == tree:
        last = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^"], top).stdout.strip()
        if last == parent:
            return None  # the same files on the same commit: nothing new to keep
    env = dict(os.environ, **_IDENTITY)
    # The message names the session, whose name came from a task: no control characters.
    commit = _git(["commit-tree", tree, "-p", parent, "-m", for_git(message)], top, env).strip()
    _git(["update-ref", ref, commit], top)
    return commit


def restore(repository: Path, path: Path, branch: str, ref: str) -> str | None:
    """Make the worktree at `path` again from the snapshot at `ref` when its folder is gone:
    `branch` at the snapshot's parent, its files as in the snapshot. The snapshot's commit,
    or None when the folder is there or there is no snapshot.

    Raises:
        WorktreeError: git could not make it.
    """
    if path.exists():
        return None
    found = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repository)
    if found.returncode != 0:
        return None
    commit = found.stdout.strip()
    _git(["worktree", "prune"], repository)  # the lost folder's registration goes
    add = ["worktree", "add", "--quiet", "--force", "-B", branch, str(path), f"{commit}^"]
    _git(add, repository)
    _git(["read-tree", "-u", "--reset", commit], path)
    _git(["reset", "--quiet"], path)  # what the snapshot had beyond the branch: edits again
    return commit


__all__ = ["WIP_PREFIX", "restore", "snapshot", "wip_ref"]
