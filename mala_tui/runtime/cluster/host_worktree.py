"""A session's worktree on its host: made from the host's mirror, kept in the source.

In a worktree run each host makes the session's worktree itself (runtime.cluster.mirror),
from the last snapshot when the source has one (a host after a lost one). After every
turn the whole tree is kept at the session's snapshot ref (runtime.git.wip) and pushed to
the source, one snapshot at a time; as the session ends, its branch is pushed too. What
cannot be done is journaled as an error (where: the snapshot), and the session goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.runtime.cluster.mirror import Workspace, check_out, push
from mala_tui.runtime.git.wip import snapshot
from mala_tui.runtime.git.worktree import WorktreeError


class HostWorktree:
    """One session's worktree on its host, and the snapshots kept of it."""

    def __init__(
        self,
        space: Workspace,
        *,
        session: str,
        run_id: str,
        cwd: Path,
        emit: Callable[[ev.Event], object],
    ) -> None:
        """`cwd`: where the session works until its worktree is made; `emit`: records an
        event of the session's."""
        self.space = space
        self._session = session
        self._run_id = run_id
        self.cwd = cwd
        self._emit = emit
        self._snapshot_task: asyncio.Task[None] | None = None
        self._snapshot_again = False

    async def check_out(self, root: Path, worktrees: Path) -> Path | None:
        """Make the session's worktree under `worktrees` from the mirror under `root`; its
        folder, or None when it cannot be made."""
        space = self.space
        try:
            cwd, kept = await asyncio.to_thread(check_out, space, root, worktrees)
        except WorktreeError as exc:
            self._error(f"the worktree could not be made: {exc}")
            return None
        self.cwd = cwd
        if kept is not None:
            self._emit(
                ev.WorktreeSnapshot(
                    at=time.time(),
                    session=self._session,
                    ref=space.snapshot_ref,
                    commit=kept,
                    restored=True,
                )
            )
        return cwd

    def turn_ended(self) -> None:
        """A turn ended: keep the working tree (one snapshot at a time; one more after)."""
        if self._snapshot_task is not None and not self._snapshot_task.done():
            self._snapshot_again = True
            return
        self._snapshot_task = asyncio.create_task(self.keep_work(), name="snapshot")

    async def keep_work(self) -> None:
        """Keep the working tree now (after the one under way, if one is)."""
        space = self.space
        if self._snapshot_task is not None and self._snapshot_task is not asyncio.current_task():
            await asyncio.shield(self._snapshot_task)  # let the one under way finish first
        while True:
            self._snapshot_again = False
            message = f"mala-tui: work in progress of {self._session} (run {self._run_id})"
            try:
                commit = await asyncio.to_thread(self._snapshot, message)
            except WorktreeError as exc:
                self._error(str(exc))
                return
            if commit is not None:
                self._emit(
                    ev.WorktreeSnapshot(
                        at=time.time(),
                        session=self._session,
                        ref=space.snapshot_ref,
                        commit=commit,
                    )
                )
            if not self._snapshot_again:
                return

    def _snapshot(self, message: str) -> str | None:
        """Keep the working tree at the snapshot ref here, then in the source."""
        space = self.space
        commit = snapshot(self.cwd, space.snapshot_ref, message)
        if commit is not None:
            push(self.cwd, space.source, commit, space.snapshot_ref)
        return commit

    async def push_branch(self) -> None:
        """The session's branch (the agent's commits) to the source, as the session ends."""
        ref = f"refs/heads/{self.space.branch}"
        try:
            await asyncio.to_thread(push, self.cwd, self.space.source, ref, ref)
        except WorktreeError as exc:
            self._error(str(exc))

    def _error(self, message: str) -> None:
        self._emit(
            ev.ErrorRecorded(
                at=time.time(), session=self._session, where=ev.Where.SNAPSHOT, message=message
            )
        )
