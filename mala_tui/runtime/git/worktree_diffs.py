"""What a worktree session changed against its base: its files with the lines added and
deleted, and its full diff.

Both are read through a throwaway index (``worktree.scratch_index_git``): the worktree's
own index is never touched, so new files count as changes and nothing the agent staged (or
did not) is disturbed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mala_tui.runtime.git.worktree import WorktreeError, run_git, scratch_index_git


@dataclass(frozen=True)
class FileChange:
    path: str
    added: int | None
    """Lines added; None for a binary file."""
    deleted: int | None


def changes(path: Path, base_commit: str) -> tuple[FileChange, ...]:
    """Files changed in the worktree at `path` since `base_commit`, with lines added and deleted.

    Raises:
        WorktreeError: the worktree is gone or git cannot read it.
    """
    output = scratch_index_git(path, ["diff", "--cached", "--numstat", "-z", base_commit])
    found = []
    # -z: "added\tdeleted\tpath\0" per file; renames are off, so one path each.
    for record in output.split("\0"):
        if not record:
            continue
        added, deleted, name = record.split("\t", 2)
        found.append(
            FileChange(
                name,
                None if added == "-" else int(added),
                None if deleted == "-" else int(deleted),
            )
        )
    return tuple(found)


def compared_with(path: Path, base_commit: str, base: str = "") -> str:
    """What the worktree at `path` is diffed against: the merge-base of its HEAD with the
    branch `base` when one was named (a commit on that branch since is not the session's
    work), else `base_commit`, as before bases were recorded. When that branch is gone,
    `base_commit` too.

    Raises:
        WorktreeError: the worktree is gone or git cannot read it.
    """
    if not base:
        return base_commit
    if not path.is_dir():
        raise WorktreeError(f"worktree {path} is gone")
    done = run_git(["merge-base", f"refs/heads/{base}", "HEAD"], path)
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else base_commit


def diff_text(path: Path, base_commit: str) -> str:
    """The full diff of the worktree at `path` against `base_commit`, new files included.

    Raises:
        WorktreeError: the worktree is gone or git cannot read it.
    """
    return scratch_index_git(path, ["diff", "--cached", "--no-color", "--no-ext-diff", base_commit])
