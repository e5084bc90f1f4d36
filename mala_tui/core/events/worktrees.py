"""A worktree session's work: its worktree made, the files it changed, and how its
work was finished: landed on its base branch, pushed for a pull request, or discarded
with its worktree and branch.

A landing, a push or a discard is written once the git side is done, so a journal never
claims work landed that did not.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mala_tui.core.events.base import EventBase


class WorktreeCreated(EventBase):
    """The session works in its own git worktree, on its own branch."""

    type: Literal["worktree_created"] = "worktree_created"
    path: str
    branch: str
    base_commit: str
    repository: str
    base_branch: str = ""
    """The branch checked out where the run started, which landing merges into; "" for a
    detached HEAD (and in journals written before it was recorded)."""
    base: str = ""
    """The branch the run was told to start from (`--base`, or `base` on a task or a
    profile): the session started from its tip, and its diff is against the merge-base
    with it. "" when none was named (then the diff is against `base_commit`, as in
    journals written before it was recorded)."""


class ChangedFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    added: int | None
    """Lines added; None for a binary file."""
    deleted: int | None


class WorktreeChanged(EventBase):
    """What the session changed in its worktree since the commit it started from."""

    type: Literal["worktree_changed"] = "worktree_changed"
    files: tuple[ChangedFile, ...]
    error: str = ""
    """Why the changes could not be read (the worktree was removed, say); files is then empty."""
    commits_ahead: int | None = None
    """Commits on the session's branch not in its base branch (None: not measured)."""
    uncommitted: bool | None = None
    """Whether the worktree holds edits not committed (None: not measured)."""


class WorktreeLanded(EventBase):
    """The session's branch was merged into the branch the run started from."""

    type: Literal["worktree_landed"] = "worktree_landed"
    branch: str
    into: str
    """The base branch it landed on."""
    how: Literal["fast-forward", "merge commit"]
    commit: str
    """The base branch's new tip."""
    commits: int
    """Commits of the session's branch that landed (the commit of its edits included)."""
    committed: str = ""
    """The commit made of the edits the agent had left uncommitted; "" when there were none."""
    in_checkout: bool = False
    """Merged in the base branch's own clean checkout (else its ref moved without one)."""


class WorktreePushed(EventBase):
    """The session's branch was pushed for a pull request instead of being merged here."""

    type: Literal["worktree_pushed"] = "worktree_pushed"
    branch: str
    remote: str
    commit: str
    """The commit the remote branch now points to (read back from the remote)."""
    committed: str = ""
    """The commit made of the edits the agent had left uncommitted; "" when there were none."""
    pr_url: str = ""
    """The draft pull request `gh` opened; "" when `gh` was not there to open one."""
    pr_command: str = ""
    """The command that opens the pull request, printed when `gh` was not there."""


class WorktreeDiscarded(EventBase):
    """The session's worktree and branch were removed."""

    type: Literal["worktree_discarded"] = "worktree_discarded"
    branch: str
    path: str
    unmerged_commits: int = 0
    """Commits on the branch that were not in the base branch (dropped with `--force`)."""
    uncommitted: bool = False
    """The worktree held edits never committed (dropped with `--force`)."""
